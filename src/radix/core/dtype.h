// DType: the element types Radix can compute with on the CPU.
//
// Mirrors the numeric subset of the FFI DataType of the seeds. Booleans are
// stored one byte per element (LLVM's in-memory layout of i1).
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace radix {

enum class DType : uint8_t {
  kBool,
  kI8, kI16, kI32, kI64,
  kU8, kU16, kU32, kU64,
  kF16, kBF16, kF32, kF64,
};

inline constexpr DType kAllDTypes[] = {
    DType::kBool, DType::kI8,  DType::kI16, DType::kI32,  DType::kI64, DType::kU8,  DType::kU16,
    DType::kU32,  DType::kU64, DType::kF16, DType::kBF16, DType::kF32, DType::kF64,
};

// Short names: "bool", "i8", ..., "u64", "f16", "bf16", "f32", "f64".
std::string_view dtype_name(DType d);
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes per element in memory (bool = 1).
size_t dtype_size(DType d);
bool is_float(DType d);
bool is_integer(DType d);   // signed or unsigned, not bool
bool is_signed_int(DType d);
bool is_unsigned_int(DType d);
inline bool is_bool(DType d) { return d == DType::kBool; }
// f16 or bf16: stored as 16 raw bits on the host, accumulated in f32.
inline bool is_half_float(DType d) { return d == DType::kF16 || d == DType::kBF16; }
// Bit width of the value (bool = 1).
int dtype_bits(DType d);

// True if host elements of type `host` may fill / receive a buffer of dtype
// `buffer`: the same dtype, or raw bits (u8 for bool, u16 for f16 / bf16).
bool host_type_matches(DType buffer, DType host);

// Maps C++ element types to DTypes (for typed host transfers).
template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::kBool; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::kI16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct dtype_of<uint16_t> { static constexpr DType value = DType::kU16; };
template <> struct dtype_of<uint32_t> { static constexpr DType value = DType::kU32; };
template <> struct dtype_of<uint64_t> { static constexpr DType value = DType::kU64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::kF32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::kF64; };
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

}  // namespace radix
