// Buffer: device memory holding one array, with its Shape. Move-only RAII:
// the memory is released when the Buffer is destroyed. Keeps its backend alive.
//
// Layout: dense, row-major, 64-byte aligned; bool is one byte per element.
// Thread-safety: reading a Buffer (to_host, passing it to calls) from several
// threads at once is safe; moving or destroying it while in use is not.
#pragma once

#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "radix/core/memory_kind.h"
#include "radix/core/shape.h"
#include "radix/core/status.h"

namespace radix {

class Backend;

class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  // Allocates uninitialized memory of `kind` for `shape`.
  static Result<Buffer> allocate(std::shared_ptr<Backend> backend, const Shape& shape,
                                 MemoryKind kind = MemoryKind::kDevice);
  // Copies `bytes` (exactly shape.byte_size() of them) host -> device.
  static Result<Buffer> from_bytes(std::shared_ptr<Backend> backend, const Shape& shape,
                                   std::span<const std::byte> bytes);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return shape_.dtype(); }
  size_t byte_size() const { return shape_.byte_size(); }
  // False for a default-constructed or moved-from Buffer (e.g. one donated
  // to a call): every use of it is then an error.
  bool valid() const { return backend_ != nullptr; }
  MemoryKind memory_kind() const { return kind_; }
  void* device_ptr() const { return ptr_; }
  Backend* backend() const { return backend_.get(); }

  // Device -> host into `out` (exactly byte_size() bytes).
  Status copy_to_host(std::span<std::byte> out) const;
  // Device -> host as a vector of T; T must match the dtype. Raw-bit access:
  // uint8_t for bool, uint16_t for f16 / bf16 (see core/half.h).
  template <class T>
  Result<std::vector<T>> to_host() const;

 private:
  Buffer(std::shared_ptr<Backend> backend, void* ptr, const Shape& shape, MemoryKind kind)
      : backend_(std::move(backend)), ptr_(ptr), shape_(shape), kind_(kind) {}
  void release();
  Status check_host_type(DType requested, size_t elem_size) const;
  std::shared_ptr<Backend> backend_;
  void* ptr_ = nullptr;
  Shape shape_;
  MemoryKind kind_ = MemoryKind::kDevice;
  friend class Executable;  // donation: a donated input's memory becomes an output
};

template <class T>
Result<std::vector<T>> Buffer::to_host() const {
  static_assert(!std::is_same_v<T, bool>, "use uint8_t for bool buffers");
  if (Status s = check_host_type(dtype_v<T>, sizeof(T)); !s.ok()) return s;
  std::vector<T> out(static_cast<size_t>(shape_.count()));
  if (Status s = copy_to_host(std::as_writable_bytes(std::span<T>(out.data(), out.size()))); !s.ok()) return s;
  return out;
}

}  // namespace radix
