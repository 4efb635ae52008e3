// The quantized weight formats (trace/ops_quant.h reads them, io/quantize.h
// writes them): which tensors hold a [n, k] matrix in each, and their names.
// The layouts are described in trace/ops_quant.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "radix/core/shape.h"

namespace radix {

// kQ4_0x16 / kQ8_0x16: Q4_0's / Q8_0's numbers with 16 weight rows
// interleaved (n a multiple of 16), the layout the CPU backend's integer
// kernels read without rearranging (llama.cpp repacks Q4_0 the same way at
// load time).
enum class QuantFormat { kInt8PerChannel, kQ8_0, kQ4_0, kQ4_0x16, kQ8_0x16 };

// Rows interleaved by kQ4_0x16 and kQ8_0x16.
inline constexpr int64_t kQuantRowGroup = 16;

// GGUF's Q8_0 / Q4_0 block length: each block of this many values along k
// shares one scale.
inline constexpr int64_t kQuantBlock = 32;

// The shapes of the two tensors holding a [n, k] matrix in format f:
// values i8 [n, k] (Q4_0: u8 [n, k / 2]; Q4_0x16: u8 [n/16, k/32, 4, 16, 4];
// Q8_0x16: i8 [n/16, k/32, 8, 16, 4]); scales f32 [n] (int8 per channel),
// f16 [n, k / 32] (Q8_0, Q4_0) or f16 [n/16, k/32, 16] (the x16 formats).
Shape quantized_values_shape(QuantFormat f, int64_t n, int64_t k);
Shape quantized_scales_shape(QuantFormat f, int64_t n, int64_t k);

// "int8", "q8_0", "q4_0", "q4_0x16", "q8_0x16"; parse_quant_format takes those names (any case)
// and returns nullopt for others.
const char* quant_format_name(QuantFormat f);
std::optional<QuantFormat> parse_quant_format(std::string_view name);

}  // namespace radix
