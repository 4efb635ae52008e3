// Constructors (ops.h): each is one linalg.generic with no inputs whose body
// reads linalg.index, so it fuses into its consumers like any elementwise op.
#include <cmath>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;
using mlir::Value;
namespace ar = mlir::arith;

namespace {

Shape shape_of(const char* op, DType d, std::initializer_list<int64_t> dims, std::initializer_list<Tag> tags) {
  for (int64_t n : dims)
    if (n < 0) fail(std::string(op) + ": negative size " + std::to_string(n));
  bool tagged = false;
  for (Tag t : tags) tagged |= !t.empty();
  try {
    return tagged ? Shape(d, dims, tags) : Shape(d, dims);
  } catch (const std::invalid_argument& e) {
    fail(std::string(op) + ": " + e.what());
  }
}

// f64 value of loop index `dim`.
Value index_f64(mlir::OpBuilder& b, mlir::Location l, unsigned dim) {
  Value i = mlir::linalg::IndexOp::create(b, l, dim);
  return ar::SIToFPOp::create(b, l, b.getF64Type(), ar::IndexCastOp::create(b, l, b.getI64Type(), i));
}

// f64 -> dtype: integers truncate toward zero after the exact double math.
Value from_f64(mlir::OpBuilder& b, mlir::Location l, Value v, DType d) {
  mlir::Type t = element_type(b.getContext(), d);
  if (is_float(d)) return d == DType::kF64 ? v : Value(ar::TruncFOp::create(b, l, t, v));
  if (is_signed_int(d)) return ar::FPToSIOp::create(b, l, t, v);
  return ar::FPToUIOp::create(b, l, t, v);
}

Tensor generate(const char* op, const Shape& s, const ScalarFn& body) {
  CompilationContext& ctx = CompilationContext::require_current(op);
  return emit_map(ctx, {}, {}, s, body);
}

// A 2-D bool / numeric mask from the predicate on (col - row - k).
Tensor diagonal_map(const char* op, int64_t rows, int64_t cols, int64_t k, DType d, Tag rt, Tag ct,
                    ar::CmpIPredicate pred) {
  Shape s = shape_of(op, d, {rows, cols}, {rt, ct});
  return generate(op, s, [=](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange) -> Value {
    Value r = ar::IndexCastOp::create(b, l, b.getI64Type(), mlir::linalg::IndexOp::create(b, l, 0));
    Value c = ar::IndexCastOp::create(b, l, b.getI64Type(), mlir::linalg::IndexOp::create(b, l, 1));
    Value diff = ar::SubIOp::create(b, l, c, ar::AddIOp::create(b, l, r, ar::ConstantIntOp::create(b, l, k, 64)));
    Value hit = ar::CmpIOp::create(b, l, pred, diff, ar::ConstantIntOp::create(b, l, 0, 64));
    if (is_bool(d)) return hit;
    return ar::SelectOp::create(b, l, hit, scalar_constant(b, l, d, 1), scalar_constant(b, l, d, 0));
  });
}

}  // namespace

Tensor arange(double start, double stop, double step, DType dtype, Tag tag) {
  CompilationContext::require_current("arange");
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    fail("arange(" + std::to_string(start) + ", " + std::to_string(stop) + ", " + std::to_string(step) +
         "): needs finite bounds and a non-zero step");
  if (is_bool(dtype)) fail("arange: bool dtype is not supported");
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((stop - start) / step)));
  Shape s = shape_of("arange", dtype, {n}, {tag});
  return generate("arange", s, [=](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange) -> Value {
    Value v = ar::AddFOp::create(b, l, ar::ConstantFloatOp::create(b, l, b.getF64Type(), llvm::APFloat(start)),
                                 ar::MulFOp::create(b, l, index_f64(b, l, 0),
                                                    ar::ConstantFloatOp::create(b, l, b.getF64Type(), llvm::APFloat(step))));
    return from_f64(b, l, v, dtype);
  });
}

Tensor linspace(double start, double stop, int64_t num, DType dtype, Tag tag, bool endpoint) {
  CompilationContext::require_current("linspace");
  if (num < 0) fail("linspace: negative count " + std::to_string(num));
  if (is_bool(dtype)) fail("linspace: bool dtype is not supported");
  const double div = static_cast<double>(endpoint ? num - 1 : num);
  const double step = div > 0 ? (stop - start) / div : 0;
  Shape s = shape_of("linspace", dtype, {num}, {tag});
  return generate("linspace", s, [=](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange) -> Value {
    Value v = ar::AddFOp::create(b, l, ar::ConstantFloatOp::create(b, l, b.getF64Type(), llvm::APFloat(start)),
                                 ar::MulFOp::create(b, l, index_f64(b, l, 0),
                                                    ar::ConstantFloatOp::create(b, l, b.getF64Type(), llvm::APFloat(step))));
    if (endpoint && num > 1) {  // the last value is exactly `stop`
      Value last = ar::CmpFOp::create(b, l, ar::CmpFPredicate::OEQ, index_f64(b, l, 0),
                                      ar::ConstantFloatOp::create(b, l, b.getF64Type(), llvm::APFloat(div)));
      v = ar::SelectOp::create(b, l, last, ar::ConstantFloatOp::create(b, l, b.getF64Type(), llvm::APFloat(stop)), v);
    }
    return from_f64(b, l, v, dtype);
  });
}

Tensor zeros(const Shape& shape) { return full(shape, 0); }
Tensor ones(const Shape& shape) { return full(shape, 1); }

Tensor eye(int64_t rows, int64_t cols, DType dtype, int64_t k, Tag row_tag, Tag col_tag) {
  return diagonal_map("eye", rows, cols, k, dtype, row_tag, col_tag, ar::CmpIPredicate::eq);
}
Tensor tril_mask(int64_t rows, int64_t cols, int64_t k, Tag row_tag, Tag col_tag) {
  return diagonal_map("tril_mask", rows, cols, k, DType::kBool, row_tag, col_tag, ar::CmpIPredicate::sle);
}
Tensor triu_mask(int64_t rows, int64_t cols, int64_t k, Tag row_tag, Tag col_tag) {
  return diagonal_map("triu_mask", rows, cols, k, DType::kBool, row_tag, col_tag, ar::CmpIPredicate::sge);
}

}  // namespace radix
