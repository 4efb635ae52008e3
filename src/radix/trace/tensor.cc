#include "radix/trace/tensor.h"

#include "radix/trace/compilation_context.h"
#include "radix/trace/trace_error.h"

namespace radix {

Tensor Tensor::placeholder(const Shape& shape) {
  Tensor t;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::from_opaque(CompilationContext* ctx, void* value, const Shape& shape, uint64_t id, int arg_index) {
  Tensor t;
  t.trace_id_ = ctx->trace_id();
  t.value_ = value;
  t.shape_ = shape;
  t.id_ = id;
  t.arg_index_ = arg_index;
  return t;
}

int Tensor::axis(const Axis& a) const {
  auto i = shape_.find_axis(a);
  if (!i) throw TraceError("axis " + a.to_string() + " does not exist in " + shape_.to_string());
  return *i;
}

int64_t Tensor::dim(const Axis& a) const { return shape_.dim(axis(a)); }

Tensor Tensor::with_tags(std::initializer_list<Tag> tags) const {
  return with_tags(std::span<const Tag>(tags.begin(), tags.size()));
}

Tensor Tensor::with_tags(std::span<const Tag> tags) const {
  Tensor t = *this;
  try {
    t.shape_ = shape_.with_tags(tags);
  } catch (const std::invalid_argument& e) {
    throw TraceError(std::string("with_tags on ") + shape_.to_string() + ": " + e.what());
  }
  return t;
}

Tensor Tensor::reuse_buffer(const Tensor& input) const {
  if (input.trace_id_ != trace_id_)
    throw TraceError("reuse_buffer: argument " + input.shape().to_string() + " and result " + shape_.to_string() +
                     " belong to different traces");
  if (input.arg_index_ < 0)
    throw TraceError("reuse_buffer: " + input.shape().to_string() +
                     " is not a function argument, so it has no buffer to donate");
  if (input.shape_.dtype() != shape_.dtype() || !input.shape_.same_dims(shape_))
    throw TraceError("reuse_buffer: result " + shape_.to_string() + " cannot reuse the buffer of argument " +
                     input.shape_.to_string() + " (shape or dtype differ)");
  Tensor t = *this;
  t.donation_arg_ = input.arg_index_;
  return t;
}

Tensor Tensor::to_memory(MemoryKind kind) const {
  Tensor t = *this;
  t.memory_kind_ = kind;
  return t;
}

Tensor Tensor::with_donation_arg(int arg) const {
  Tensor t = *this;
  t.donation_arg_ = arg;
  return t;
}

std::string Tensor::to_string() const {
  return std::string(is_placeholder() ? "Tensor(placeholder " : "Tensor(") + shape_.to_string() + ")";
}

}  // namespace radix
