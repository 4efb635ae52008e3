// GGUF v3 (llama.cpp's weight format): reader with typed metadata.
//
// Layout (all little-endian): magic "GGUF", u32 version (3; others are
// rejected naming the version), u64 tensor_count, u64 metadata_kv_count,
// metadata pairs (key: gguf string = u64 length + bytes; u32 value type;
// value), tensor infos (name, u32 n_dims, u64 ne[n_dims] with ne[0] the
// fastest-varying axis, u32 ggml type, u64 offset into the data section),
// then the data section at the next multiple of general.alignment (default
// 32) after the header; each tensor offset is a multiple of the alignment.
//
// Tensor types: F32, F16 and BF16 are zero-copy views into the mapping;
// Q4_0 and Q8_0 are reported as f32 and dequantized the first time their
// bytes are asked for (the store then owns those bytes); blocks() gives
// their blocks as stored, for a model that keeps them quantized. Other ggml types are rejected
// naming the type number. Shapes are the ne[] reversed (row-major: ne[0]
// is the last axis).
//
// Checks, all before any read: every length and count against the bytes
// left (no allocation larger than the file justifies), strings <= 1 MiB
// (keys and tensor names <= 64 KiB, valid UTF-8), array nesting <= 8 deep,
// at most 2^23 array elements in all, no duplicate keys or tensor names,
// 1 <= n_dims <= 4, dims products within int64, ne[0] a multiple of 32 for
// quantized types, general.alignment an integer power of two, offsets
// aligned, every tensor inside the data section and none overlapping.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "radix/io/weight_store.h"

namespace radix::io {

// Metadata value types; the numbers are the file's.
enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6,
  kBool = 7, kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
std::string_view gguf_type_name(GgufType t);  // "u8", ..., "string", "array"

// The supported ggml tensor types; the numbers are the file's.
enum class GgmlType : uint32_t { kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kBF16 = 30 };

struct GgufValue;
struct GgufArray {
  GgufType type = GgufType::kU8;  // of every item
  std::vector<GgufValue> items;
};

// One metadata value. The variant's alternative index is its GgufType.
struct GgufValue {
  using Variant = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               GgufArray, uint64_t, int64_t, double>;
  Variant v;

  GgufType type() const { return static_cast<GgufType>(v.index()); }
  // Any integer type whose value fits (bool is not an integer here).
  std::optional<int64_t> as_int() const;
  std::optional<uint64_t> as_uint() const;
  // f32 or f64.
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;  // nullptr unless a string
  const GgufArray* as_array() const;     // nullptr unless an array
  // Integers in decimal, floats shortest round-trip, bools true/false,
  // strings as is, arrays as JSON ("[1,2]", "[\"a\",\"b\"]").
  std::string to_string() const;
};
bool operator==(const GgufArray& a, const GgufArray& b);
bool operator==(const GgufValue& a, const GgufValue& b);

// Dequantizes whole blocks: Q8_0 blocks are 34 bytes (f16 scale d, 32 int8
// q; x = d * q), Q4_0 blocks 18 bytes (f16 d, 16 bytes: byte j holds value j
// in its low nibble and value j + 16 in its high nibble; x = d * (nibble - 8)).
// `out` must hold 32 floats per block.
void dequantize_q8_0(std::span<const std::byte> blocks, std::span<float> out);
void dequantize_q4_0(std::span<const std::byte> blocks, std::span<float> out);

class GgufStore : public BasicWeightStore {
 public:
  explicit GgufStore(std::string path) : BasicWeightStore(std::move(path), "gguf") {}

  // Every metadata value by key (metadata() holds the same as strings).
  const std::map<std::string, GgufValue, std::less<>>& values() const { return values_; }
  const GgufValue* value(std::string_view key) const {
    auto it = values_.find(key);
    return it == values_.end() ? nullptr : &it->second;
  }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  // The tensor's type in the file (F32 for a dequantized Q8_0 reads Q8_0).
  std::optional<GgmlType> file_type(std::string_view name) const {
    auto it = file_types_.find(name);
    return it == file_types_.end() ? std::nullopt : std::optional<GgmlType>(it->second);
  }
  // A Q4_0 / Q8_0 tensor's blocks as the file stores them (a view into the
  // mapping: rows in order, 18 / 34 bytes per block of 32; io/quantize.h's
  // split_gguf_* turn them into values and scales). kNotFound for no such
  // tensor, kInvalidArgument for one of another type, naming it.
  Result<std::span<const std::byte>> blocks(std::string_view name) const;
  // Whether a Q4_0 / Q8_0 tensor has been dequantized (its bytes() asked for).
  bool dequantized(std::string_view name) const { return materialized(name); }

 private:
  friend Result<std::unique_ptr<GgufStore>> open_gguf(const std::string& path);
  std::map<std::string, GgufValue, std::less<>> values_;
  std::map<std::string, GgmlType, std::less<>> file_types_;
  std::map<std::string, std::span<const std::byte>, std::less<>> blocks_;
  uint32_t version_ = 3;
  uint64_t alignment_ = 32;
};

Result<std::unique_ptr<GgufStore>> open_gguf(const std::string& path);

}  // namespace radix::io
