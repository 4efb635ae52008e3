// Internal: the glue between Radix's trace types and MLIR. Included only by
// .cc files of the trace, compiler and backend layers, never by public headers.
#pragma once

#include <initializer_list>
#include <string>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "radix/core/shape.h"
#include "radix/trace/compilation_context.h"
#include "radix/trace/tensor.h"
#include "radix/trace/trace_error.h"

namespace radix::detail {

mlir::Type element_type(mlir::MLIRContext* ctx, DType d);
mlir::RankedTensorType tensor_type(mlir::MLIRContext* ctx, const Shape& s);

// The MLIR value behind a traced tensor.
inline mlir::Value value_of(const Tensor& t) { return mlir::Value::getFromOpaquePointer(t.opaque_value()); }

// Wraps an MLIR value as a new Tensor of the given shape.
Tensor wrap(CompilationContext& ctx, mlir::Value v, const Shape& shape);

// Checks the operands of `op` (not placeholders, all from the active context)
// and returns that context. Throws TraceError naming op and shapes.
CompilationContext& context_for(const char* op, std::initializer_list<const Tensor*> operands);

// "add(f32[2,3], f16[2,3])"-style rendering for messages.
std::string describe(const char* op, std::initializer_list<const Tensor*> operands);

[[noreturn]] void fail(const std::string& msg);

}  // namespace radix::detail
