#include "radix/nn/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "radix/api/control_flow.h"
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

// k or v with the cores' own tags: [b, t, kh, last], or [b, kh, t, last]
// when head-major (contractions match axes by tag, so either layout works;
// head-major is already [batch, t, d] and is read in place).
Tensor kv_tagged(const Tensor& t, bool head_major, const char* last) {
  return head_major ? t.with_tags({"b", "kh", "t", last}) : t.with_tags({"b", "t", "kh", last});
}

// The cores' output o [b, kh, s, g, e] as [b, s, hq, e] in q's dtype and tags.
Tensor heads_out(const Tensor& o, const Tensor& q) {
  Tensor r = merge_axes(transpose(o, {"b", "s", "kh", "g", "e"}), "kh", "g", "h");
  if (r.dtype() != q.dtype()) r = convert(r, q.dtype());
  return r.with_tags(q.shape().tags());
}

// k or v as a product with an operand in the compute dtype cd takes it: a
// 16-bit float under f32 as it is (dot widens it inside the contraction; a
// converted copy of each cache chunk had cost 28% of a stories110M decode
// layer at 400 positions with a bf16 cache), anything else converted.
Tensor for_product(const Tensor& t, DType cd) {
  return t.dtype() == cd || (cd == DType::kF32 && is_half_float(t.dtype())) ? t : convert(t, cd);
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
  Tensor kt = kv_tagged(for_product(k, cd), head_major, "d"), vt = kv_tagged(for_product(v, cd), head_major, "e");
  Tensor scores = dot(qt, kt, "d");  // [b, kh, s, g, t]
  scores = scores * scale.value_or(1.0 / std::sqrt(static_cast<double>(hd)));
  if (mask) {
    Tensor m = mask->rank() == 2 ? broadcast(mask->with_tags({"s", "t"}), scores.shape().with_dtype(DType::kBool), {"s", "t"})
                                 : broadcast(mask->with_tags({"b", "s", "t"}), scores.shape().with_dtype(DType::kBool),
                                             {"b", "s", "t"});
    scores = select(m, scores, full(scores.shape(), -std::numeric_limits<double>::infinity()));
  }
  Tensor p = softmax(scores, "t");
  return heads_out(dot(p, vt, "t"), q);  // [b, kh, s, g, e] -> [b, s, hq, e]
}

// The chunked (flash-decoding) core: q [b, s, hq, hd] over the caches' keys
// [first * chunk, pos + s) only, `chunk` keys per step of a while loop,
// combined by the online softmax: a running max m, sum l and output acc
// [b, kh, s, g, e], rescaled by exp(m_old - m_new) as the max grows. Each
// step reads one chunk with dynamic_slice (static size; head-major it is
// `chunk` contiguous rows of every head). A chunk that would run past max_t
// is moved back to end at max_t, and its keys below the chunk's nominal start
// (already seen) are masked.
Tensor attend_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos, int64_t chunk,
                      const CachedAttentionOptions& opts) {
  const bool head_major = opts.layout == CacheLayout::kHeadMajor;
  const int64_t b = q.shape().dim(0), s = q.shape().dim(1), hq = q.shape().dim(2), hd = q.shape().dim(3);
  const int64_t hkv = k.shape().dim(head_major ? 1 : 2), max_t = k.shape().dim(head_major ? 2 : 1);
  const int64_t hdv = v.shape().dim(3), g = hq / hkv;
  const DType cd = detail::compute_dtype(q.dtype());
  auto up = [&](const Tensor& t) { return t.dtype() == cd ? t : convert(t, cd); };
  chunk = std::min(chunk, max_t);
  // q in the contraction's order [b, kh, s, g, d], scaled once (outside the loop).
  Tensor qt = split_axis(up(q).with_tags({"b", "s", "h", "d"}), 2, {hkv, g}, {"kh", "g"});
  qt = transpose(qt * opts.scale.value_or(1.0 / std::sqrt(static_cast<double>(hd))), {"b", "kh", "s", "g", "d"});
  Tensor kt = kv_tagged(k, head_major, "d"), vt = kv_tagged(v, head_major, "e");

  // Positions in i64: the keys written are [0, end); query i sits at p + i.
  const Tensor p = detail::as_dtype(pos, DType::kI64);
  const Tensor end = p + static_cast<double>(s);
  const Tensor n_chunks = (end + static_cast<double>(chunk - 1)) / static_cast<double>(chunk);
  // A window starts at the first chunk holding query 0's oldest visible key.
  Tensor first = scalar(0, DType::kI64);
  if (opts.causal && opts.window > 0)
    first = maximum(p - static_cast<double>(opts.window - 1), first) / static_cast<double>(chunk);
  const Shape qk(DType::kI64, {s, chunk}, {"s", "t"});
  const Tensor qpos = broadcast(iota(s, DType::kI64) + p, qk, {0});  // [s, chunk]
  const Tensor kiota = iota(chunk, DType::kI64);

  const Shape row(cd, {b, hkv, s, g}, {"b", "kh", "s", "g"});
  // The running max starts at the lowest finite value, not -inf: a row whose
  // first chunks are all masked then keeps l = acc = 0 (exp(lowest - m) = 0,
  // never exp(-inf + inf)). A row with no visible key ends 0 / 0 = NaN, as
  // the full softmax gives.
  auto init = std::make_tuple(first, full(row, cd == DType::kF64 ? std::numeric_limits<double>::lowest()
                                                          : std::numeric_limits<float>::lowest()),
                              zeros(row), zeros(Shape(cd, {b, hkv, s, g, hdv}, {"b", "kh", "s", "g", "e"})));
  const auto fin = while_loop(
      [&](const auto& st) { return lt(std::get<0>(st), n_chunks); },
      [&](const auto& st) {
        const auto& [c, m, l, acc] = st;
        const Tensor lo = c * static_cast<double>(chunk);
        const Tensor start = minimum(lo, scalar(static_cast<double>(max_t - chunk), DType::kI64));
        Tensor kc = for_product(dynamic_slice(kt, {{"t", start, chunk}}), cd);
        Tensor vc = for_product(dynamic_slice(vt, {{"t", start, chunk}}), cd);
        // Key jj of the chunk is at position start + jj; keys below lo were
        // seen by the previous step (a chunk moved back from max_t).
        const Tensor kpos = broadcast(kiota + start, qk, {1});  // [s, chunk]
        Tensor vis = ge(kpos, lo);
        if (opts.causal) {
          vis = logical_and(vis, le(kpos, qpos));
          if (opts.window > 0) vis = logical_and(vis, gt(kpos, qpos - static_cast<double>(opts.window)));
        } else {
          vis = logical_and(vis, lt(kpos, end));
        }
        Tensor sc = dot(qt, kc, "d");  // [b, kh, s, g, t]
        sc = select(broadcast(vis, sc.shape().with_dtype(DType::kBool), {"s", "t"}), sc,
                    full(sc.shape(), -std::numeric_limits<double>::infinity()));
        Tensor m_new = maximum(m, reduce_max(sc, {"t"}));
        Tensor pr = exp(sc - m_new);
        Tensor alpha = exp(m - m_new);
        Tensor l_new = l * alpha + reduce_sum(pr, {"t"});
        Tensor acc_new = acc * alpha + dot(pr, vc, "t");  // [b, kh, s, g, e]
        return std::make_tuple(c + 1.0, m_new, l_new, acc_new);
      },
      init);
  return heads_out(std::get<3>(fin) / std::get<2>(fin), q);
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
  req(is_float(cache_k.dtype()) && is_float(cache_v.dtype()), "caches must be float (k / v are rounded to their dtype)");
  const Shape &ks = k_new.shape(), &vs = v_new.shape(), &ck = cache_k.shape(), &cv = cache_v.shape();
  req(ck.dim(0) == ks.dim(0) && ck.dim(h_axis) == ks.dim(2) && ck.dim(3) == ks.dim(3) && cv.dim(0) == vs.dim(0) &&
          cv.dim(h_axis) == vs.dim(2) && cv.dim(3) == vs.dim(3) && ck.dim(t_axis) == cv.dim(t_axis),
      std::string("caches must be ") + layout + " matching k / v");
  req(ks.dim(1) <= ck.dim(t_axis), "more new tokens than cache entries");
  req(opts.window >= 0, "window must be >= 0");
  req(opts.causal || opts.window == 0, "a window needs causal");
  const int64_t s = q.shape().dim(1), max_t = ck.dim(t_axis);
  // Written by position (the t axis), so cache tags need not match k / v's;
  // dynamic_update_slice clamps the start (any integer dtype).
  // Head-major: the s new tokens are transposed to [b, hkv, s, *] first
  // (s x hkv x hd values, not the cache).
  // A cache in another float type (bf16 / f16: half the bytes each step
  // reads) takes the new entries rounded to it; attention widens what it
  // reads back to the compute dtype.
  auto to_cache = [&](const Tensor& x, const Shape& c) {
    Tensor y = head_major ? transpose(x, {0, 2, 1, 3}) : x;
    return (y.dtype() == c.dtype() ? y : convert(y, c.dtype())).with_tags(c.tags());
  };
  Tensor nk = dynamic_update_slice(cache_k, to_cache(k_new, ck), {{t_axis, pos}});
  Tensor nv = dynamic_update_slice(cache_v, to_cache(v_new, cv), {{t_axis, pos}});
  // The chunked path where it pays (CachedAttentionOptions::chunk).
  using O = CachedAttentionOptions;
  const int64_t chunk = opts.chunk != 0             ? std::max<int64_t>(opts.chunk, 0)
                        : max_t >= 2 * O::kAutoChunk ? (s >= 64 ? O::kAutoChunkPrefill : O::kAutoChunk)
                                                     : 0;
  if (chunk > 0) return {attend_chunked(q, nk, nv, pos, chunk, opts), nk, nv};
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
