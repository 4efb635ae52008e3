// Tensor: a cheap handle on a value being traced. It holds the value's Shape,
// the MLIR value it stands for, the id of the trace that produced it (unique
// for the process, never reused, so a tensor kept past its trace is always
// recognised as foreign), a unique id, its donation state and the memory kind
// it asks for as a result. Copying a Tensor copies the handle; ops never
// mutate a Tensor, they return new ones.
//
// A Tensor without a value is a *placeholder*: it carries only a Shape and is
// used to describe model weights and call arguments before tracing (see
// api/compile.h). Using a placeholder in an op is a TraceError.
#pragma once

#include <cstdint>
#include <string>

#include "radix/core/memory_kind.h"
#include "radix/core/shape.h"

namespace radix {

class CompilationContext;

class Tensor {
 public:
  Tensor() = default;
  // A shape-only placeholder (no value, no context).
  static Tensor placeholder(const Shape& shape);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return shape_.dtype(); }
  int rank() const { return shape_.rank(); }
  // Size of an axis given by index (negative allowed) or tag; TraceError if absent.
  int64_t dim(const Axis& axis) const;
  // Index of an axis given by index or tag; TraceError if absent.
  int axis(const Axis& axis) const;
  int64_t count() const { return shape_.count(); }
  bool is_placeholder() const { return value_ == nullptr; }
  uint64_t id() const { return id_; }
  // The trace this tensor was produced in (0 for a placeholder). Ops accept
  // only tensors of the trace being emitted (CompilationContext::trace_id()).
  uint64_t trace_id() const { return trace_id_; }

  // Returns the same value with new tags (metadata only; emits nothing).
  Tensor with_tags(std::initializer_list<Tag> tags) const;
  Tensor with_tags(std::span<const Tag> tags) const;

  // Donation: marks this result as reusing the buffer of the input `input`
  // (a function argument), the seeds' reuseBuffer. Recorded on @main as the
  // argument attribute tf.aliasing_output; a call() result that reuses a
  // parameter's buffer donates into whatever the caller passed there.
  Tensor reuse_buffer(const Tensor& input) const;
  // Index of the function argument this tensor may donate into, or -1.
  int donation_arg() const { return donation_arg_; }
  // Index of the function argument this tensor *is*, or -1.
  int argument_index() const { return arg_index_; }

  // Asks for this value, when returned from @main, to be allocated in `kind`
  // (metadata only; emits nothing). Recorded as the result attribute
  // mhlo.memory_kind and in Signature::output_memory_kinds.
  Tensor to_memory(MemoryKind kind) const;
  MemoryKind memory_kind() const { return memory_kind_; }

  std::string to_string() const;

  // Internal: used by CompilationContext and the op emitters.
  void* opaque_value() const { return value_; }
  static Tensor from_opaque(CompilationContext* ctx, void* value, const Shape& shape, uint64_t id,
                            int arg_index = -1);
  // The same value donating into argument `arg` (-1: none), unchecked: call()
  // carries a callee's donation over to the caller's argument.
  Tensor with_donation_arg(int arg) const;

 private:
  Shape shape_;
  void* value_ = nullptr;            // mlir::Value as opaque pointer; valid only during its trace
  uint64_t trace_id_ = 0;
  uint64_t id_ = 0;
  int arg_index_ = -1;
  int donation_arg_ = -1;
  MemoryKind memory_kind_ = MemoryKind::kDevice;
};

}  // namespace radix
