// Contractions with quantized weight matrices, read as they are stored:
// the integers are widened and scaled inside the product (in registers),
// never expanded into an f32 copy. A decode step reads a quarter (int8,
// Q8_0) or about an eighth (Q4_0) of the bytes of f32 weights.
//
// A weight matrix W[n, k] (stored [out, in], as Llama checkpoints and GGUF
// files hold it) is given by two tensors, values and scales, in one of
// three formats, told apart by their dtypes and shapes:
//
//   int8 per channel  values i8 [n, k]      scales f32 [n]
//                     W[r, c] = values[r, c] * scales[r]
//   Q8_0 (GGUF)       values i8 [n, k]      scales f16 [n, k / 32]
//                     W[r, c] = values[r, c] * scales[r, c / 32]
//   Q4_0 (GGUF)       values u8 [n, k / 2]  scales f16 [n, k / 32]
//                     in block b of row r, byte j (0..15) of the block's 16
//                     holds element 32b + j in its low nibble and 32b + j + 16
//                     in its high nibble: W = (nibble - 8) * scales[r, b]
//   Q4_0x16           values u8 [n/16, k/32, 4, 16, 4]  scales f16 [n/16, k/32, 16]
//                     Q4_0 with 16 rows interleaved (n a multiple of 16):
//                     values[R, b, g, i, t] is byte 4g + t of block b of row
//                     16R + i, scales[R, b, i] that block's scale. Each 64
//                     bytes are 4 bytes of 16 rows side by side, the form
//                     in which the CPU's integer kernels put W's rows in the
//                     lanes of their accumulators (decode and prompts, with
//                     integer activations) without rearranging them per
//                     call (io::interleave_rows makes it).
//   Q8_0x16           values i8 [n/16, k/32, 8, 16, 4]  scales f16 [n/16, k/32, 16]
//                     Q8_0 with 16 rows interleaved the same way: values[R, b,
//                     g, i, t] is element 32b + 4g + t of row 16R + i.
//
// The Q formats are GGUF's blocks with the scale of each block of 32 moved
// to its own array (io/quantize.h splits GGUF blocks and quantizes f32).
#pragma once

#include "radix/core/quant_format.h"
#include "radix/trace/tensor.h"

namespace radix {

// The format `values` / `scales` describe; a TraceError naming both shapes
// when they match none (k must be a multiple of 32 for Q8_0 / Q4_0).
QuantFormat quant_format(const Tensor& values, const Tensor& scales);

// How a quantized product that reads W in registers (see quantized_matmul)
// treats its f32 activations x.
enum class QuantizedActivations {
  // x quantized to int8 in blocks of 32 along k, as llama.cpp does for its
  // Q8_0 / Q4_0 products: d = max|x| / 127 per block, q = round(x / d)
  // (halves away from zero). The products are then integer dot products of
  // 32 bytes (AVX2 vpmaddubsw / AVX-512 and AVX VNNI vpdpbusd) scaled once
  // per block: 2-3x the weights per second of widening them to f32. Adds
  // x's rounding error, at most d / 2 per element (about 0.4% of the
  // block's largest magnitude). Needs k a multiple of 32 (otherwise, with
  // int8 per-channel weights, x stays f32).
  kInt8Blocks,
  // x kept f32; the weights widened to f32 in registers (exact up to f32
  // rounding: the reference for the above).
  kF32,
};
struct QuantizedMatmulOptions {
  QuantizedActivations activations = QuantizedActivations::kInt8Blocks;
};

// x[..., k] (f32) · Wᵀ -> [..., n] f32. The weights are read as they are
// stored and widened in registers (x as options.activations says) for
// decode steps (at most kQuantizedDotMaxRows rows) and, with integer
// activations, for prompts whose k is at least kQuantizedPromptMinK, or of
// any k (a multiple of 32) for Q4_0 with n a multiple of 8 and Q8_0 with n
// a multiple of 16. On AVX2 a block's integer dot product costs fewer
// instructions than f32 multiply-adds, but each tile also pays for its
// scales and sums, which a short k (stories15M's 288) does not repay for
// byte weights in the row-per-accumulator form; Q4_0 prompts with whole
// tiles of 8 weight rows (and Q8_0 ones with tiles of 16) run a kernel
// whose accumulators' lanes are weight rows (the CPU backend's int8
// kernels, for k up to 32768 / 16384), which does repay it (Q8_0 at k =
// 288: 2.8x dequantizing with 512-bit VNNI on Zen 5, 0.90-1.04x with Zen 3's
// AVX2 code run there).
// The x16 formats read W as it is stored at any row count: with integer
// activations, and with f32 ones (decode rows widen W's interleaved bytes
// to f32 in registers; prompts dequantize one 16-row group at a time into
// a stack buffer that every row of x then reads).
// So do plain Q4_0 rows with f32 activations from kQuantizedF32GroupMinRows
// rows of x on and plain Q8_0 rows past kQuantizedDotMaxRows (below that
// their decode tiles are faster), where n is a multiple of 16: their rows,
// 16 at a time, are dequantized into the x16 lane order on the stack.
// Other prompts dequantize all of W once per call to f32 and run the f32
// matmul schedule (x stays f32).
Tensor quantized_matmul(const Tensor& x, const Tensor& values, const Tensor& scales,
                        const QuantizedMatmulOptions& options = {});
inline constexpr int64_t kQuantizedDotMaxRows = 16;
inline constexpr int64_t kQuantizedPromptMinK = 512;
inline constexpr int64_t kQuantizedF32GroupMinRows = 3;
// Whether a product of `rows` rows by W[n, k] in `format` reads W in
// registers (true) or dequantizes it first (false), as above.
bool quantized_matmul_in_registers(QuantFormat format, int64_t rows, int64_t n, int64_t k,
                                   const QuantizedMatmulOptions& options = {});

// W as f32 [n, k].
Tensor dequantize(const Tensor& values, const Tensor& scales);

}  // namespace radix
