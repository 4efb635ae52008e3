#include "radix/nn/sampler.h"

#include <limits>

#include "radix/nn/check.h"
#include "radix/trace/ops.h"

namespace radix::nn {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

int check_logits(const char* layer, const Tensor& logits, const Axis& axis, const Tensor* state = nullptr) {
  auto req = [&](bool ok, const std::string& why) { detail::require(ok, layer, {&logits, state}, why); };
  req(is_float(logits.dtype()), "logits must be a float tensor");
  std::optional<int> ax = logits.shape().find_axis(axis);
  req(ax.has_value(), "no vocabulary axis " + axis.to_string());
  if (state) req(state->shape().same_dims(rng_state_shape()) && state->dtype() == DType::kU32, "state must be u32[4]");
  return *ax;
}

}  // namespace

Tensor greedy(const Tensor& logits, const Axis& axis) {
  const int ax = check_logits("nn::greedy", logits, axis);
  return argmax(logits, ax, DType::kI32);
}

Tensor filter_logits(const Tensor& logits, const SamplerOptions& opts, const Axis& axis) {
  const int ax = check_logits("nn::filter_logits", logits, axis);
  const int64_t v = logits.shape().dim(ax);
  auto req = [&](bool ok, const std::string& why) { detail::require(ok, "nn::filter_logits", {&logits}, why); };
  req(opts.temperature > 0, "temperature must be > 0 (0 is greedy: use nn::greedy or nn::sample)");
  req(opts.top_k >= 0, "top_k must be >= 0");
  req(opts.top_p > 0 && opts.top_p <= 1, "top_p must be in (0, 1]");
  const DType cd = logits.dtype() == DType::kF64 ? DType::kF64 : DType::kF32;
  Tensor l = logits.dtype() == cd ? logits : convert(logits, cd);
  if (opts.temperature != 1.0) l = l / opts.temperature;
  const Tensor ninf = scalar(kNegInf, cd);
  if (opts.top_k > 0 && opts.top_k < v) {
    // Threshold at the k-th largest logit (ties with it survive).
    Tensor kth = slice(top_k(l, opts.top_k, ax).values, ax, opts.top_k - 1, opts.top_k);
    l = select(ge(l, broadcast_to(kth, l.shape())), l, ninf);
  }
  if (opts.top_p < 1.0) {
    // Sorted descending, token r is in the nucleus iff the mass before it is
    // < p (so the first token always is). The nucleus is a prefix of the
    // sorted order, so it is "prob >= the smallest kept prob": no scatter.
    Tensor p = softmax(l, ax);
    Tensor sorted = sort(p, ax, SortOptions{.descending = true});
    Tensor before = cumsum(sorted, ax, ScanOptions{.exclusive = true});
    Tensor kept = select(lt(before, scalar(opts.top_p, cd)), sorted, scalar(std::numeric_limits<double>::infinity(), cd));
    Tensor thr = reduce_min(kept, {ax}, {.keep_dims = true});
    l = select(ge(p, broadcast_to(thr, p.shape())), l, ninf);
  }
  return l;
}

RandomResult<> sample(const Tensor& state, const Tensor& logits, const SamplerOptions& opts, const Axis& axis) {
  const int ax = check_logits("nn::sample", logits, axis, &state);
  if (opts.temperature == 0) return {argmax(logits, ax, DType::kI32), state};
  return categorical(state, filter_logits(logits, opts, ax), ax);
}

}  // namespace radix::nn
