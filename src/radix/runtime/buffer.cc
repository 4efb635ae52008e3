#include "radix/runtime/buffer.h"

#include "radix/runtime/backend.h"

namespace radix {

Buffer::Buffer(Buffer&& o) noexcept
    : backend_(std::move(o.backend_)), ptr_(o.ptr_), shape_(o.shape_), kind_(o.kind_) {
  o.ptr_ = nullptr;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    backend_ = std::move(o.backend_);
    ptr_ = o.ptr_;
    shape_ = o.shape_;
    kind_ = o.kind_;
    o.ptr_ = nullptr;
  }
  return *this;
}

void Buffer::release() {
  if (backend_ && ptr_) backend_->deallocate(ptr_, shape_.byte_size(), kind_);
  backend_.reset();
  ptr_ = nullptr;
}

Buffer::~Buffer() { release(); }

Result<Buffer> Buffer::allocate(std::shared_ptr<Backend> backend, const Shape& shape, MemoryKind kind) {
  if (!backend) return invalid_argument("Buffer::allocate: no backend");
  RADIX_ASSIGN_OR_RETURN(void* p, backend->allocate(shape.byte_size(), kind));
  return Buffer(std::move(backend), p, shape, kind);
}

Result<Buffer> Buffer::from_bytes(std::shared_ptr<Backend> backend, const Shape& shape,
                                  std::span<const std::byte> bytes) {
  if (bytes.size() != shape.byte_size())
    return invalid_argument("buffer for " + shape.to_string() + " needs " + std::to_string(shape.byte_size()) +
                            " bytes, got " + std::to_string(bytes.size()));
  RADIX_ASSIGN_OR_RETURN(Buffer b, allocate(std::move(backend), shape));
  RADIX_RETURN_IF_ERROR(b.backend_->copy_to_device(b.ptr_, bytes.data(), bytes.size()));
  return b;
}

Status Buffer::copy_to_host(std::span<std::byte> out) const {
  if (!valid()) return invalid_argument("copy_to_host on an empty (moved-from) Buffer");
  if (out.size() != byte_size())
    return invalid_argument("copy_to_host of " + shape_.to_string() + " needs " + std::to_string(byte_size()) +
                            " bytes, got " + std::to_string(out.size()));
  return backend_->copy_to_host(out.data(), ptr_, out.size());
}

Status Buffer::check_host_type(DType requested, size_t elem_size) const {
  if (!valid()) return invalid_argument("to_host on an empty (moved-from) Buffer");
  DType d = shape_.dtype();
  if (!host_type_matches(d, requested) || elem_size != dtype_size(d))
    return invalid_argument("to_host: buffer " + shape_.to_string() + " cannot be read as " +
                            std::string(dtype_name(requested)) + " elements");
  return Status();
}

}  // namespace radix
