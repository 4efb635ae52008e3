#include "radix/core/quant_format.h"

#include <cctype>
#include <string>

namespace radix {

Shape quantized_values_shape(QuantFormat f, int64_t n, int64_t k) {
  if (f == QuantFormat::kQ4_0) return Shape(DType::kU8, {n, k / 2});
  if (f == QuantFormat::kQ4_0x16) return Shape(DType::kU8, {n / kQuantRowGroup, k / kQuantBlock, 4, kQuantRowGroup, 4});
  if (f == QuantFormat::kQ8_0x16) return Shape(DType::kI8, {n / kQuantRowGroup, k / kQuantBlock, 8, kQuantRowGroup, 4});
  return Shape(DType::kI8, {n, k});
}

Shape quantized_scales_shape(QuantFormat f, int64_t n, int64_t k) {
  if (f == QuantFormat::kInt8PerChannel) return Shape(DType::kF32, {n});
  if (f == QuantFormat::kQ4_0x16 || f == QuantFormat::kQ8_0x16) return Shape(DType::kF16, {n / kQuantRowGroup, k / kQuantBlock, kQuantRowGroup});
  return Shape(DType::kF16, {n, k / kQuantBlock});
}

const char* quant_format_name(QuantFormat f) {
  switch (f) {
    case QuantFormat::kInt8PerChannel: return "int8";
    case QuantFormat::kQ8_0: return "q8_0";
    case QuantFormat::kQ4_0: return "q4_0";
    case QuantFormat::kQ4_0x16: return "q4_0x16";
    case QuantFormat::kQ8_0x16: return "q8_0x16";
  }
  return "?";
}

std::optional<QuantFormat> parse_quant_format(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (QuantFormat f : {QuantFormat::kInt8PerChannel, QuantFormat::kQ8_0, QuantFormat::kQ4_0, QuantFormat::kQ4_0x16,
                        QuantFormat::kQ8_0x16})
    if (lower == quant_format_name(f)) return f;
  return std::nullopt;
}

}  // namespace radix
