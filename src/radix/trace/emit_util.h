// Internal helpers shared by the op emitters: broadcasting alignment and
// linalg.generic construction for elementwise maps.
#pragma once

#include <functional>
#include <stdexcept>
#include <span>
#include <vector>

#include "radix/trace/mlir_bridge.h"

namespace radix::detail {

// Result of aligning operand shapes for broadcasting: the result shape
// (dtype of the first operand) and, per operand, the result axis each of its
// axes maps to.
struct Alignment {
  Shape result;
  std::vector<std::vector<int>> axis_map;  // axis_map[k][i] = result axis of operand k's axis i
};
Alignment align_shapes(const char* op, std::span<const Tensor* const> operands);

// Elementwise body: receives one scalar per operand, returns the result scalar.
using ScalarFn = std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, mlir::ValueRange)>;

// Emits a linalg.generic over `result` (all parallel loops) that reads each
// operand through its axis map (size-1 axes broadcast) and writes body's value.
Tensor emit_map(CompilationContext& ctx, std::span<const Tensor* const> operands,
                const std::vector<std::vector<int>>& axis_map, const Shape& result, const ScalarFn& body);

// One elementwise op over one operand / two broadcast operands, result dtype
// `out`: checks the context, aligns shapes, emits one linalg.generic.
Tensor emit_unary(const char* op, const Tensor& x, DType out, const ScalarFn& fn);
Tensor emit_binary(const char* op, const Tensor& a, const Tensor& b, DType out, const ScalarFn& fn);

// The first index along axis `axis` of x's maximum (is_max) or minimum, a
// NaN counting as the extremum (the first NaN wins); `out`: x's shape
// without that axis, in an integer dtype. argmax / argmin and the sampler's
// Gumbel-max draw (ops_reduce.cc: two vectorizable passes).
Tensor first_extremum_index(CompilationContext& ctx, const Tensor& x, int axis, bool is_max, const Shape& out);

// Static index attributes (offsets, sizes, strides of tensor slices).
llvm::SmallVector<mlir::OpFoldResult> index_attrs(mlir::OpBuilder& b, llvm::ArrayRef<int64_t> v);
// "{0, 'd'}": a list of axes for messages.
std::string axes_str(const std::vector<Axis>& axes);

// `value` as an attribute of element type `dtype` (the caller checks it fits).
mlir::TypedAttr scalar_attr(mlir::Builder& b, DType dtype, double value);
// An arith constant scalar of `dtype`.
mlir::Value scalar_constant(mlir::OpBuilder& b, mlir::Location loc, DType dtype, double value);
// A tensor.empty of `shape`.
mlir::Value empty_tensor(CompilationContext& ctx, const Shape& shape);

// Builds a result Shape with `make`; a Shape error (too large, tag clash)
// becomes a TraceError that names the op and its operands' shapes.
template <class F>
Shape shape_for(const char* op, std::initializer_list<const Tensor*> operands, F&& make) {
  try {
    return make();
  } catch (const std::invalid_argument& e) {
    fail(describe(op, operands) + ": " + e.what());
  }
}

// Throws unless all operands share one dtype.
void require_same_dtype(const char* op, std::initializer_list<const Tensor*> operands);
void require_float(const char* op, const Tensor& x);
// Throws unless x is an integer (or, with allow_bool, a bool) tensor.
void require_int(const char* op, const Tensor& x, bool allow_bool = false);

// A float-only unary op that is one MLIR op per element (math.exp, math.sin, ...).
template <class ScalarOp>
Tensor emit_float_unary(const char* op, const Tensor& x) {
  context_for(op, {&x});
  require_float(op, x);
  return emit_unary(op, x, x.dtype(), [](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange v) -> mlir::Value {
    return ScalarOp::create(b, l, v[0]);
  });
}

}  // namespace radix::detail
