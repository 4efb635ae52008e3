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
enum class RK { kSum, kMax, kMin };

Value identity(mlir::OpBuilder& b, mlir::Location l, DType d, RK k) {
  if (k == RK::kSum) return scalar_constant(b, l, d, 0);
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

Tensor reduce(const char* op, const Tensor& x, const Axes& axes, ReduceOptions opts, RK kind) {
  CompilationContext& ctx = context_for(op, {&x});
  if (is_bool(x.dtype()) && kind == RK::kSum) fail(describe(op, {&x}) + ": not defined for bool tensors");
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
  llvm::SmallVector<mlir::AffineExpr> out_exprs;
  llvm::SmallVector<mlir::utils::IteratorType> iters;
  for (int i = 0; i < x.rank(); ++i) {
    if (red[static_cast<size_t>(i)]) {
      iters.push_back(mlir::utils::IteratorType::reduction);
    } else {
      iters.push_back(mlir::utils::IteratorType::parallel);
      out_exprs.push_back(mlir::getAffineDimExpr(static_cast<unsigned>(i), mctx));
    }
  }
  unsigned r = static_cast<unsigned>(x.rank());
  llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::getMultiDimIdentityMap(r, mctx),
                                             mlir::AffineMap::get(r, 0, out_exprs, mctx)};
  DType d = x.dtype();
  Value init = identity(b, l, d, kind);
  Value filled = mlir::linalg::FillOp::create(b, l, mlir::ValueRange{init}, mlir::ValueRange{empty_tensor(ctx, out)})
                     .getResult(0);
  auto g = mlir::linalg::GenericOp::create(
      b, l, mlir::TypeRange{tensor_type(mctx, out)}, mlir::ValueRange{value_of(x)}, mlir::ValueRange{filled}, maps,
      iters, [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
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

}  // namespace radix
