// WeightStore: read-only access to the named tensors of a weight file.
//
// One interface over every supported format: safetensors (single file or
// sharded through model.safetensors.index.json), llama.cpp's GGUF v3 and
// the llama2.c checkpoint. A store maps names to a Shape (dtype + dims,
// row-major) and the tensor's bytes (little-endian). Bytes are zero-copy
// views into a read-only mmap of the file wherever the layout allows; a
// store owns converted bytes only where it must (GGUF Q4_0 / Q8_0 tensors
// are dequantized to f32 the first time their bytes are asked for; a model
// that keeps them quantized reads their blocks and never pays for it).
//
// Stores are immutable once opened: every const method may be called from
// any number of threads at once. Spans returned by bytes() stay valid while
// the store lives.
//
// Errors are Status values: kNotFound (no such file / tensor), kIoError
// (cannot read the file) or kInvalidArgument (bad content), each message
// naming the file and, where it applies, the tensor and offending numbers.
// No input, however malformed, crashes, hangs or reads out of bounds.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "radix/core/shape.h"
#include "radix/core/status.h"

namespace radix::io {

struct TensorInfo {
  std::string name;
  Shape shape;  // dtype + dims, row-major (the last axis varies fastest)
};

class WeightStore {
 public:
  virtual ~WeightStore();

  // Every tensor, in file order (by position in the file; sharded
  // safetensors: shard by shard).
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  // nullptr if there is no tensor of that name.
  virtual const TensorInfo* find(std::string_view name) const = 0;
  // The tensor's bytes: row-major, little-endian, in its Shape's dtype,
  // exactly shape.byte_size() long. kNotFound naming the tensor and file.
  virtual Result<std::span<const std::byte>> bytes(std::string_view name) const = 0;
  // Format metadata as strings (safetensors "__metadata__", GGUF key/values,
  // the llama2.c header as "llama2c.dim" = "64", ...).
  virtual const std::map<std::string, std::string>& metadata() const = 0;
  // The path it was opened from (the index file for sharded safetensors).
  virtual std::string path() const = 0;
  // "safetensors", "gguf" or "llama2c" ("memory" for a BasicWeightStore
  // built by hand, unless given another name).
  virtual std::string format() const = 0;

  // Sum of every tensor's byte size.
  uint64_t total_bytes() const;
};

// A WeightStore over a table of (name, shape, bytes) entries; every reader
// builds one. Also the way to assemble a store in memory, e.g. to write it
// with write_safetensors. Not thread-safe while being filled.
class BasicWeightStore : public WeightStore {
 public:
  explicit BasicWeightStore(std::string path = "<memory>", std::string format = "memory");

  // Adds a tensor viewing `data`, which must outlive the store (or be kept
  // alive through keep_alive). kInvalidArgument on a duplicate name or if
  // data.size() != shape.byte_size().
  Status add_view(std::string name, Shape shape, std::span<const std::byte> data);
  // Adds a tensor owning `data` (same checks).
  Status add_owned(std::string name, Shape shape, std::vector<std::byte> data);
  Status add_copy(std::string name, Shape shape, std::span<const std::byte> data) {
    return add_owned(std::move(name), std::move(shape), std::vector<std::byte>(data.begin(), data.end()));
  }
  // Keeps `owner` (e.g. a shared MappedFile that views point into) alive as
  // long as the store.
  void keep_alive(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }
  std::map<std::string, std::string>& mutable_metadata() { return metadata_; }

  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  const TensorInfo* find(std::string_view name) const override;
  Result<std::span<const std::byte>> bytes(std::string_view name) const override;
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  std::string path() const override { return path_; }
  std::string format() const override { return format_; }

 protected:
  // Adds a tensor whose bytes `fill` writes (into exactly shape.byte_size()
  // zeroed bytes) the first time bytes() asks for them: once, whichever
  // thread asks first; the store owns them from then on.
  Status add_deferred(std::string name, Shape shape, std::function<void(std::span<std::byte>)> fill);
  // Whether a deferred tensor's bytes have been made (false for any other).
  bool materialized(std::string_view name) const;

 private:
  struct Deferred {
    std::function<void(std::span<std::byte>)> fill;
    std::once_flag once;
    std::vector<std::byte> data;
    std::atomic<bool> done{false};
  };
  Status add(std::string name, Shape shape, std::span<const std::byte> data);
  std::string path_, format_;
  std::vector<TensorInfo> infos_;
  std::vector<std::span<const std::byte>> data_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
  std::deque<std::vector<std::byte>> owned_;  // deque: element addresses are stable
  mutable std::deque<Deferred> deferred_;
  std::map<size_t, Deferred*> deferred_of_;  // tensor index -> its deferred bytes
  std::vector<std::shared_ptr<const void>> owners_;
};

// Opens any supported file, picking the format from its content: the GGUF
// magic; a JSON object (a safetensors index, e.g. model.safetensors.index.json,
// => sharded safetensors); a safetensors header (u64 length, then '{');
// else a llama2.c checkpoint if its header is sane. kInvalidArgument naming
// the path if none fits.
Result<std::unique_ptr<WeightStore>> open_weights(const std::string& path);

// Small helpers shared by the readers.
// True if `s` is well-formed UTF-8 (no overlongs, surrogates or code points
// past U+10FFFF).
bool is_valid_utf8(std::string_view s);
// Builds a Shape, turning its exceptions (rank > 8, negative dim, element
// count or byte size past int64) into kInvalidArgument prefixed by `what`.
Result<Shape> make_shape(DType dtype, std::span<const int64_t> dims, const std::string& what);

}  // namespace radix::io
