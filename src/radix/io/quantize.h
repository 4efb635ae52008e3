// Host-side quantization of f32 weight matrices into the formats that
// quantized_matmul (trace/ops_quant.h) reads, and GGUF's Q8_0 / Q4_0 blocks
// split into those arrays without dequantizing. The rounding follows
// llama.cpp's reference quantizers, so the Q formats hold the same numbers a
// GGUF file made by llama.cpp would.
//
// Every matrix is W[n, k], row-major ([out, in]); k must be a multiple of 32
// for the Q formats. Scales of the Q formats are f16 bit patterns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "radix/core/quant_format.h"
#include "radix/core/shape.h"
#include "radix/core/status.h"

namespace radix::io {

struct QuantizedMatrix {
  Shape values_shape, scales_shape;  // as quantized_matmul takes them
  std::vector<std::byte> values;     // i8 [n, k], u8 [n, k / 2] or an x16 format's
  std::vector<std::byte> scales;     // f32 [n], f16 [n, k / 32] or an x16 format's
};

// Symmetric int8 per output row: scale = max |w| / 127, q = round(w / scale).
QuantizedMatrix quantize_int8(std::span<const float> w, int64_t n, int64_t k);
// GGUF Q8_0: per block of 32, d = max |w| / 127 (f16), q = round(w / d).
Result<QuantizedMatrix> quantize_q8_0(std::span<const float> w, int64_t n, int64_t k);
// GGUF Q4_0: per block of 32, d = (the value of largest magnitude) / -8 (f16),
// q = min(15, trunc(w / d + 8.5)); bytes hold elements j and j + 16.
Result<QuantizedMatrix> quantize_q4_0(std::span<const float> w, int64_t n, int64_t k);

// The one of the three above that format f names (Q4_0x16 / Q8_0x16: Q4_0 /
// Q8_0, then interleave_rows).
Result<QuantizedMatrix> quantize(QuantFormat f, std::span<const float> w, int64_t n, int64_t k);

// GGUF blocks of a [n, k] tensor (Q8_0: 34 bytes, Q4_0: 18 bytes per block
// of 32, rows in order) split into values and scales. Errors name the sizes
// when `blocks` does not hold exactly n * k / 32 blocks.
Result<QuantizedMatrix> split_gguf_q8_0(std::span<const std::byte> blocks, int64_t n, int64_t k);
Result<QuantizedMatrix> split_gguf_q4_0(std::span<const std::byte> blocks, int64_t n, int64_t k);

// A Q4_0 or Q8_0 matrix (quantize_*, split_gguf_*) as Q4_0x16 / Q8_0x16
// (trace/ops_quant.h): the same bytes and scales, 16 rows interleaved.
// kInvalidArgument naming the shape when `q` is neither or n is not a
// multiple of 16.
Result<QuantizedMatrix> interleave_rows(const QuantizedMatrix& q);

// W as f32 [n, k], computed on the host (the reference the tests hold
// quantized_matmul to).
std::vector<float> dequantize(const QuantizedMatrix& m);

// Activations x (a multiple of 32 values) as quantized_matmul's default
// QuantizedActivations::kInt8Blocks sees them, on the host: per block of
// 32, d = max |x| / 127 and x -> round(x / d) * d (halves away from zero;
// 0 where d is 0). With dequantize(), the reference for such products.
std::vector<float> round_to_int8_blocks(std::span<const float> x);

}  // namespace radix::io
