#include "radix/nn/mask.h"

#include "radix/nn/check.h"
#include "radix/trace/ops.h"

namespace radix::nn {

Tensor causal_mask(int64_t q, int64_t k, int64_t offset, Tag q_tag, Tag k_tag) {
  if (q < 1 || k < 1) throw TraceError("nn::causal_mask: q and k must be >= 1, got " + std::to_string(q) + ", " +
                                       std::to_string(k));
  return tril_mask(q, k, offset, q_tag, k_tag);
}

Tensor sliding_window_mask(int64_t q, int64_t k, int64_t window, int64_t offset, Tag q_tag, Tag k_tag) {
  if (q < 1 || k < 1 || window < 1)
    throw TraceError("nn::sliding_window_mask: q, k and window must be >= 1, got " + std::to_string(q) + ", " +
                     std::to_string(k) + ", " + std::to_string(window));
  return logical_and(tril_mask(q, k, offset, q_tag, k_tag), triu_mask(q, k, offset - window + 1, q_tag, k_tag));
}

Tensor causal_mask(int64_t q, int64_t k, const Tensor& offset, int64_t window, Tag q_tag, Tag k_tag) {
  detail::require(offset.rank() == 0 && is_integer(offset.dtype()), "nn::causal_mask", {&offset},
                  "offset must be a rank-0 integer tensor");
  if (q < 1 || k < 1 || window < 0)
    throw TraceError("nn::causal_mask: q, k must be >= 1 and window >= 0, got " + std::to_string(q) + ", " +
                     std::to_string(k) + ", " + std::to_string(window));
  // Positions in i64 so offset + i never wraps for narrow offset dtypes.
  const Shape qk(DType::kI64, {q, k}, {q_tag, k_tag});
  Tensor qpos = broadcast(iota(q, DType::kI64) + detail::as_dtype(offset, DType::kI64), qk, {0});
  Tensor kpos = broadcast(iota(k, DType::kI64), qk, {1});
  Tensor m = le(kpos, qpos);
  if (window > 0) m = logical_and(m, gt(kpos, qpos - static_cast<double>(window)));
  return m;
}

}  // namespace radix::nn
