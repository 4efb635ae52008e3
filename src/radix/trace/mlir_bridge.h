// Internal: the glue between Radix's trace types and MLIR. Included only by
// .cc files of the trace, compiler and backend layers, never by public headers.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <vector>

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

// Throws TraceError unless every result is a value of the trace being
// emitted ("<what>result 1 (f32[4]) is a placeholder ...").
void require_traced_here(CompilationContext& ctx, const std::string& what, std::span<const Tensor> results);

// The MLIR values behind traced tensors (operands of a return / yield / call).
llvm::SmallVector<mlir::Value> values_of(std::span<const Tensor> ts);

// Block arguments first.. as tensors of `shapes`; as_parameters marks each
// as the function argument it is (reuse_buffer may donate it).
std::vector<Tensor> wrap_block_arguments(CompilationContext& ctx, mlir::Block* block, std::span<const Shape> shapes,
                                         unsigned first = 0, bool as_parameters = false);

// "add(f32[2,3], f16[2,3])"-style rendering for messages.
std::string describe(const char* op, std::initializer_list<const Tensor*> operands);

[[noreturn]] void fail(const std::string& msg);

}  // namespace radix::detail
