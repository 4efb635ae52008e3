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
  // Keys per step of the chunked (flash-decoding) path. > 0: attention reads
  // only the chunks holding the entries written so far, [0, pos + s) (with a
  // window, from the chunk of query 0's oldest visible key), one chunk per
  // step of a while loop, combined by an online softmax (running max, sum and
  // output, rescaled as the max grows); any layout, any max_t (a chunk longer
  // than max_t is cut to it; a last chunk past max_t is moved back and its
  // already-seen keys masked). < 0: the full path, every max_t entry under a
  // mask. 0 (default): chunks of kAutoChunk (kAutoChunkPrefill for s >= 64)
  // when max_t >= 2 * kAutoChunk, the full path otherwise. Measured on
  // stories110M's layer shape (12 heads of 64, max_t 1024, f32 cache, one
  // thread, Xeon): a decode step at pos 0 / 500 / 1023 takes 8 / 120 / 246 us
  // chunked against 240 us in full (head-major; token-major 30 / 300 / 600
  // against 1930, the full path transposing the whole cache); a 128-token
  // prefill at pos 0 / 896 takes 0.85 / 5.9 ms against 11 ms. At max_t 64
  // the full path is as fast (8 against 9 us).
  int64_t chunk = 0;
  static constexpr int64_t kAutoChunk = 64, kAutoChunkPrefill = 128;
};

// Writes k_new / v_new [b, s, hkv, *] into the caches (laid out as
// opts.layout says) at token `pos` (a rank-0 integer tensor) with
// dynamic_update_slice, then attends q [b, s, hq, hd] over the cache: query
// i (at position pos + i) sees key j iff j <= pos + i (causal; and
// j > pos + i - window with a window) or j < pos + s (not causal). Either
// over the written chunks only (opts.chunk; the default for caches of 128
// entries or more) or over all max_t entries under a mask. The caller keeps
// pos + s <= max_t (dynamic_update_slice clamps the write otherwise).
// The caches may hold another float type than k_new / v_new (a bf16 or f16
// cache under f32 activations: half the bytes every step reads, as
// llama.cpp's default f16 cache): the new entries are rounded to it as they
// are written, and what attention reads back is widened to the compute
// dtype (f32) inside the step.
CachedAttention<> cached_attention(const Tensor& q, const Tensor& k_new, const Tensor& v_new, const Tensor& cache_k,
                                   const Tensor& cache_v, const Tensor& pos, const CachedAttentionOptions& opts = {});

}  // namespace radix::nn
