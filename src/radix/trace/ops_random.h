// Random numbers (see ops.h for the conventions every op follows), in the
// style of JAX: explicit state in, samples and the advanced state out.
//
// The generator is Philox 4x32-10 (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC'11), counter based, so every element is computed
// independently inside one linalg.generic and the stream is the same on every
// schedule ISA and with vectorization off.
//
// State: a u32[4] tensor {key0, key1, counter_lo, counter_hi}. A draw of N
// elements gives element i (row-major linear index) the Philox block of
// counter {lo32(c + i), hi32(c + i), 0, 0} under key {key0, key1}, where
// c = counter_hi * 2^32 + counter_lo; the returned state has c + N (mod 2^64).
// Each element uses one block, whatever its dtype:
//  * 32-bit draws use word 0 of the block, 64-bit draws words 0 | 1 << 32;
//  * uniform_int uses two words (≤ 32-bit dtypes) or all four (64-bit);
//  * normal uses words 0..1 (f16 / bf16 / f32) or 0..3 (f64).
// So draws never overlap as long as the state is threaded through.
#pragma once

#include <array>
#include <cstdint>

#include "radix/core/shape.h"
#include "radix/trace/tensor.h"

namespace radix {

// ---------------------------------------------------------------- state
// u32[4], the shape of every RNG state tensor.
Shape rng_state_shape();
// Host side: the state for `seed`: key = {lo32(seed), hi32(seed)}, counter 0.
// Distinct seeds give distinct keys, hence independent streams.
std::array<uint32_t, 4> rng_state_from_seed(uint64_t seed);
// Traced: the same state as a constant u32[4].
Tensor rng_from_seed(uint64_t seed);
// Traced: the state for a run-time seed, a rank-0 integer tensor (u64 or
// any other integer dtype, sign- or zero-extended to 64 bits first).
Tensor rng_from_seed(const Tensor& seed);

// A draw: the samples and the state to use for the next draw. Templated on
// its leaf like a model, so a compiled function may return it directly (it
// comes back as RandomResult<Buffer>).
template <class T = Tensor>
struct RandomResult {
  T samples;
  T state;
  template <class V> void visit(V&& v) {
    v("samples", samples);
    v("state", state);
  }
};

// ---------------------------------------------------------------- draws
// Each takes the state and the result Shape (dtype, dims and tags).

// Raw Philox bits; integer dtypes (8 / 16-bit take the low bits of word 0).
RandomResult<> random_bits(const Tensor& state, const Shape& shape);

// Uniform floats in [lo, hi) for f16 / bf16 / f32 / f64. The unit value is
// built from the top m random bits (m = the dtype's mantissa width: 10, 7,
// 23, 52) as k * 2^-m, scaled to lo + (hi - lo) * u (in f32 for f16 / bf16),
// rounded to the dtype and clamped to [lo, the largest value below hi], so
// every value is in range. lo and hi are first rounded to the dtype and must
// stay distinct; hi - lo must be finite.
RandomResult<> uniform(const Tensor& state, const Shape& shape, double lo = 0.0, double hi = 1.0);

// Uniform integers in [lo, hi) for integer dtypes; lo and hi - 1 must fit
// the dtype. Method: multiply-shift (offset = floor(x * span / 2^b) with
// span = hi - lo, no rejection) over b = 64 random bits for ≤ 32-bit dtypes
// and b = 128 for 64-bit ones. Each value's probability is within a relative
// span / 2^b of 1 / span: at most 2^-32 (≤ 32-bit) or 2^-64 (64-bit).
RandomResult<> uniform_int(const Tensor& state, const Shape& shape, int64_t lo, int64_t hi);

// Standard normal (Box-Muller, cosine branch, from two open-interval
// uniforms), scaled to mean + stddev * z. As u1 >= 2^-24 (f32) / 2^-53 (f64),
// |z| <= 5.8 / 8.6: tails beyond that are cut (probability < 1e-8 / 1e-17). Floats; f16 / bf16 are computed in
// f32 and rounded once. stddev must be > 0.
RandomResult<> normal(const Tensor& state, const Shape& shape, double mean = 0.0, double stddev = 1.0);

// Standard Gumbel: -log(-log(u)), u = (k + 1/2) * 2^-m in the open interval
// (0, 1) (m = 23 for f16 / bf16 / f32, 52 for f64), so always finite.
RandomResult<> gumbel(const Tensor& state, const Shape& shape);

// True with probability p in [0, 1]: word 0 < round(p * 2^32) (exact for
// p = 0 and p = 1, otherwise p rounded to a multiple of 2^-32). The shape's
// dtype must be bool.
RandomResult<> bernoulli(const Tensor& state, double p, const Shape& shape);

// One sample per slice of `logits` along `axis` (index or tag): i32 indices
// in [0, dim(axis)), drawn with probabilities softmax(logits) by the
// Gumbel-max trick (argmax of logits + gumbel noise, the first index on
// ties). The samples have logits' shape without `axis` (tags kept); the state
// advances by logits.count(). logits: any float dtype.
RandomResult<> categorical(const Tensor& state, const Tensor& logits, const Axis& axis);

// ---------------------------------------------------------------- raw block
// The Philox 4x32-10 block function: counters u32[..., 4] (one 128-bit
// counter per row, word 0 first) under key u32[2] gives u32[..., 4].
Tensor philox4x32(const Tensor& counters, const Tensor& key);

// ---------------------------------------------------------------- shape inference
// Pure functions (no MLIR): the samples' shape from operand shapes and
// attributes, or a TraceError naming the op and every shape. The state
// result always has rng_state_shape().
namespace infer {
Shape rng_from_seed(const Shape& seed);
Shape random_bits(const Shape& state, const Shape& shape);
Shape uniform(const Shape& state, const Shape& shape, double lo, double hi);
Shape uniform_int(const Shape& state, const Shape& shape, int64_t lo, int64_t hi);
Shape normal(const Shape& state, const Shape& shape, double mean, double stddev);
Shape gumbel(const Shape& state, const Shape& shape);
Shape bernoulli(const Shape& state, double p, const Shape& shape);
Shape categorical(const Shape& state, const Shape& logits, const Axis& axis);
Shape philox4x32(const Shape& counters, const Shape& key);
}  // namespace infer

}  // namespace radix
