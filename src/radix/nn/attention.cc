#include "radix/nn/attention.h"

#include <cmath>
#include <limits>

#include "radix/nn/check.h"
#include "radix/nn/mask.h"
#include "radix/trace/ops.h"

namespace radix::nn {
namespace {

void check_qkv(const char* layer, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask) {
  auto req = [&](bool ok, const std::string& why) { detail::require(ok, layer, {&q, &k, &v, mask}, why); };
  req(q.rank() == 4 && k.rank() == 4 && v.rank() == 4, "q, k, v must be rank 4: [b, s, hq, hd], [b, t, hkv, hd], [b, t, hkv, hdv]");
  req(is_float(q.dtype()) && q.dtype() == k.dtype() && q.dtype() == v.dtype(), "q, k, v must share one float dtype");
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  req(qs.dim(0) == ks.dim(0) && ks.dim(0) == vs.dim(0), "batch sizes differ");
  req(ks.dim(1) == vs.dim(1) && ks.dim(2) == vs.dim(2), "k and v must agree on t and hkv");
  req(qs.dim(3) == ks.dim(3), "q and k head dims differ");
  req(ks.dim(2) > 0 && qs.dim(2) % ks.dim(2) == 0, "hq must be a multiple of hkv");
  if (mask) {
    req(mask->dtype() == DType::kBool, "mask must be bool");
    req((mask->rank() == 2 && mask->shape().dim(0) == qs.dim(1) && mask->shape().dim(1) == ks.dim(1)) ||
            (mask->rank() == 3 && mask->shape().dim(0) == qs.dim(0) && mask->shape().dim(1) == qs.dim(1) &&
             mask->shape().dim(2) == ks.dim(1)),
        "mask must be [s, t] or [b, s, t]");
  }
}

// The attention core on checked operands.
// k / v are [b, t, hkv, *], or [b, hkv, t, *] when head_major.
Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, std::optional<double> scale,
              bool head_major = false) {
  const int64_t hq = q.shape().dim(2), hkv = k.shape().dim(head_major ? 1 : 2), hd = q.shape().dim(3);
  const DType cd = detail::compute_dtype(q.dtype());
  auto up = [&](const Tensor& t) { return t.dtype() == cd ? t : convert(t, cd); };
  // Own tags internally, so any caller tags (or none) work: q splits its heads
  // into (kv head, group) so each group contracts with its kv head.
  Tensor qt = split_axis(up(q).with_tags({"b", "s", "h", "d"}), 2, {hkv, hq / hkv}, {"kh", "g"});  // [b,s,kh,g,d]
  // Contractions match axes by tag, so either layout works; head-major is
  // already [batch, t, d] and is read in place.
  Tensor kt = head_major ? up(k).with_tags({"b", "kh", "t", "d"}) : up(k).with_tags({"b", "t", "kh", "d"});
  Tensor vt = head_major ? up(v).with_tags({"b", "kh", "t", "e"}) : up(v).with_tags({"b", "t", "kh", "e"});
  Tensor scores = dot(qt, kt, "d");  // [b, kh, s, g, t]
  scores = scores * scale.value_or(1.0 / std::sqrt(static_cast<double>(hd)));
  if (mask) {
    Tensor m = mask->rank() == 2 ? broadcast(mask->with_tags({"s", "t"}), scores.shape().with_dtype(DType::kBool), {"s", "t"})
                                 : broadcast(mask->with_tags({"b", "s", "t"}), scores.shape().with_dtype(DType::kBool),
                                             {"b", "s", "t"});
    scores = select(m, scores, full(scores.shape(), -std::numeric_limits<double>::infinity()));
  }
  Tensor p = softmax(scores, "t");
  Tensor o = dot(p, vt, "t");                         // [b, kh, s, g, e]
  o = transpose(o, {"b", "s", "kh", "g", "e"});
  o = merge_axes(o, "kh", "g", "h");                  // [b, s, hq, e]
  if (cd != q.dtype()) o = convert(o, q.dtype());
  return o.with_tags(q.shape().tags());
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opts) {
  const Tensor* mask = opts.mask ? &*opts.mask : nullptr;
  check_qkv("nn::attention", q, k, v, mask);
  return attend(q, k, v, mask, opts.scale);
}

CachedAttention<> cached_attention(const Tensor& q, const Tensor& k_new, const Tensor& v_new, const Tensor& cache_k,
                                   const Tensor& cache_v, const Tensor& pos, const CachedAttentionOptions& opts) {
  const char* layer = "nn::cached_attention";
  auto req = [&](bool ok, const std::string& why) {
    detail::require(ok, layer, {&q, &k_new, &v_new, &cache_k, &cache_v, &pos}, why);
  };
  check_qkv(layer, q, k_new, v_new, nullptr);
  req(pos.rank() == 0 && is_integer(pos.dtype()), "pos must be a rank-0 integer tensor");
  const bool head_major = opts.layout == CacheLayout::kHeadMajor;
  const char* layout = head_major ? "[b, hkv, max_t, hd]" : "[b, max_t, hkv, hd]";
  const int t_axis = head_major ? 2 : 1, h_axis = head_major ? 1 : 2;
  req(cache_k.rank() == 4 && cache_v.rank() == 4, std::string("caches must be rank 4: ") + layout);
  req(cache_k.dtype() == k_new.dtype() && cache_v.dtype() == v_new.dtype(), "caches must have k / v's dtype");
  const Shape &ks = k_new.shape(), &vs = v_new.shape(), &ck = cache_k.shape(), &cv = cache_v.shape();
  req(ck.dim(0) == ks.dim(0) && ck.dim(h_axis) == ks.dim(2) && ck.dim(3) == ks.dim(3) && cv.dim(0) == vs.dim(0) &&
          cv.dim(h_axis) == vs.dim(2) && cv.dim(3) == vs.dim(3) && ck.dim(t_axis) == cv.dim(t_axis),
      std::string("caches must be ") + layout + " matching k / v");
  req(ks.dim(1) <= ck.dim(t_axis), "more new tokens than cache entries");
  req(opts.window >= 0, "window must be >= 0");
  req(opts.causal || opts.window == 0, "a window needs causal");
  const int64_t s = q.shape().dim(1), max_t = ck.dim(t_axis);
  // Written by position (axis 1), so cache tags need not match k / v's.
  // dynamic_update_slice emits an invalid arith.extsi i64 -> i64 for an i64
  // start (ops_index.cc), so an i64 pos goes in as i32, clamped first (the
  // op clamps anyway, so this keeps its result).
  Tensor start = pos.dtype() == DType::kI64 ? convert(clamp(pos, 0.0, static_cast<double>(max_t)), DType::kI32) : pos;
  // Head-major: the s new tokens are transposed to [b, hkv, s, *] first
  // (s x hkv x hd values, not the cache).
  auto to_layout = [&](const Tensor& x) { return head_major ? transpose(x, {0, 2, 1, 3}) : x; };
  Tensor nk = dynamic_update_slice(cache_k, to_layout(k_new).with_tags(ck.tags()), {{t_axis, start}});
  Tensor nv = dynamic_update_slice(cache_v, to_layout(v_new).with_tags(cv.tags()), {{t_axis, start}});
  Tensor mask;
  if (opts.causal) {
    mask = causal_mask(s, max_t, pos, opts.window);
  } else {
    // Every new token sees the written entries [0, pos + s).
    const Shape qk(DType::kI64, {s, max_t}, {"s", "t"});
    mask = lt(broadcast(iota(max_t, DType::kI64), qk, {1}), detail::as_dtype(pos, DType::kI64) + static_cast<double>(s));
  }
  return {attend(q, nk, nv, &mask, opts.scale, head_major), nk, nv};
}

}  // namespace radix::nn
