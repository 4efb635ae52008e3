// Elementwise math (ops_math.h): each op is one emit_unary / emit_binary with
// a scalar body, so fusion and the vectorizing schedule treat it like add.
#include "radix/trace/ops_math.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;
using mlir::Location;
using mlir::OpBuilder;
using mlir::Value;
using mlir::ValueRange;
namespace ar = mlir::arith;

namespace {

Value int_const(OpBuilder& b, Location l, mlir::Type t, const llvm::APInt& v) {
  return ar::ConstantOp::create(b, l, b.getIntegerAttr(t, v));
}

// Integer a ^ b by squaring over every bit of b (b >= 0), XLA's values for
// b < 0. Unrolled: no loop inside the elementwise body.
Value int_pow(OpBuilder& b, Location l, Value base, Value e, DType d) {
  mlir::Type t = base.getType();
  const unsigned bits = static_cast<unsigned>(dtype_bits(d));
  Value one = int_const(b, l, t, llvm::APInt(bits, 1)), zero = int_const(b, l, t, llvm::APInt(bits, 0));
  Value r = one, p = base, k = e;
  for (unsigned i = 0; i < bits; ++i) {
    Value bit = ar::CmpIOp::create(b, l, ar::CmpIPredicate::ne, ar::AndIOp::create(b, l, k, one), zero);
    r = ar::SelectOp::create(b, l, bit, ar::MulIOp::create(b, l, r, p), r);
    p = ar::MulIOp::create(b, l, p, p);
    k = ar::ShRUIOp::create(b, l, k, one);
  }
  if (!is_signed_int(d)) return r;
  // b < 0: 1 -> 1, -1 -> +-1 by b's parity, anything else -> 0.
  Value neg = ar::CmpIOp::create(b, l, ar::CmpIPredicate::slt, e, zero);
  Value minus_one = int_const(b, l, t, llvm::APInt::getAllOnes(bits));
  Value odd = ar::CmpIOp::create(b, l, ar::CmpIPredicate::ne, ar::AndIOp::create(b, l, e, one), zero);
  Value for_neg = ar::SelectOp::create(
      b, l, ar::CmpIOp::create(b, l, ar::CmpIPredicate::eq, base, one), one,
      ar::SelectOp::create(b, l, ar::CmpIOp::create(b, l, ar::CmpIPredicate::eq, base, minus_one),
                           ar::SelectOp::create(b, l, odd, minus_one, one), zero));
  return ar::SelectOp::create(b, l, neg, for_neg, r);
}

// Integer a % b (sign of a) that never traps: x % 0 = x, INT_MIN % -1 = 0.
Value int_rem(OpBuilder& b, Location l, Value a, Value d, DType dt) {
  mlir::Type t = a.getType();
  const unsigned bits = static_cast<unsigned>(dtype_bits(dt));
  Value zero = int_const(b, l, t, llvm::APInt(bits, 0)), one = int_const(b, l, t, llvm::APInt(bits, 1));
  Value by_zero = ar::CmpIOp::create(b, l, ar::CmpIPredicate::eq, d, zero);
  Value safe = ar::SelectOp::create(b, l, by_zero, one, d);
  Value r;
  if (is_signed_int(dt)) {
    // INT_MIN % -1 overflows in the hardware's division; its value is 0.
    Value minus_one = int_const(b, l, t, llvm::APInt::getAllOnes(bits));
    safe = ar::SelectOp::create(b, l, ar::CmpIOp::create(b, l, ar::CmpIPredicate::eq, safe, minus_one), one, safe);
    r = ar::RemSIOp::create(b, l, a, safe);
  } else {
    r = ar::RemUIOp::create(b, l, a, safe);
  }
  return ar::SelectOp::create(b, l, by_zero, a, r);
}

Tensor rem_op(const char* op, const Tensor& a, const Tensor& b, bool floor_mode) {
  context_for(op, {&a, &b});
  require_same_dtype(op, {&a, &b});
  const DType d = a.dtype();
  if (is_bool(d)) fail(describe(op, {&a, &b}) + ": not defined for bool tensors");
  return emit_binary(op, a, b, d, [d, floor_mode](OpBuilder& nb, Location l, ValueRange v) -> Value {
    Value r = is_float(d) ? Value(ar::RemFOp::create(nb, l, v[0], v[1])) : int_rem(nb, l, v[0], v[1], d);
    if (!floor_mode || is_unsigned_int(d)) return r;
    // Python's remainder: when r != 0 and its sign differs from b's, add b.
    Value zero = scalar_constant(nb, l, d, 0);
    Value r_neg, b_neg, nonzero;
    if (is_float(d)) {
      r_neg = ar::CmpFOp::create(nb, l, ar::CmpFPredicate::OLT, r, zero);
      b_neg = ar::CmpFOp::create(nb, l, ar::CmpFPredicate::OLT, v[1], zero);
      nonzero = ar::CmpFOp::create(nb, l, ar::CmpFPredicate::ONE, r, zero);
    } else {
      r_neg = ar::CmpIOp::create(nb, l, ar::CmpIPredicate::slt, r, zero);
      b_neg = ar::CmpIOp::create(nb, l, ar::CmpIPredicate::slt, v[1], zero);
      nonzero = ar::CmpIOp::create(nb, l, ar::CmpIPredicate::ne, r, zero);
    }
    Value fix = ar::AndIOp::create(nb, l, nonzero, ar::XOrIOp::create(nb, l, r_neg, b_neg));
    Value adjusted = is_float(d) ? Value(ar::AddFOp::create(nb, l, r, v[1])) : Value(ar::AddIOp::create(nb, l, r, v[1]));
    return ar::SelectOp::create(nb, l, fix, adjusted, r);
  });
}

template <class IntOp>
Tensor bitwise(const char* op, const Tensor& a, const Tensor& b) {
  context_for(op, {&a, &b});
  require_same_dtype(op, {&a, &b});
  require_int(op, a, /*allow_bool=*/true);
  return emit_binary(op, a, b, a.dtype(), [](OpBuilder& nb, Location l, ValueRange v) -> Value {
    return IntOp::create(nb, l, v[0], v[1]);
  });
}

template <class IntOp>
Tensor logical(const char* op, const Tensor& a, const Tensor& b) {
  context_for(op, {&a, &b});
  if (!is_bool(a.dtype()) || !is_bool(b.dtype()))
    fail(describe(op, {&a, &b}) + ": logical ops take bool tensors (compare or convert first)");
  return emit_binary(op, a, b, DType::kBool, [](OpBuilder& nb, Location l, ValueRange v) -> Value {
    return IntOp::create(nb, l, v[0], v[1]);
  });
}

enum class Shift { kLeft, kLogical, kArithmetic };
Tensor shift(const char* op, const Tensor& a, const Tensor& b, Shift kind) {
  context_for(op, {&a, &b});
  require_same_dtype(op, {&a, &b});
  require_int(op, a);
  const DType d = a.dtype();
  return emit_binary(op, a, b, d, [d, kind](OpBuilder& nb, Location l, ValueRange v) -> Value {
    const unsigned bits = static_cast<unsigned>(dtype_bits(d));
    mlir::Type t = v[0].getType();
    // Out of range: b < 0 (as unsigned, huge) or b >= bits.
    Value width = int_const(nb, l, t, llvm::APInt(bits, bits));
    Value out = ar::CmpIOp::create(nb, l, ar::CmpIPredicate::uge, v[1], width);
    Value zero = int_const(nb, l, t, llvm::APInt(bits, 0));
    Value safe = ar::SelectOp::create(nb, l, out, zero, v[1]);
    switch (kind) {
      case Shift::kLeft:
        return ar::SelectOp::create(nb, l, out, zero, ar::ShLIOp::create(nb, l, v[0], safe));
      case Shift::kLogical:
        return ar::SelectOp::create(nb, l, out, zero, ar::ShRUIOp::create(nb, l, v[0], safe));
      case Shift::kArithmetic: {
        Value all = ar::SelectOp::create(nb, l, out, int_const(nb, l, t, llvm::APInt(bits, bits - 1)), safe);
        return ar::ShRSIOp::create(nb, l, v[0], all);
      }
    }
    return v[0];
  });
}

Tensor float_predicate(const char* op, const Tensor& x, ar::CmpFPredicate pred, bool inf_test, bool int_value) {
  context_for(op, {&x});
  const DType d = x.dtype();
  if (!is_float(d)) {
    return emit_unary(op, x, DType::kBool, [int_value](OpBuilder& nb, Location l, ValueRange) -> Value {
      return ar::ConstantOp::create(nb, l, nb.getIntegerAttr(nb.getI1Type(), int_value ? 1 : 0));
    });
  }
  return emit_unary(op, x, DType::kBool, [=](OpBuilder& nb, Location l, ValueRange v) -> Value {
    if (!inf_test) return ar::CmpFOp::create(nb, l, pred, v[0], v[0]);  // NaN: x != x
    // |x| == inf (is_inf) or |x| < inf (is_finite; false for NaN).
    Value a = mlir::math::AbsFOp::create(nb, l, v[0]);
    Value inf = ar::ConstantOp::create(
        nb, l, nb.getFloatAttr(v[0].getType(),
                               llvm::APFloat::getInf(llvm::cast<mlir::FloatType>(v[0].getType()).getFloatSemantics())));
    return ar::CmpFOp::create(nb, l, pred, a, inf);
  });
}

}  // namespace

// ---------------------------------------------------------------- arithmetic

Tensor pow(const Tensor& a, const Tensor& b) {
  context_for("pow", {&a, &b});
  const DType da = a.dtype(), db = b.dtype();
  if (is_bool(da) || is_bool(db)) fail(describe("pow", {&a, &b}) + ": not defined for bool tensors");
  if (is_float(da) && is_float(db) && da != db)
    fail(describe("pow", {&a, &b}) + ": float operands must share one dtype (convert one of them first)");
  if (!is_float(da) && da != db)
    fail(describe("pow", {&a, &b}) + ": an integer base needs an exponent of the same dtype");
  return emit_binary("pow", a, b, da, [da, db](OpBuilder& nb, Location l, ValueRange v) -> Value {
    if (!is_float(da)) return int_pow(nb, l, v[0], v[1], da);
    Value e = v[1];
    if (!is_float(db))
      e = is_signed_int(db) ? Value(ar::SIToFPOp::create(nb, l, v[0].getType(), e))
                            : Value(ar::UIToFPOp::create(nb, l, v[0].getType(), e));
    return mlir::math::PowFOp::create(nb, l, v[0], e);
  });
}

Tensor fmod(const Tensor& a, const Tensor& b) { return rem_op("fmod", a, b, false); }
Tensor remainder(const Tensor& a, const Tensor& b) { return rem_op("remainder", a, b, true); }

Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  context_for("clamp", {&x, &lo, &hi});
  require_same_dtype("clamp", {&x, &lo, &hi});
  Tensor t = maximum(x, lo);
  return minimum(t, hi);
}

Tensor clamp(const Tensor& x, double lo, double hi) {
  context_for("clamp", {&x});
  if (lo > hi) fail(describe("clamp", {&x}) + ": lo " + std::to_string(lo) + " is above hi " + std::to_string(hi));
  return clamp(x, scalar(lo, x.dtype()), scalar(hi, x.dtype()));
}

Tensor sign(const Tensor& x) {
  context_for("sign", {&x});
  const DType d = x.dtype();
  if (is_bool(d)) fail(describe("sign", {&x}) + ": not defined for bool tensors");
  return emit_unary("sign", x, d, [d](OpBuilder& nb, Location l, ValueRange v) -> Value {
    Value zero = scalar_constant(nb, l, d, 0), one = scalar_constant(nb, l, d, 1);
    if (is_unsigned_int(d))
      return ar::SelectOp::create(nb, l, ar::CmpIOp::create(nb, l, ar::CmpIPredicate::ne, v[0], zero), one, zero);
    Value minus = is_float(d) ? scalar_constant(nb, l, d, -1)
                              : int_const(nb, l, v[0].getType(), llvm::APInt::getAllOnes(static_cast<unsigned>(dtype_bits(d))));
    Value pos, neg;
    if (is_float(d)) {
      pos = ar::CmpFOp::create(nb, l, ar::CmpFPredicate::OGT, v[0], zero);
      neg = ar::CmpFOp::create(nb, l, ar::CmpFPredicate::OLT, v[0], zero);
    } else {
      pos = ar::CmpIOp::create(nb, l, ar::CmpIPredicate::sgt, v[0], zero);
      neg = ar::CmpIOp::create(nb, l, ar::CmpIPredicate::slt, v[0], zero);
    }
    // Neither: 0, -0 or NaN, returned as is for floats.
    return ar::SelectOp::create(nb, l, pos, one, ar::SelectOp::create(nb, l, neg, minus, is_float(d) ? v[0] : zero));
  });
}

// ---------------------------------------------------------------- rounding

namespace {
template <class MathOp>
Tensor rounding(const char* op, const Tensor& x) {
  context_for(op, {&x});
  if (!is_float(x.dtype())) return x;  // integers are already whole
  return emit_float_unary<MathOp>(op, x);
}
}  // namespace

Tensor floor(const Tensor& x) { return rounding<mlir::math::FloorOp>("floor", x); }
Tensor ceil(const Tensor& x) { return rounding<mlir::math::CeilOp>("ceil", x); }
Tensor round(const Tensor& x, RoundMode mode) {
  return mode == RoundMode::kHalfToEven ? rounding<mlir::math::RoundEvenOp>("round", x)
                                        : rounding<mlir::math::RoundOp>("round", x);
}

// ---------------------------------------------------------------- special functions

Tensor sin(const Tensor& x) { return emit_float_unary<mlir::math::SinOp>("sin", x); }
Tensor cos(const Tensor& x) { return emit_float_unary<mlir::math::CosOp>("cos", x); }
Tensor tan(const Tensor& x) { return emit_float_unary<mlir::math::TanOp>("tan", x); }
Tensor exp2(const Tensor& x) { return emit_float_unary<mlir::math::Exp2Op>("exp2", x); }
Tensor expm1(const Tensor& x) { return emit_float_unary<mlir::math::ExpM1Op>("expm1", x); }
Tensor log1p(const Tensor& x) { return emit_float_unary<mlir::math::Log1pOp>("log1p", x); }
Tensor erf(const Tensor& x) { return emit_float_unary<mlir::math::ErfOp>("erf", x); }

// ---------------------------------------------------------------- predicates

Tensor is_finite(const Tensor& x) { return float_predicate("is_finite", x, ar::CmpFPredicate::OLT, true, true); }
Tensor is_nan(const Tensor& x) { return float_predicate("is_nan", x, ar::CmpFPredicate::UNO, false, false); }
Tensor is_inf(const Tensor& x) { return float_predicate("is_inf", x, ar::CmpFPredicate::OEQ, true, false); }

// ---------------------------------------------------------------- bitwise

Tensor bitwise_and(const Tensor& a, const Tensor& b) { return bitwise<ar::AndIOp>("bitwise_and", a, b); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return bitwise<ar::OrIOp>("bitwise_or", a, b); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return bitwise<ar::XOrIOp>("bitwise_xor", a, b); }
Tensor bitwise_not(const Tensor& x) {
  context_for("bitwise_not", {&x});
  require_int("bitwise_not", x, /*allow_bool=*/true);
  const unsigned bits = is_bool(x.dtype()) ? 1u : static_cast<unsigned>(dtype_bits(x.dtype()));
  return emit_unary("bitwise_not", x, x.dtype(), [bits](OpBuilder& nb, Location l, ValueRange v) -> Value {
    return ar::XOrIOp::create(nb, l, v[0], int_const(nb, l, v[0].getType(), llvm::APInt::getAllOnes(bits)));
  });
}
Tensor shift_left(const Tensor& a, const Tensor& b) { return shift("shift_left", a, b, Shift::kLeft); }
Tensor shift_right_logical(const Tensor& a, const Tensor& b) {
  return shift("shift_right_logical", a, b, Shift::kLogical);
}
Tensor shift_right_arithmetic(const Tensor& a, const Tensor& b) {
  return shift("shift_right_arithmetic", a, b, Shift::kArithmetic);
}
Tensor popcount(const Tensor& x) {
  context_for("popcount", {&x});
  require_int("popcount", x);
  return emit_unary("popcount", x, x.dtype(), [](OpBuilder& nb, Location l, ValueRange v) -> Value {
    return mlir::math::CtPopOp::create(nb, l, v[0]);
  });
}
Tensor count_leading_zeros(const Tensor& x) {
  context_for("count_leading_zeros", {&x});
  require_int("count_leading_zeros", x);
  return emit_unary("count_leading_zeros", x, x.dtype(), [](OpBuilder& nb, Location l, ValueRange v) -> Value {
    return mlir::math::CountLeadingZerosOp::create(nb, l, v[0]);
  });
}
Tensor bitcast(const Tensor& x, DType dtype) {
  context_for("bitcast", {&x});
  if (is_bool(x.dtype()) || is_bool(dtype) || dtype_bits(x.dtype()) != dtype_bits(dtype))
    fail(describe("bitcast", {&x}) + " to " + std::string(dtype_name(dtype)) +
         ": needs two non-bool dtypes of the same bit width");
  if (dtype == x.dtype()) return x;
  return emit_unary("bitcast", x, dtype, [dtype](OpBuilder& nb, Location l, ValueRange v) -> Value {
    mlir::Type to = element_type(nb.getContext(), dtype);
    if (to == v[0].getType()) return v[0];  // i32 <-> u32: the same MLIR type
    return ar::BitcastOp::create(nb, l, to, v[0]);
  });
}

// ---------------------------------------------------------------- logical

Tensor logical_and(const Tensor& a, const Tensor& b) { return logical<ar::AndIOp>("logical_and", a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return logical<ar::OrIOp>("logical_or", a, b); }
Tensor logical_not(const Tensor& x) {
  context_for("logical_not", {&x});
  if (!is_bool(x.dtype())) fail(describe("logical_not", {&x}) + ": takes a bool tensor");
  return bitwise_not(x);
}

}  // namespace radix
