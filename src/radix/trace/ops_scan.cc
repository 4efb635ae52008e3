// Cumulative ops and the generic reduce (ops_scan.h).
//
// A cumulative op views x as [outer, n, inner] (n along the axis). With
// inner > 1 an scf.for over n carries the running value as an
// [outer, 1, inner] tensor and the result, and per step combines one slice of
// x into the running value (an elementwise linalg.generic writing the carried
// tensor in place) and inserts it into the result; along the innermost axis
// (inner = 1) each contiguous line is scanned by a loop carrying a scalar.
// Either way the loops bufferize without copies and no transpose is needed.
//
// reduce traces the user's body once inside the linalg.generic region on
// rank-0 tensors wrapping the region's scalars, then rewrites the rank-0 ops
// it emitted into scalar ops (trace_scalar_fn, shared with scatter's user
// combination).
#include "radix/trace/ops_scan.h"

#include <string>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"
#include "radix/trace/scalar_body.h"

namespace radix {

using namespace detail;
using mlir::Value;
using mlir::ValueRange;
namespace ar = mlir::arith;

// ---------------------------------------------------------------- shape inference
namespace infer {

Shape cumulative(const char* op, const Shape& x, const Axis& axis) {
  if (!x.find_axis(axis))
    fail(std::string(op) + "(" + x.to_string() + "): axis " + axis.to_string() + " does not exist");
  if (is_bool(x.dtype()))
    fail(std::string(op) + "(" + x.to_string() + "): not defined for bool tensors (convert to an integer first)");
  return x;
}

Shape reduce(const Shape& x, const std::vector<Axis>& axes, const Shape& init) {
  const std::string what = "reduce(" + x.to_string() + ", " + init.to_string() + ")";
  if (init.rank() != 0) fail(what + ": the init value must be a rank-0 tensor");
  std::vector<bool> red(static_cast<size_t>(x.rank()), axes.empty());
  for (const Axis& a : axes) {
    auto i = x.find_axis(a);
    if (!i) fail(what + ": axis " + a.to_string() + " does not exist in " + x.to_string());
    if (red[static_cast<size_t>(*i)]) fail(what + ": axis " + a.to_string() + " given twice");
    red[static_cast<size_t>(*i)] = true;
  }
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  for (int i = 0; i < x.rank(); ++i)
    if (!red[static_cast<size_t>(i)]) {
      dims.push_back(x.dim(i));
      tags.push_back(x.tag(i));
    }
  return Shape(init.dtype(), std::span<const int64_t>(dims), std::span<const Tag>(tags));
}

}  // namespace infer

// ---------------------------------------------------------------- cumulative ops
namespace {

enum class ScanKind { kSum, kProd, kMax, kMin };

Value scan_identity(mlir::OpBuilder& b, mlir::Location l, DType d, ScanKind k) {
  if (k == ScanKind::kSum) return scalar_constant(b, l, d, 0);
  if (k == ScanKind::kProd) return scalar_constant(b, l, d, 1);
  mlir::Type et = element_type(b.getContext(), d);
  const bool is_max = k == ScanKind::kMax;
  if (is_float(d)) {
    auto fe = llvm::cast<mlir::FloatType>(et);
    return ar::ConstantOp::create(b, l, b.getFloatAttr(et, llvm::APFloat::getInf(fe.getFloatSemantics(), is_max)));
  }
  const unsigned bits = static_cast<unsigned>(dtype_bits(d));
  llvm::APInt v = is_signed_int(d) ? (is_max ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getSignedMaxValue(bits))
                                   : (is_max ? llvm::APInt::getMinValue(bits) : llvm::APInt::getMaxValue(bits));
  return ar::ConstantOp::create(b, l, b.getIntegerAttr(et, v));
}

Value scan_combine(mlir::OpBuilder& b, mlir::Location l, DType d, ScanKind k, Value acc, Value x) {
  const bool f = is_float(d), s = is_signed_int(d);
  switch (k) {
    case ScanKind::kSum: return f ? Value(ar::AddFOp::create(b, l, acc, x)) : Value(ar::AddIOp::create(b, l, acc, x));
    case ScanKind::kProd: return f ? Value(ar::MulFOp::create(b, l, acc, x)) : Value(ar::MulIOp::create(b, l, acc, x));
    case ScanKind::kMax:
      if (f) return ar::MaximumFOp::create(b, l, acc, x);
      return s ? Value(ar::MaxSIOp::create(b, l, acc, x)) : Value(ar::MaxUIOp::create(b, l, acc, x));
    case ScanKind::kMin:
      if (f) return ar::MinimumFOp::create(b, l, acc, x);
      return s ? Value(ar::MinSIOp::create(b, l, acc, x)) : Value(ar::MinUIOp::create(b, l, acc, x));
  }
  return acc;
}

Tensor cumulative(const char* op, const Tensor& x, const Axis& axis, ScanOptions o, ScanKind kind) {
  CompilationContext& ctx = context_for(op, {&x});
  infer::cumulative(op, x.shape(), axis);
  if (is_half_float(x.dtype())) return convert(cumulative(op, convert(x, DType::kF32), axis, o, kind), x.dtype());
  const int a = x.axis(axis);
  const int64_t n = x.dim(a);
  if (x.shape().count() == 0) return x;
  ctx.mlir_context().getOrLoadDialect<mlir::scf::SCFDialect>();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= x.dim(i);
  for (int i = a + 1; i < x.rank(); ++i) inner *= x.dim(i);
  const DType d = x.dtype();
  mlir::OpBuilder& b = ctx.builder();
  mlir::Location l = ctx.loc();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  Value c0 = ar::ConstantIndexOp::create(b, l, 0), c1 = ar::ConstantIndexOp::create(b, l, 1);
  Value cn = ar::ConstantIndexOp::create(b, l, n), last = ar::ConstantIndexOp::create(b, l, n - 1);
  auto position = [&](mlir::OpBuilder& nb, mlir::Location nl, Value i) -> Value {
    return o.reverse ? Value(ar::SubIOp::create(nb, nl, last, i)) : i;
  };
  Value result;
  if (inner == 1) {
    // The innermost axis: each line is contiguous, so scan it element by
    // element with the running value as a loop-carried scalar.
    const Shape s2(d, {outer, n});
    Value xv = value_of(reshape(x, {outer, n}));
    auto rows = mlir::scf::ForOp::create(
        b, l, c0, ar::ConstantIndexOp::create(b, l, outer), c1, ValueRange{empty_tensor(ctx, s2)},
        [&](mlir::OpBuilder& nb, mlir::Location nl, Value r, ValueRange st) {
          Value init = scan_identity(nb, nl, d, kind);
          auto line = mlir::scf::ForOp::create(
              nb, nl, c0, cn, c1, ValueRange{init, st[0]},
              [&](mlir::OpBuilder& ib, mlir::Location il, Value i, ValueRange acc) {
                Value at = position(ib, il, i);
                Value v = mlir::tensor::ExtractOp::create(ib, il, xv, ValueRange{r, at});
                Value next = scan_combine(ib, il, d, kind, acc[0], v);
                Value out = mlir::tensor::InsertOp::create(ib, il, o.exclusive ? acc[0] : next, acc[1], ValueRange{r, at});
                mlir::scf::YieldOp::create(ib, il, ValueRange{next, out});
              });
          mlir::scf::YieldOp::create(nb, nl, line.getResult(1));
        });
    result = rows.getResult(0);
  } else {
    // x as [outer, n, inner] ([n, inner] when outer = 1): the running value
    // is an [outer, 1, inner] tensor (runs of `inner` contiguous elements)
    // combined with one slice of x per step by an elementwise linalg.generic
    // that writes it in place.
    const bool two = outer == 1;
    const unsigned rank = two ? 2 : 3;
    auto dims = [&](int64_t mid) {
      return two ? std::vector<int64_t>{mid, inner} : std::vector<int64_t>{outer, mid, inner};
    };
    const Shape run_shape(d, std::span<const int64_t>(dims(1))), all_shape(d, std::span<const int64_t>(dims(n)));
    const std::vector<int64_t> all_dims = dims(n);
    Value xv = value_of(reshape(x, std::span<const int64_t>(all_dims)));
    Value run0 = mlir::linalg::FillOp::create(b, l, ValueRange{scan_identity(b, l, d, kind)},
                                              ValueRange{empty_tensor(ctx, run_shape)}).getResult(0);
    auto run_t = tensor_type(mctx, run_shape);
    llvm::SmallVector<mlir::AffineMap> maps(2, mlir::AffineMap::getMultiDimIdentityMap(rank, mctx));
    llvm::SmallVector<mlir::utils::IteratorType> iters(rank, mlir::utils::IteratorType::parallel);
    auto loop = mlir::scf::ForOp::create(
        b, l, c0, cn, c1, ValueRange{run0, empty_tensor(ctx, all_shape)},
        [&](mlir::OpBuilder& nb, mlir::Location nl, Value i, ValueRange st) {
          llvm::SmallVector<mlir::OpFoldResult> at;
          if (!two) at.push_back(nb.getIndexAttr(0));
          at.push_back(position(nb, nl, i));
          at.push_back(nb.getIndexAttr(0));
          llvm::SmallVector<mlir::OpFoldResult> sizes, ones;
          for (int64_t v : dims(1)) {
            sizes.push_back(nb.getIndexAttr(v));
            ones.push_back(nb.getIndexAttr(1));
          }
          Value xs = mlir::tensor::ExtractSliceOp::create(nb, nl, run_t, xv, at, sizes, ones);
          // Exclusive: the running value before this step joins the result.
          Value out = st[1];
          if (o.exclusive) out = mlir::tensor::InsertSliceOp::create(nb, nl, st[0], out, at, sizes, ones);
          Value next = mlir::linalg::GenericOp::create(
                           nb, nl, mlir::TypeRange{run_t}, ValueRange{xs}, ValueRange{st[0]}, maps, iters,
                           [&](mlir::OpBuilder& gb, mlir::Location gl, ValueRange args) {
                             mlir::linalg::YieldOp::create(gb, gl, scan_combine(gb, gl, d, kind, args[1], args[0]));
                           })
                           .getResult(0);
          if (!o.exclusive) out = mlir::tensor::InsertSliceOp::create(nb, nl, next, out, at, sizes, ones);
          mlir::scf::YieldOp::create(nb, nl, ValueRange{next, out});
        });
    result = loop.getResult(1);
    return reshape(wrap(ctx, result, all_shape), x.shape().dims(), x.shape().tags());
  }
  return reshape(wrap(ctx, result, Shape(d, {outer, n})), x.shape().dims(), x.shape().tags());
}

}  // namespace

Tensor cumsum(const Tensor& x, const Axis& axis, ScanOptions o) { return cumulative("cumsum", x, axis, o, ScanKind::kSum); }
Tensor cumprod(const Tensor& x, const Axis& axis, ScanOptions o) { return cumulative("cumprod", x, axis, o, ScanKind::kProd); }
Tensor cummax(const Tensor& x, const Axis& axis, ScanOptions o) { return cumulative("cummax", x, axis, o, ScanKind::kMax); }
Tensor cummin(const Tensor& x, const Axis& axis, ScanOptions o) { return cumulative("cummin", x, axis, o, ScanKind::kMin); }

// ---------------------------------------------------------------- generic reduce

Tensor reduce(const Tensor& x, const std::vector<Axis>& axes, const Tensor& init, const ReduceFn& body) {
  CompilationContext& ctx = context_for("reduce", {&x, &init});
  const Shape out = infer::reduce(x.shape(), axes, init.shape());
  const std::string what = describe("reduce", {&x, &init});
  std::vector<bool> red(static_cast<size_t>(x.rank()), axes.empty());
  for (const Axis& a : axes) red[static_cast<size_t>(x.axis(a))] = true;
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Location l = ctx.loc();
  const unsigned r = static_cast<unsigned>(x.rank());
  llvm::SmallVector<mlir::AffineExpr> out_exprs;
  llvm::SmallVector<mlir::utils::IteratorType> iters;
  for (unsigned i = 0; i < r; ++i) {
    if (red[i]) {
      iters.push_back(mlir::utils::IteratorType::reduction);
    } else {
      iters.push_back(mlir::utils::IteratorType::parallel);
      out_exprs.push_back(mlir::getAffineDimExpr(i, mctx));
    }
  }
  llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::getMultiDimIdentityMap(r, mctx),
                                             mlir::AffineMap::get(r, 0, out_exprs, mctx)};
  Value init_s = mlir::tensor::ExtractOp::create(b, l, value_of(init), ValueRange{});
  Value filled =
      mlir::linalg::FillOp::create(b, l, ValueRange{init_s}, ValueRange{empty_tensor(ctx, out)}).getResult(0);
  Value xv = value_of(x);
  const DType xd = x.dtype(), ad = init.dtype();
  auto g = mlir::linalg::GenericOp::create(
      b, l, mlir::TypeRange{tensor_type(mctx, out)}, ValueRange{xv}, ValueRange{filled}, maps, iters,
      [&](mlir::OpBuilder& nb, mlir::Location nl, ValueRange args) {
        // The element is read by tensor.extract rather than the block
        // argument: the vectorizing schedule then leaves this reduction alone
        // (it would reassociate the body, or reject an unknown combiner).
        llvm::SmallVector<Value> at;
        for (unsigned i = 0; i < r; ++i) at.push_back(mlir::linalg::IndexOp::create(nb, nl, i));
        Value elem = mlir::tensor::ExtractOp::create(nb, nl, xv, at);
        Value res = trace_scalar_fn(ctx, what, {args[1], elem}, {ad, xd}, ad,
                                    [&](const std::vector<Tensor>& t) { return body(t[0], t[1]); });
        mlir::linalg::YieldOp::create(nb, nl, res);
      });
  return wrap(ctx, g.getResult(0), out);
}

Tensor reduce(const Tensor& x, const std::vector<Axis>& axes, double init, const ReduceFn& body) {
  context_for("reduce", {&x});
  return reduce(x, axes, scalar(init, x.dtype()), body);
}

}  // namespace radix
