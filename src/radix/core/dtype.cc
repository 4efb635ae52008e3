#include "radix/core/dtype.h"

namespace radix {

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::kBool: return "bool";
    case DType::kI8: return "i8";
    case DType::kI16: return "i16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kU8: return "u8";
    case DType::kU16: return "u16";
    case DType::kU32: return "u32";
    case DType::kU64: return "u64";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType d : kAllDTypes)
    if (dtype_name(d) == name) return d;
  return std::nullopt;
}

int dtype_bits(DType d) {
  switch (d) {
    case DType::kBool: return 1;
    case DType::kI8: case DType::kU8: return 8;
    case DType::kI16: case DType::kU16: case DType::kF16: case DType::kBF16: return 16;
    case DType::kI32: case DType::kU32: case DType::kF32: return 32;
    case DType::kI64: case DType::kU64: case DType::kF64: return 64;
  }
  return 0;
}

size_t dtype_size(DType d) { return d == DType::kBool ? 1 : static_cast<size_t>(dtype_bits(d) / 8); }

bool is_float(DType d) {
  return d == DType::kF16 || d == DType::kBF16 || d == DType::kF32 || d == DType::kF64;
}
bool is_signed_int(DType d) {
  return d == DType::kI8 || d == DType::kI16 || d == DType::kI32 || d == DType::kI64;
}
bool is_unsigned_int(DType d) {
  return d == DType::kU8 || d == DType::kU16 || d == DType::kU32 || d == DType::kU64;
}
bool host_type_matches(DType buffer, DType host) {
  return host == buffer || (buffer == DType::kBool && host == DType::kU8) ||
         (is_half_float(buffer) && host == DType::kU16);
}

bool is_integer(DType d) { return is_signed_int(d) || is_unsigned_int(d); }

}  // namespace radix
