// Scaled-dot-product attention with grouped-query heads, and its KV-cache
// step for autoregressive decoding.
//
// Shapes (axes by position; tags are free, the output takes q's):
//   q [b, s, hq, hd], k [b, t, hkv, hd], v [b, t, hkv, hdv] -> [b, s, hq, hdv]
// hq must be a multiple of hkv: query head h reads kv head h / (hq / hkv)
// (heads grouped consecutively, as Llama's repeat_kv). Scores and softmax are
// computed in f32 (f64 for f64 inputs); f16 / bf16 outputs are rounded once.
// A query row whose keys are all masked gives NaN (softmax of all -inf).
#pragma once

#include <optional>

#include "radix/trace/tensor.h"

namespace radix::nn {

struct AttentionOptions {
  // Bool, true = may attend: [s, t] (shared by the batch) or [b, s, t].
  std::optional<Tensor> mask;
  // Multiplies q . k; default 1 / sqrt(hd).
  std::optional<double> scale;
};

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opts = {});

// A KV-cache step's results (templated on the leaf, so a compiled function
// may return it: it comes back as CachedAttention<Buffer>).
template <class T = Tensor>
struct CachedAttention {
  T out;      // [b, s, hq, hdv]
  T cache_k;  // [b, max_t, hkv, hd], with the new keys written
  T cache_v;  // [b, max_t, hkv, hdv]
  template <class V> void visit(V&& v) { v("out", out); v("cache_k", cache_k); v("cache_v", cache_v); }
};

// How a KV cache is laid out in memory.
enum class CacheLayout {
  kTokenMajor,  // [b, max_t, hkv, hd]: one token's heads together (as k / v arrive)
  kHeadMajor,   // [b, hkv, max_t, hd]: one head's tokens together — attention
                // then reads the cache in place (no per-call transpose of it),
                // which a decode step over a long cache needs
};

struct CachedAttentionOptions {
  std::optional<double> scale;  // default 1 / sqrt(hd)
  bool causal = true;           // false: every new token sees all of [0, pos + s)
  int64_t window = 0;           // > 0: sliding window of that many keys (causal only)
  CacheLayout layout = CacheLayout::kTokenMajor;
};

// Writes k_new / v_new [b, s, hkv, *] into the caches (laid out as
// opts.layout says) at token `pos` (a
// rank-0 integer tensor) with dynamic_update_slice, then attends q [b, s,
// hq, hd] over the cache with a mask over all max_t entries (static shapes):
// query i (at position pos + i) sees key j iff j <= pos + i (causal) or
// j < pos + s (not causal). The caller keeps pos + s <= max_t
// (dynamic_update_slice clamps the write otherwise).
CachedAttention<> cached_attention(const Tensor& q, const Tensor& k_new, const Tensor& v_new, const Tensor& cache_k,
                                   const Tensor& cache_v, const Tensor& pos, const CachedAttentionOptions& opts = {});

}  // namespace radix::nn
