// Elementwise ops, comparisons, select, convert and constants: each becomes
// one linalg.generic (or a constant), so the backend's elementwise fusion
// can merge chains of them into a single loop nest.
#include <cfloat>
#include <cmath>
#include <cstdio>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "radix/core/half.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;
using mlir::Location;
using mlir::OpBuilder;
using mlir::Value;
using mlir::ValueRange;

namespace {

enum class Kind { kFloat, kSigned, kUnsigned };  // bool counts as unsigned
Kind kind_of(DType d) {
  if (is_float(d)) return Kind::kFloat;
  if (is_signed_int(d)) return Kind::kSigned;
  return Kind::kUnsigned;
}

// Operands of an arithmetic binary op: traced in the active context, one
// dtype, and (unless allowed) not bool.
void check_arith_operands(const char* op, const Tensor& a, const Tensor& b, bool allow_bool) {
  context_for(op, {&a, &b});
  require_same_dtype(op, {&a, &b});
  if (is_bool(a.dtype()) && !allow_bool)
    fail(describe(op, {&a, &b}) + ": not defined for bool tensors (convert them first)");
}

// Arithmetic binary op: same dtype in and out; one builder per kind.
template <class FOp, class SOp, class UOp>
Tensor arith_binary(const char* op, const Tensor& a, const Tensor& b, bool allow_bool = false) {
  check_arith_operands(op, a, b, allow_bool);
  Kind k = kind_of(a.dtype());
  return emit_binary(op, a, b, a.dtype(), [k](OpBuilder& nb, Location l, ValueRange v) -> Value {
    if (k == Kind::kFloat) return FOp::create(nb, l, v[0], v[1]);
    if (k == Kind::kSigned) return SOp::create(nb, l, v[0], v[1]);
    return UOp::create(nb, l, v[0], v[1]);
  });
}

Tensor compare(const char* op, const Tensor& a, const Tensor& b, mlir::arith::CmpFPredicate fp,
               mlir::arith::CmpIPredicate sp, mlir::arith::CmpIPredicate up) {
  context_for(op, {&a, &b});
  require_same_dtype(op, {&a, &b});
  Kind k = kind_of(a.dtype());
  return emit_binary(op, a, b, DType::kBool, [=](OpBuilder& nb, Location l, ValueRange v) -> Value {
    if (k == Kind::kFloat) return mlir::arith::CmpFOp::create(nb, l, fp, v[0], v[1]);
    return mlir::arith::CmpIOp::create(nb, l, k == Kind::kSigned ? sp : up, v[0], v[1]);
  });
}

// Float -> integer, saturating: NaN -> 0, values beyond the target's range
// -> its min / max (LLVM's fptosi / fptoui alone give poison there).
Value float_to_int(OpBuilder& b, Location l, Value v, DType from, DType to) {
  namespace ar = mlir::arith;
  mlir::Type et = element_type(b.getContext(), to);
  const unsigned bits = static_cast<unsigned>(dtype_bits(to));
  const bool is_signed = is_signed_int(to);
  // The range's ends as floats: -2^(bits-1) and 2^(bits-1) (signed) or 0 and
  // 2^bits (unsigned), all powers of two so exact (or +inf past f16's range).
  const double lo = is_signed ? -std::ldexp(1.0, static_cast<int>(bits) - 1) : 0.0;
  const double hi = std::ldexp(1.0, static_cast<int>(is_signed ? bits - 1 : bits));
  Value f_lo = scalar_constant(b, l, from, lo), f_hi = scalar_constant(b, l, from, hi);
  Value f_zero = scalar_constant(b, l, from, 0.0);
  Value is_nan = ar::CmpFOp::create(b, l, ar::CmpFPredicate::UNO, v, v);
  Value below = ar::CmpFOp::create(b, l, ar::CmpFPredicate::OLT, v, f_lo);
  Value above = ar::CmpFOp::create(b, l, ar::CmpFPredicate::OGE, v, f_hi);
  Value out = ar::OrIOp::create(b, l, is_nan, ar::OrIOp::create(b, l, below, above));
  Value in_range = ar::SelectOp::create(b, l, out, f_zero, v);
  Value r = is_signed ? Value(ar::FPToSIOp::create(b, l, et, in_range)) : Value(ar::FPToUIOp::create(b, l, et, in_range));
  llvm::APInt min = is_signed ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getMinValue(bits);
  llvm::APInt max = is_signed ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getMaxValue(bits);
  Value i_min = ar::ConstantOp::create(b, l, b.getIntegerAttr(et, min));
  Value i_max = ar::ConstantOp::create(b, l, b.getIntegerAttr(et, max));
  Value i_zero = ar::ConstantOp::create(b, l, b.getIntegerAttr(et, 0));
  r = ar::SelectOp::create(b, l, below, i_min, r);
  r = ar::SelectOp::create(b, l, above, i_max, r);
  return ar::SelectOp::create(b, l, is_nan, i_zero, r);
}

// Scalar-to-scalar conversion between element types.
Value convert_scalar(OpBuilder& b, Location l, Value v, DType from, DType to) {
  if (from == to) return v;
  mlir::Type et = element_type(b.getContext(), to);
  if (is_bool(to)) {
    Value zero = scalar_constant(b, l, from, 0);
    if (is_float(from)) return mlir::arith::CmpFOp::create(b, l, mlir::arith::CmpFPredicate::UNE, v, zero);
    return mlir::arith::CmpIOp::create(b, l, mlir::arith::CmpIPredicate::ne, v, zero);
  }
  if (is_float(from) && is_float(to)) {
    if (dtype_bits(to) > dtype_bits(from)) return mlir::arith::ExtFOp::create(b, l, et, v);
    if (dtype_bits(to) < dtype_bits(from)) return mlir::arith::TruncFOp::create(b, l, et, v);
    // f16 <-> bf16: go through f32.
    Value w = mlir::arith::ExtFOp::create(b, l, b.getF32Type(), v);
    return mlir::arith::TruncFOp::create(b, l, et, w);
  }
  if (is_float(to)) {
    if (is_signed_int(from)) return mlir::arith::SIToFPOp::create(b, l, et, v);
    return mlir::arith::UIToFPOp::create(b, l, et, v);
  }
  if (is_float(from)) return float_to_int(b, l, v, from, to);
  // integer / bool -> integer
  int fb = dtype_bits(from), tb = dtype_bits(to);
  if (tb > fb) {
    if (is_signed_int(from)) return mlir::arith::ExtSIOp::create(b, l, et, v);
    return mlir::arith::ExtUIOp::create(b, l, et, v);
  }
  if (tb < fb) return mlir::arith::TruncIOp::create(b, l, et, v);
  return v;  // same width, other signedness: same bits
}

std::string fmt_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

// Why `v` cannot be a value of dtype `d` exactly, or "" if it can. Integers
// and bools take only integral values in range (no silent truncation or
// wrap); floats may round (0.1 in f32) but a finite value may not overflow to
// infinity.
std::string unrepresentable(double v, DType d) {
  if (is_float(d)) {
    if (!std::isfinite(v)) return "";
    const float f = static_cast<float>(v);
    bool inf = false;
    switch (d) {
      case DType::kF16: inf = std::isinf(f16_to_float(float_to_f16(f))); break;
      case DType::kBF16: inf = std::isinf(bf16_to_float(float_to_bf16(f))); break;
      case DType::kF32: inf = std::isinf(f); break;
      default: break;
    }
    return inf ? "it overflows " + std::string(dtype_name(d)) + " to infinity" : "";
  }
  if (is_bool(d)) return v == 0 || v == 1 ? "" : "a bool scalar must be 0 or 1";
  if (!std::isfinite(v) || v != std::trunc(v)) return "it is not an integer";
  const int bits = dtype_bits(d);
  const double lo = is_signed_int(d) ? -std::ldexp(1.0, bits - 1) : 0.0;
  const double hi = std::ldexp(1.0, is_signed_int(d) ? bits - 1 : bits);  // exclusive
  if (v < lo || v >= hi) return "it is outside the range of " + std::string(dtype_name(d));
  return "";
}

// A rank-0 constant of a value already checked to fit `dtype`.
Tensor emit_scalar(CompilationContext& ctx, double value, DType dtype) {
  const Shape s(dtype);
  auto attr = mlir::DenseElementsAttr::get(tensor_type(&ctx.mlir_context(), s),
                                           llvm::ArrayRef<mlir::Attribute>{scalar_attr(ctx.builder(), dtype, value)});
  return wrap(ctx, mlir::arith::ConstantOp::create(ctx.builder(), ctx.loc(), attr), s);
}

// The scalar operand of `op` applied to tensor `t` (operators + - * / with a
// number): t's dtype, refused if the number does not fit it.
Tensor scalar_operand(const char* op, const Tensor& t, double v) {
  context_for(op, {&t});
  if (std::string why = unrepresentable(v, t.dtype()); !why.empty())
    fail(describe(op, {&t}) + " with the scalar " + fmt_number(v) + ": the scalar takes the tensor's dtype " +
         std::string(dtype_name(t.dtype())) + " and " + why +
         " (convert the tensor first, e.g. convert(x, DType::kF32), or pass a value that fits)");
  return emit_scalar(*CompilationContext::current(), v, t.dtype());
}

}  // namespace

// ---------------------------------------------------------------- constants

Tensor scalar(double value, DType dtype) {
  CompilationContext& ctx = CompilationContext::require_current("scalar");
  if (std::string why = unrepresentable(value, dtype); !why.empty())
    fail("scalar(" + fmt_number(value) + ", " + std::string(dtype_name(dtype)) + "): " + why);
  return emit_scalar(ctx, value, dtype);
}

Tensor full(const Shape& shape, double value) {
  CompilationContext& ctx = CompilationContext::require_current("full");
  if (std::string why = unrepresentable(value, shape.dtype()); !why.empty())
    fail("full(" + shape.to_string() + ", " + fmt_number(value) + "): " + why);
  OpBuilder& b = ctx.builder();
  Value c = scalar_constant(b, ctx.loc(), shape.dtype(), value);
  Value e = empty_tensor(ctx, shape);
  Value f = mlir::linalg::FillOp::create(b, ctx.loc(), ValueRange{c}, ValueRange{e}).getResult(0);
  return wrap(ctx, f, shape);
}

Tensor constant(const Shape& shape, std::span<const double> data) {
  CompilationContext& ctx = CompilationContext::require_current("constant");
  if (static_cast<int64_t>(data.size()) != shape.count())
    fail("constant: " + std::to_string(data.size()) + " values given for " + shape.to_string() + " (" +
         std::to_string(shape.count()) + " elements)");
  OpBuilder& b = ctx.builder();
  auto type = tensor_type(&ctx.mlir_context(), shape);
  llvm::SmallVector<mlir::Attribute> vals;
  vals.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    const double v = data[i];
    if (std::string why = unrepresentable(v, shape.dtype()); !why.empty())
      fail("constant(" + shape.to_string() + "): value " + std::to_string(i) + " (" + fmt_number(v) + "): " + why);
    vals.push_back(scalar_attr(b, shape.dtype(), v));
  }
  auto attr = mlir::DenseElementsAttr::get(type, vals);
  return wrap(ctx, mlir::arith::ConstantOp::create(b, ctx.loc(), type, attr), shape);
}

Tensor iota(int64_t n, DType dtype, Tag tag) {
  CompilationContext& ctx = CompilationContext::require_current("iota");
  if (is_bool(dtype)) fail("iota: bool dtype is not supported");
  if (n < 0) fail("iota: negative length " + std::to_string(n));
  Shape s = tag.empty() ? Shape(dtype, {n}) : Shape(dtype, {n}, {tag});
  std::vector<std::vector<int>> none;
  return emit_map(ctx, {}, none, s, [dtype](OpBuilder& nb, Location l, ValueRange) -> Value {
    Value idx = mlir::linalg::IndexOp::create(nb, l, 0);
    Value i64 = mlir::arith::IndexCastOp::create(nb, l, nb.getI64Type(), idx);
    return convert_scalar(nb, l, i64, DType::kI64, dtype);
  });
}

// ---------------------------------------------------------------- binary

Tensor add(const Tensor& a, const Tensor& b) {
  return arith_binary<mlir::arith::AddFOp, mlir::arith::AddIOp, mlir::arith::AddIOp>("add", a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return arith_binary<mlir::arith::SubFOp, mlir::arith::SubIOp, mlir::arith::SubIOp>("sub", a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return arith_binary<mlir::arith::MulFOp, mlir::arith::MulIOp, mlir::arith::MulIOp>("mul", a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  check_arith_operands("div", a, b, /*allow_bool=*/false);
  const DType d = a.dtype();
  const Kind k = kind_of(d);
  return emit_binary("div", a, b, d, [d, k](OpBuilder& nb, Location l, ValueRange v) -> Value {
    namespace ar = mlir::arith;
    if (k == Kind::kFloat) return ar::DivFOp::create(nb, l, v[0], v[1]);
    // Integer division never traps (x86 faults on x / 0 and INT_MIN / -1):
    // x / 0 = -1 (all bits set), INT_MIN / -1 = INT_MIN, as in XLA.
    Value zero = scalar_constant(nb, l, d, 0);
    Value one = scalar_constant(nb, l, d, 1);
    Value ones = ar::ConstantOp::create(
        nb, l, nb.getIntegerAttr(v[0].getType(), llvm::APInt::getAllOnes(static_cast<unsigned>(dtype_bits(d)))));
    Value by_zero = ar::CmpIOp::create(nb, l, ar::CmpIPredicate::eq, v[1], zero);
    Value safe = ar::SelectOp::create(nb, l, by_zero, one, v[1]);
    Value q;
    if (k == Kind::kSigned) {
      unsigned bits = static_cast<unsigned>(dtype_bits(d));
      Value min = ar::ConstantOp::create(nb, l, nb.getIntegerAttr(v[0].getType(), llvm::APInt::getSignedMinValue(bits)));
      Value overflow = ar::AndIOp::create(nb, l, ar::CmpIOp::create(nb, l, ar::CmpIPredicate::eq, v[0], min),
                                          ar::CmpIOp::create(nb, l, ar::CmpIPredicate::eq, safe, ones));
      safe = ar::SelectOp::create(nb, l, overflow, one, safe);  // INT_MIN / 1 = INT_MIN
      q = ar::DivSIOp::create(nb, l, v[0], safe);
    } else {
      q = ar::DivUIOp::create(nb, l, v[0], safe);
    }
    return ar::SelectOp::create(nb, l, by_zero, ones, q);
  });
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return arith_binary<mlir::arith::MaximumFOp, mlir::arith::MaxSIOp, mlir::arith::MaxUIOp>("maximum", a, b, true);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return arith_binary<mlir::arith::MinimumFOp, mlir::arith::MinSIOp, mlir::arith::MinUIOp>("minimum", a, b, true);
}
// ---------------------------------------------------------------- unary

Tensor neg(const Tensor& x) {
  context_for("neg", {&x});
  if (is_bool(x.dtype())) fail(describe("neg", {&x}) + ": not defined for bool tensors");
  DType d = x.dtype();
  return emit_unary("neg", x, d, [d](OpBuilder& nb, Location l, ValueRange v) -> Value {
    if (is_float(d)) return mlir::arith::NegFOp::create(nb, l, v[0]);
    return mlir::arith::SubIOp::create(nb, l, scalar_constant(nb, l, d, 0), v[0]);
  });
}

Tensor abs(const Tensor& x) {
  context_for("abs", {&x});
  DType d = x.dtype();
  if (is_unsigned_int(d) || is_bool(d)) return x;  // already non-negative
  return emit_unary("abs", x, d, [d](OpBuilder& nb, Location l, ValueRange v) -> Value {
    if (is_float(d)) return mlir::math::AbsFOp::create(nb, l, v[0]);
    return mlir::math::AbsIOp::create(nb, l, v[0]);
  });
}

Tensor exp(const Tensor& x) { return emit_float_unary<mlir::math::ExpOp>("exp", x); }
Tensor log(const Tensor& x) { return emit_float_unary<mlir::math::LogOp>("log", x); }
Tensor sqrt(const Tensor& x) { return emit_float_unary<mlir::math::SqrtOp>("sqrt", x); }
Tensor rsqrt(const Tensor& x) { return emit_float_unary<mlir::math::RsqrtOp>("rsqrt", x); }
Tensor tanh(const Tensor& x) { return emit_float_unary<mlir::math::TanhOp>("tanh", x); }

Tensor sigmoid(const Tensor& x) {
  context_for("sigmoid", {&x});
  require_float("sigmoid", x);
  DType d = x.dtype();
  // 1 / (1 + exp(-x)): exact at both tails (exp overflow gives 0, not NaN).
  return emit_unary("sigmoid", x, d, [d](OpBuilder& nb, Location l, ValueRange v) -> Value {
    Value one = scalar_constant(nb, l, d, 1.0);
    Value e = mlir::math::ExpOp::create(nb, l, mlir::arith::NegFOp::create(nb, l, v[0]));
    return mlir::arith::DivFOp::create(nb, l, one, mlir::arith::AddFOp::create(nb, l, one, e));
  });
}

Tensor relu(const Tensor& x) {
  context_for("relu", {&x});
  if (is_bool(x.dtype())) fail(describe("relu", {&x}) + ": not defined for bool tensors");
  DType d = x.dtype();
  Kind k = kind_of(d);
  if (k == Kind::kUnsigned) return x;
  return emit_unary("relu", x, d, [d, k](OpBuilder& nb, Location l, ValueRange v) -> Value {
    Value zero = scalar_constant(nb, l, d, 0);
    if (k == Kind::kFloat) return mlir::arith::MaximumFOp::create(nb, l, v[0], zero);
    return mlir::arith::MaxSIOp::create(nb, l, v[0], zero);
  });
}

// ---------------------------------------------------------------- comparisons

using FP = mlir::arith::CmpFPredicate;
using IP = mlir::arith::CmpIPredicate;
Tensor eq(const Tensor& a, const Tensor& b) { return compare("eq", a, b, FP::OEQ, IP::eq, IP::eq); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare("ne", a, b, FP::UNE, IP::ne, IP::ne); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare("lt", a, b, FP::OLT, IP::slt, IP::ult); }
Tensor le(const Tensor& a, const Tensor& b) { return compare("le", a, b, FP::OLE, IP::sle, IP::ule); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare("gt", a, b, FP::OGT, IP::sgt, IP::ugt); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare("ge", a, b, FP::OGE, IP::sge, IP::uge); }

Tensor select(const Tensor& cond, const Tensor& a, const Tensor& b) {
  CompilationContext& ctx = context_for("select", {&cond, &a, &b});
  if (!is_bool(cond.dtype()))
    fail(describe("select", {&cond, &a, &b}) + ": the condition must be bool, got " +
         std::string(dtype_name(cond.dtype())));
  require_same_dtype("select", {&a, &b});
  const Tensor* ops[] = {&cond, &a, &b};
  Alignment al = align_shapes("select", ops);
  return emit_map(ctx, ops, al.axis_map, shape_for("select", {&cond, &a, &b}, [&] { return al.result.with_dtype(a.dtype()); }),
                  [](OpBuilder& nb, Location l, ValueRange v) -> Value {
                    return mlir::arith::SelectOp::create(nb, l, v[0], v[1], v[2]);
                  });
}

Tensor convert(const Tensor& x, DType dtype) {
  context_for("convert", {&x});
  DType from = x.dtype();
  if (from == dtype) return x;
  return emit_unary("convert", x, dtype, [from, dtype](OpBuilder& nb, Location l, ValueRange v) -> Value {
    return convert_scalar(nb, l, v[0], from, dtype);
  });
}

// ---------------------------------------------------------------- operators

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_operand("add", a, b)); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar_operand("sub", a, b)); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar_operand("mul", a, b)); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar_operand("div", a, b)); }
Tensor operator+(double a, const Tensor& b) { return add(scalar_operand("add", b, a), b); }
Tensor operator-(double a, const Tensor& b) { return sub(scalar_operand("sub", b, a), b); }
Tensor operator*(double a, const Tensor& b) { return mul(scalar_operand("mul", b, a), b); }
Tensor operator/(double a, const Tensor& b) { return div(scalar_operand("div", b, a), b); }

}  // namespace radix
