// safetensors: reader (single file or sharded) and atomic writer.
//
// Layout: u64 little-endian header length N, N bytes of JSON header
// {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//  ..., "__metadata__": {"key": "value"}}, then the data region; offsets are
// relative to the data region's start. Every tensor is a zero-copy view into
// a read-only mmap of the file.
//
// The reader checks: 8 <= file size, N <= kMaxSafetensorsHeaderBytes and
// N <= file size - 8, the header is a JSON object with no duplicate keys (at
// any level) and names that are non-empty valid UTF-8, "__metadata__" (if
// present) maps strings to strings, every dtype is known (F8_* are named as
// unsupported), shapes are arrays of non-negative integers (rank <= 8),
// begin <= end <= data region size, end - begin == product(shape) * dtype
// size, and no two tensors' byte ranges overlap. Unknown fields in a tensor
// entry are ignored. tensors() lists tensors by position in the data region.
//
// Sharded: a JSON index (e.g. model.safetensors.index.json) with
// "weight_map": {"tensor": "shard file"} (shard paths relative to the
// index's folder; absolute paths and ".." are rejected) and an optional
// "metadata" object. The store exposes exactly the tensors weight_map lists
// (each must be in its shard), shard by shard in shard-name order; its
// metadata is the index's "metadata" (non-string values as JSON text) plus
// every shard's __metadata__ (first value wins).
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "radix/io/weight_store.h"

namespace radix::io {

inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// "BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64", "F16",
// "BF16", "F32", "F64".
std::string_view safetensors_dtype_name(DType d);
std::optional<DType> dtype_from_safetensors(std::string_view name);

// Opens a safetensors file, or a sharded model through its JSON index
// (chosen by content: a file starting with '{' is an index). format() is
// "safetensors" either way.
Result<std::unique_ptr<WeightStore>> open_safetensors(const std::string& path);

// Content sniffing (used by open_weights): a plausible safetensors start
// (u64 header length within bounds, then '{'), and a JSON object start.
bool looks_like_safetensors(std::span<const std::byte> file_start);
bool looks_like_json(std::span<const std::byte> file_start);

// One tensor to write; `data` must be shape.byte_size() bytes.
struct TensorData {
  std::string name;
  Shape shape;
  std::span<const std::byte> data;
};

// Writes a safetensors file: tensors in sorted name order, packed from
// offset 0; the header padded with spaces so the data region starts 8-byte
// aligned; "__metadata__" only if `metadata` is not empty. Atomic: written
// to a temp file in the same folder, fsynced, then renamed over `path`.
// kInvalidArgument for bad input (duplicate / empty / non-UTF-8 names, the
// name "__metadata__", a byte size that does not match the shape), kIoError
// if the file cannot be written; `path` is untouched on error.
Status write_safetensors(const std::string& path, std::span<const TensorData> tensors,
                         const std::map<std::string, std::string>& metadata = {});
// Writes every tensor of `store` with the given metadata.
Status write_safetensors(const std::string& path, const WeightStore& store,
                         const std::map<std::string, std::string>& metadata);
// Writes every tensor of `store` with the store's own metadata.
Status write_safetensors(const std::string& path, const WeightStore& store);

}  // namespace radix::io
