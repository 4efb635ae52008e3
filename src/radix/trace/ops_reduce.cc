// Reductions: one linalg.generic with reduction iterators over the chosen axes,
// accumulating into a linalg.fill of the reduction's identity.
#include <limits>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;
using mlir::Value;

namespace {
enum class RK { kSum, kMax, kMin, kProd, kAll, kAny };

Value identity(mlir::OpBuilder& b, mlir::Location l, DType d, RK k) {
  if (k == RK::kSum || k == RK::kAny) return scalar_constant(b, l, d, 0);
  if (k == RK::kProd || k == RK::kAll) return scalar_constant(b, l, d, 1);
  mlir::Type et = element_type(b.getContext(), d);
  const bool is_max = k == RK::kMax;
  if (is_float(d)) {
    auto fe = llvm::cast<mlir::FloatType>(et);
    return mlir::arith::ConstantOp::create(
        b, l, b.getFloatAttr(et, llvm::APFloat::getInf(fe.getFloatSemantics(), /*Negative=*/is_max)));
  }
  unsigned bits = static_cast<unsigned>(dtype_bits(d));
  llvm::APInt v = is_signed_int(d) ? (is_max ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getSignedMaxValue(bits))
                                   : (is_max ? llvm::APInt::getMinValue(bits) : llvm::APInt::getMaxValue(bits));
  return mlir::arith::ConstantOp::create(b, l, b.getIntegerAttr(et, v));
}

Value combine(mlir::OpBuilder& b, mlir::Location l, DType d, RK k, Value x, Value acc) {
  namespace ar = mlir::arith;
  switch (k) {
    case RK::kSum:
      if (is_float(d)) return ar::AddFOp::create(b, l, x, acc);
      return ar::AddIOp::create(b, l, x, acc);
    case RK::kMax:
      if (is_float(d)) return ar::MaximumFOp::create(b, l, x, acc);
      if (is_signed_int(d)) return ar::MaxSIOp::create(b, l, x, acc);
      return ar::MaxUIOp::create(b, l, x, acc);
    case RK::kMin:
      if (is_float(d)) return ar::MinimumFOp::create(b, l, x, acc);
      if (is_signed_int(d)) return ar::MinSIOp::create(b, l, x, acc);
      return ar::MinUIOp::create(b, l, x, acc);
    case RK::kProd:
      if (is_float(d)) return ar::MulFOp::create(b, l, x, acc);
      return ar::MulIOp::create(b, l, x, acc);
    case RK::kAll: return ar::AndIOp::create(b, l, x, acc);
    case RK::kAny: return ar::OrIOp::create(b, l, x, acc);
  }
  return acc;
}

// Resolves and deduplicates axes; empty = all.
std::vector<bool> reduced_axes(const char* op, const Tensor& x, const Axes& axes) {
  std::vector<bool> red(static_cast<size_t>(x.rank()), axes.empty());
  for (const Axis& a : axes) {
    auto i = x.shape().find_axis(a);
    if (!i) fail(std::string(op) + ": " + x.shape().to_string() + ": axis " + a.to_string() + " does not exist");
    if (red[static_cast<size_t>(*i)])
      fail(std::string(op) + ": " + x.shape().to_string() + ": axis " + a.to_string() + " given twice");
    red[static_cast<size_t>(*i)] = true;
  }
  return red;
}

// A reduction generic's pieces over x's rank: the identity map of x, the map
// to the output (the kept axes, in order) and the iterator types
// (reduction where red[i]).
struct ReductionMaps {
  mlir::AffineMap in, out;
  llvm::SmallVector<mlir::utils::IteratorType> iters;
};
ReductionMaps reduction_maps(mlir::MLIRContext* mctx, const std::vector<bool>& red) {
  const unsigned r = static_cast<unsigned>(red.size());
  llvm::SmallVector<mlir::AffineExpr> out_exprs;
  ReductionMaps m;
  for (unsigned i = 0; i < r; ++i) {
    if (red[i]) {
      m.iters.push_back(mlir::utils::IteratorType::reduction);
    } else {
      m.iters.push_back(mlir::utils::IteratorType::parallel);
      out_exprs.push_back(mlir::getAffineDimExpr(i, mctx));
    }
  }
  m.in = mlir::AffineMap::getMultiDimIdentityMap(r, mctx);
  m.out = mlir::AffineMap::get(r, 0, out_exprs, mctx);
  return m;
}

Tensor reduce(const char* op, const Tensor& x, const Axes& axes, ReduceOptions opts, RK kind) {
  CompilationContext& ctx = context_for(op, {&x});
  if (is_bool(x.dtype()) && (kind == RK::kSum || kind == RK::kProd))
    fail(describe(op, {&x}) + ": not defined for bool tensors");
  if (!is_bool(x.dtype()) && (kind == RK::kAll || kind == RK::kAny))
    fail(describe(op, {&x}) + ": takes a bool tensor (compare first, e.g. ne(x, zeros))");
  std::vector<bool> red = reduced_axes(op, x, axes);
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Location l = ctx.loc();

  Shape out(x.dtype());
  {
    std::vector<int64_t> dims;
    std::vector<Tag> tags;
    for (int i = 0; i < x.rank(); ++i)
      if (!red[static_cast<size_t>(i)]) {
        dims.push_back(x.shape().dim(i));
        tags.push_back(x.shape().tag(i));
      }
    out = Shape(x.dtype(), std::span<const int64_t>(dims), std::span<const Tag>(tags));
  }
  const ReductionMaps rm = reduction_maps(mctx, red);
  llvm::SmallVector<mlir::AffineMap> maps = {rm.in, rm.out};
  DType d = x.dtype();
  Value init = identity(b, l, d, kind);
  Value filled = mlir::linalg::FillOp::create(b, l, mlir::ValueRange{init}, mlir::ValueRange{empty_tensor(ctx, out)})
                     .getResult(0);
  auto g = mlir::linalg::GenericOp::create(
      b, l, mlir::TypeRange{tensor_type(mctx, out)}, mlir::ValueRange{value_of(x)}, mlir::ValueRange{filled}, maps,
      rm.iters, [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        mlir::linalg::YieldOp::create(nb, nl, combine(nb, nl, d, kind, args[0], args[1]));
      });
  Tensor res = wrap(ctx, g.getResult(0), out);
  if (opts.keep_dims) {
    Shape kept = x.shape();
    for (int i = 0; i < x.rank(); ++i)
      if (red[static_cast<size_t>(i)]) kept = kept.with_dim(i, 1);
    res = reshape(res, kept.dims(), kept.tags());
  }
  return res;
}
}  // namespace

// Sums (and means) of 16-bit floats accumulate in f32 and round once, as
// JAX does: a long f16 sum stalls once the total dwarfs each term.
Tensor reduce_sum(const Tensor& x, const Axes& axes, ReduceOptions opts) {
  context_for("reduce_sum", {&x});
  if (is_half_float(x.dtype())) {
    reduced_axes("reduce_sum", x, axes);  // errors name the caller's shape, not the f32 copy
    return convert(reduce_sum(convert(x, DType::kF32), axes, opts), x.dtype());
  }
  return reduce("reduce_sum", x, axes, opts, RK::kSum);
}
Tensor reduce_max(const Tensor& x, const Axes& axes, ReduceOptions opts) { return reduce("reduce_max", x, axes, opts, RK::kMax); }
Tensor reduce_min(const Tensor& x, const Axes& axes, ReduceOptions opts) { return reduce("reduce_min", x, axes, opts, RK::kMin); }

Tensor reduce_mean(const Tensor& x, const Axes& axes, ReduceOptions opts) {
  context_for("reduce_mean", {&x});
  require_float("reduce_mean", x);
  std::vector<bool> red = reduced_axes("reduce_mean", x, axes);
  if (is_half_float(x.dtype())) return convert(reduce_mean(convert(x, DType::kF32), axes, opts), x.dtype());
  int64_t n = 1;
  for (int i = 0; i < x.rank(); ++i)
    if (red[static_cast<size_t>(i)]) n *= x.shape().dim(i);
  Tensor s = reduce("reduce_mean", x, axes, opts, RK::kSum);
  return s / static_cast<double>(n);
}

Tensor reduce_prod(const Tensor& x, const Axes& axes, ReduceOptions opts) {
  context_for("reduce_prod", {&x});
  if (is_half_float(x.dtype())) {
    reduced_axes("reduce_prod", x, axes);
    return convert(reduce_prod(convert(x, DType::kF32), axes, opts), x.dtype());
  }
  return reduce("reduce_prod", x, axes, opts, RK::kProd);
}
Tensor reduce_all(const Tensor& x, const Axes& axes, ReduceOptions opts) { return reduce("reduce_all", x, axes, opts, RK::kAll); }
Tensor reduce_any(const Tensor& x, const Axes& axes, ReduceOptions opts) { return reduce("reduce_any", x, axes, opts, RK::kAny); }

namespace {
Tensor arg_extremum(const char* op, const Tensor& x, const Axis& axis, DType index_dtype, bool is_max) {
  CompilationContext& ctx = context_for(op, {&x});
  if (is_bool(x.dtype())) fail(describe(op, {&x}) + ": not defined for bool tensors (convert to an integer first)");
  if (is_float(index_dtype) || is_bool(index_dtype))
    fail(describe(op, {&x}) + ": the index dtype must be an integer, got " + std::string(dtype_name(index_dtype)));
  const int a = x.axis(axis);
  const int64_t n = x.dim(a);
  const int bits = dtype_bits(index_dtype) - (is_signed_int(index_dtype) ? 1 : 0);
  if (bits < 63 && n > (int64_t{1} << bits))
    fail(describe(op, {&x}) + ": axis " + axis.to_string() + " of size " + std::to_string(n) + " does not fit " +
         std::string(dtype_name(index_dtype)) + " indices");
  if (n == 0) fail(describe(op, {&x}) + ": axis " + axis.to_string() + " is empty");
  const Shape ishape = shape_for(op, {&x}, [&] { return x.shape().drop_axis(a).with_dtype(index_dtype); });
  return first_extremum_index(ctx, x, a, is_max, ishape);
}
}  // namespace

// Two passes, each a plain reduction the schedule vectorizes: the extremum
// along the axis (maximumf / minimumf: a NaN propagates), then the least
// index whose element equals it (a NaN extremum matches the NaNs), a min
// over the indices. Ties keep the first index, a NaN beats every number
// (NumPy's argmax / argmin return the first NaN), and -0 / +0 count as
// equal. Why not one pass carrying (value, index): that generic did not
// vectorize, a scalar loop of ~5 cycles per element (a greedy sampler's
// argmax over 32000 logits took ~45 us of each stories15M decode step on a
// Zen 3 core). The match is "v equals the extremum or v is a NaN" (not "both
// NaN"): the extremum's NaN test and the mask logic it needed made LLVM pack
// AVX2's two 8-lane masks to bytes and back in every step; without it, with
// the indices a constant (radix-materialize-reduction-indices), argmax over
// 32000 on one Zen 3 core 13.1 -> 7.7 us.
Tensor detail::first_extremum_index(CompilationContext& ctx, const Tensor& x, int axis, bool is_max, const Shape& out) {
  const Tensor best = reduce(is_max ? "argmax" : "argmin", x, {Axis(axis)}, ReduceOptions{}, is_max ? RK::kMax : RK::kMin);
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Location l = ctx.loc();
  const DType d = x.dtype(), id = out.dtype();
  // Every element is an index's candidate; none matching keeps the init (the
  // largest index value), which cannot happen: the extremum is an element.
  Value iinit = mlir::linalg::FillOp::create(b, l, mlir::ValueRange{identity(b, l, id, RK::kMin)},
                                             mlir::ValueRange{empty_tensor(ctx, out)}).getResult(0);
  std::vector<bool> red(static_cast<size_t>(x.rank()), false);
  red[static_cast<size_t>(axis)] = true;
  const ReductionMaps rm = reduction_maps(mctx, red);
  llvm::SmallVector<mlir::AffineMap> maps = {rm.in, rm.out, rm.out};
  auto g = mlir::linalg::GenericOp::create(
      b, l, mlir::TypeRange{tensor_type(mctx, out)}, mlir::ValueRange{value_of(x), value_of(best)}, mlir::ValueRange{iinit},
      maps, rm.iters, [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        namespace ar = mlir::arith;
        Value v = args[0], e = args[1], acc = args[2];
        Value hit;
        if (is_float(d)) {
          // v == e, or v is a NaN: the extremum propagates NaNs, so a row
          // with a NaN has a NaN extremum (no v equals it, its NaNs hit)
          // and a row without has none to hit.
          Value v_nan = ar::CmpFOp::create(nb, nl, ar::CmpFPredicate::UNO, v, v);
          hit = ar::OrIOp::create(nb, nl, ar::CmpFOp::create(nb, nl, ar::CmpFPredicate::OEQ, v, e), v_nan);
        } else {
          hit = ar::CmpIOp::create(nb, nl, ar::CmpIPredicate::eq, v, e);
        }
        Value i_val = ar::IndexCastOp::create(nb, nl, acc.getType(),
                                              mlir::linalg::IndexOp::create(nb, nl, static_cast<uint64_t>(axis)));
        Value none = identity(nb, nl, id, RK::kMin);
        mlir::linalg::YieldOp::create(
            nb, nl, combine(nb, nl, id, RK::kMin, ar::SelectOp::create(nb, nl, hit, i_val, none).getResult(), acc));
      });
  return wrap(ctx, g.getResult(0), out);
}

Tensor argmax(const Tensor& x, const Axis& axis, DType index_dtype) { return arg_extremum("argmax", x, axis, index_dtype, true); }
Tensor argmin(const Tensor& x, const Axis& axis, DType index_dtype) { return arg_extremum("argmin", x, axis, index_dtype, false); }

}  // namespace radix
