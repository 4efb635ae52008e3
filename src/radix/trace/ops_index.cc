// Indexing ops (ops_index.h). Dynamic slices and updates are tensor slices
// with run-time offsets (views / in-place writes after bufferization); take
// is an scf.for over the ids copying contiguous runs; take_along_axis is a
// linalg.generic that reads through tensor.extract (plain loops).
#include "radix/trace/ops_index.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;
using mlir::Value;
namespace ar = mlir::arith;

namespace {

std::string shapes_str(std::initializer_list<const Shape*> xs) {
  std::string s;
  for (const Shape* x : xs) s += (s.empty() ? "" : ", ") + x->to_string();
  return s;
}

int resolve(const char* op, const Shape& x, const Axis& a, const std::string& operands) {
  auto i = x.find_axis(a);
  if (!i) fail(std::string(op) + "(" + operands + "): axis " + a.to_string() + " does not exist in " + x.to_string());
  return *i;
}

void check_index_tensor(const char* op, const Shape& t, const std::string& operands, const char* what) {
  if (is_float(t.dtype()) || is_bool(t.dtype()))
    fail(std::string(op) + "(" + operands + "): " + what + " " + t.to_string() + " must have an integer dtype");
}

// An index-typed scalar from element `at` of an integer tensor, clamped into [lo, hi].
Value clamped_index(mlir::OpBuilder& b, mlir::Location l, Value t, mlir::ValueRange at, DType d, int64_t lo, int64_t hi) {
  Value v = mlir::tensor::ExtractOp::create(b, l, t, at);
  if (dtype_bits(d) < 64)
    v = is_signed_int(d) ? Value(ar::ExtSIOp::create(b, l, b.getI64Type(), v)) : Value(ar::ExtUIOp::create(b, l, b.getI64Type(), v));
  if (dtype_bits(d) == 64 && !is_signed_int(d)) {
    // u64 past INT64_MAX reads as negative: treat it as huge.
    Value neg = ar::CmpIOp::create(b, l, ar::CmpIPredicate::slt, v, ar::ConstantIntOp::create(b, l, 0, 64));
    v = ar::SelectOp::create(b, l, neg, ar::ConstantIntOp::create(b, l, hi, 64), v);
  }
  v = ar::MaxSIOp::create(b, l, v, ar::ConstantIntOp::create(b, l, lo, 64));
  v = ar::MinSIOp::create(b, l, v, ar::ConstantIntOp::create(b, l, hi, 64));
  return ar::IndexCastOp::create(b, l, b.getIndexType(), v);
}

}  // namespace

// ---------------------------------------------------------------- shape inference

namespace infer {

Shape dynamic_slice(const Shape& x, const std::vector<std::pair<Axis, int64_t>>& sizes, const std::vector<Shape>& starts) {
  std::string operands = x.to_string();
  for (const Shape& s : starts) operands += ", " + s.to_string();
  std::vector<int64_t> dims(x.dims().begin(), x.dims().end());
  std::vector<bool> seen(dims.size(), false);
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int a = resolve("dynamic_slice", x, sizes[k].first, operands);
    if (seen[static_cast<size_t>(a)]) fail("dynamic_slice(" + operands + "): axis " + sizes[k].first.to_string() + " given twice");
    seen[static_cast<size_t>(a)] = true;
    if (k < starts.size()) {
      check_index_tensor("dynamic_slice", starts[k], operands, "start");
      if (starts[k].rank() != 0) fail("dynamic_slice(" + operands + "): start " + starts[k].to_string() + " must be rank 0");
    }
    if (sizes[k].second < 0 || sizes[k].second > x.dim(a))
      fail("dynamic_slice(" + operands + "): window size " + std::to_string(sizes[k].second) + " on axis " +
           sizes[k].first.to_string() + " does not fit its size " + std::to_string(x.dim(a)));
    dims[static_cast<size_t>(a)] = sizes[k].second;
  }
  return Shape(x.dtype(), std::span<const int64_t>(dims), x.tags());
}

Shape take(const Shape& x, const Shape& ids, const Axis& axis) {
  const std::string operands = shapes_str({&x, &ids});
  const int a = resolve("take", x, axis, operands);
  check_index_tensor("take", ids, operands, "ids");
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  for (int i = 0; i < x.rank(); ++i) {
    if (i != a) {
      dims.push_back(x.dim(i));
      tags.push_back(x.tag(i));
      continue;
    }
    for (int j = 0; j < ids.rank(); ++j) {
      dims.push_back(ids.dim(j));
      tags.push_back(ids.tag(j));
    }
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) fail("take(" + operands + "): the result would exceed rank 8");
  if (x.dim(a) == 0 && ids.count() > 0) fail("take(" + operands + "): cannot take from an empty axis");
  try {
    return Shape(x.dtype(), std::span<const int64_t>(dims), std::span<const Tag>(tags));
  } catch (const std::invalid_argument& e) {
    fail("take(" + operands + "): " + e.what());
  }
}

Shape take_along_axis(const Shape& x, const Shape& idx, const Axis& axis) {
  const std::string operands = shapes_str({&x, &idx});
  const int a = resolve("take_along_axis", x, axis, operands);
  check_index_tensor("take_along_axis", idx, operands, "indices");
  if (idx.rank() != x.rank()) fail("take_along_axis(" + operands + "): indices need the rank of x");
  for (int i = 0; i < x.rank(); ++i)
    if (i != a && idx.dim(i) != x.dim(i))
      fail("take_along_axis(" + operands + "): axis " + std::to_string(i) + " has sizes " + std::to_string(x.dim(i)) +
           " and " + std::to_string(idx.dim(i)));
  if (x.dim(a) == 0 && idx.count() > 0) fail("take_along_axis(" + operands + "): cannot take from an empty axis");
  return x.with_dim(a, idx.dim(a));
}

}  // namespace infer

// ---------------------------------------------------------------- dynamic slices

Tensor dynamic_slice(const Tensor& x, const std::vector<DynamicSliceSpec>& specs) {
  CompilationContext& ctx = context_for("dynamic_slice", {&x});
  std::vector<std::pair<Axis, int64_t>> sizes;
  std::vector<Shape> starts;
  for (const DynamicSliceSpec& s : specs) {
    context_for("dynamic_slice", {&x, &s.start});
    sizes.push_back({s.axis, s.size});
    starts.push_back(s.start.shape());
  }
  const Shape out = infer::dynamic_slice(x.shape(), sizes, starts);
  mlir::OpBuilder& b = ctx.builder();
  mlir::Location l = ctx.loc();
  llvm::SmallVector<mlir::OpFoldResult> offsets = index_attrs(b, std::vector<int64_t>(static_cast<size_t>(x.rank()), 0));
  for (const DynamicSliceSpec& s : specs) {
    const int a = x.axis(s.axis);
    offsets[static_cast<size_t>(a)] =
        clamped_index(b, l, value_of(s.start), {}, s.start.dtype(), 0, x.dim(a) - s.size);
  }
  std::vector<int64_t> sz(out.dims().begin(), out.dims().end());
  Value v = mlir::tensor::ExtractSliceOp::create(b, l, tensor_type(&ctx.mlir_context(), out), value_of(x), offsets,
                                                 index_attrs(b, sz),
                                                 index_attrs(b, std::vector<int64_t>(sz.size(), 1)));
  return wrap(ctx, v, out);
}

Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<DynamicUpdateSpec>& specs) {
  CompilationContext& ctx = context_for("dynamic_update_slice", {&x, &update});
  const std::string operands = shapes_str({&x.shape(), &update.shape()});
  if (update.dtype() != x.dtype() || update.rank() != x.rank())
    fail("dynamic_update_slice(" + operands + "): the update needs x's dtype and rank");
  for (int i = 0; i < x.rank(); ++i)
    if (update.dim(i) > x.dim(i))
      fail("dynamic_update_slice(" + operands + "): the update is larger than x on axis " + std::to_string(i));
  mlir::OpBuilder& b = ctx.builder();
  mlir::Location l = ctx.loc();
  llvm::SmallVector<mlir::OpFoldResult> offsets = index_attrs(b, std::vector<int64_t>(static_cast<size_t>(x.rank()), 0));
  std::vector<bool> seen(static_cast<size_t>(x.rank()), false);
  for (const DynamicUpdateSpec& s : specs) {
    context_for("dynamic_update_slice", {&x, &s.start});
    const int a = resolve("dynamic_update_slice", x.shape(), s.axis, operands);
    if (seen[static_cast<size_t>(a)]) fail("dynamic_update_slice(" + operands + "): axis " + s.axis.to_string() + " given twice");
    seen[static_cast<size_t>(a)] = true;
    check_index_tensor("dynamic_update_slice", s.start.shape(), operands, "start");
    if (s.start.rank() != 0) fail("dynamic_update_slice(" + operands + "): start " + s.start.shape().to_string() + " must be rank 0");
    offsets[static_cast<size_t>(a)] = clamped_index(b, l, value_of(s.start), {}, s.start.dtype(), 0, x.dim(a) - update.dim(a));
  }
  std::vector<int64_t> sz(update.shape().dims().begin(), update.shape().dims().end());
  Value v = mlir::tensor::InsertSliceOp::create(b, l, value_of(update), value_of(x), offsets, index_attrs(b, sz),
                                                index_attrs(b, std::vector<int64_t>(sz.size(), 1)));
  return wrap(ctx, v, x.shape());
}

// ---------------------------------------------------------------- take

Tensor take(const Tensor& x, const Tensor& ids, const Axis& axis) {
  CompilationContext& ctx = context_for("take", {&x, &ids});
  const Shape out = infer::take(x.shape(), ids.shape(), axis);
  const int a = x.axis(axis);
  if (out.count() == 0) return full(out, 0);
  // x as [outer, n, inner], ids as [m], out as [outer, m, inner]: every
  // (o, i) copies the contiguous run x[o, id_i, :].
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= x.dim(i);
  for (int i = a + 1; i < x.rank(); ++i) inner *= x.dim(i);
  const int64_t n = x.dim(a), m = ids.count();
  Tensor x3 = reshape(x, {outer, n, inner});
  Tensor ids1 = reshape(ids, {m});
  const Shape out3(x.dtype(), {outer, m, inner});
  mlir::OpBuilder& b = ctx.builder();
  mlir::Location l = ctx.loc();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  Value c0 = ar::ConstantIndexOp::create(b, l, 0), c1 = ar::ConstantIndexOp::create(b, l, 1);
  Value total = ar::ConstantIndexOp::create(b, l, outer * m), cm = ar::ConstantIndexOp::create(b, l, m);
  Value xv = value_of(x3), idv = value_of(ids1);
  const DType id_dtype = ids.dtype();
  auto row_t = mlir::RankedTensorType::get({1, 1, inner}, element_type(mctx, x.dtype()));
  auto loop = mlir::scf::ForOp::create(
      b, l, c0, total, c1, mlir::ValueRange{empty_tensor(ctx, out3)},
      [&](mlir::OpBuilder& nb, mlir::Location nl, Value k, mlir::ValueRange acc) {
        Value o = ar::DivUIOp::create(nb, nl, k, cm), i = ar::RemUIOp::create(nb, nl, k, cm);
        Value id = clamped_index(nb, nl, idv, {i}, id_dtype, 0, n - 1);
        llvm::SmallVector<mlir::OpFoldResult> sizes = {nb.getIndexAttr(1), nb.getIndexAttr(1), nb.getIndexAttr(inner)};
        llvm::SmallVector<mlir::OpFoldResult> ones = {nb.getIndexAttr(1), nb.getIndexAttr(1), nb.getIndexAttr(1)};
        Value row = mlir::tensor::ExtractSliceOp::create(nb, nl, row_t, xv,
                                                         llvm::SmallVector<mlir::OpFoldResult>{o, id, nb.getIndexAttr(0)},
                                                         sizes, ones);
        Value next = mlir::tensor::InsertSliceOp::create(nb, nl, row, acc[0],
                                                         llvm::SmallVector<mlir::OpFoldResult>{o, i, nb.getIndexAttr(0)},
                                                         sizes, ones);
        mlir::scf::YieldOp::create(nb, nl, next);
      });
  Tensor r = wrap(ctx, loop.getResult(0), out3);
  return reshape(r, out.dims(), out.tags());
}

Tensor embedding(const Tensor& table, const Tensor& ids) {
  context_for("embedding", {&table, &ids});
  if (table.rank() != 2)
    fail("embedding(" + table.shape().to_string() + ", " + ids.shape().to_string() + "): the table must be [vocab, dim]");
  return take(table, ids, 0);
}

Tensor take_along_axis(const Tensor& x, const Tensor& idx, const Axis& axis) {
  CompilationContext& ctx = context_for("take_along_axis", {&x, &idx});
  const Shape out = infer::take_along_axis(x.shape(), idx.shape(), axis);
  if (out.count() == 0) return full(out, 0);
  const int a = x.axis(axis);
  const int64_t n = x.dim(a);
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  const unsigned r = static_cast<unsigned>(x.rank());
  Value xv = value_of(x);
  const DType id_dtype = idx.dtype();
  llvm::SmallVector<mlir::AffineMap> maps(2, mlir::AffineMap::getMultiDimIdentityMap(r, mctx));
  llvm::SmallVector<mlir::utils::IteratorType> iters(r, mlir::utils::IteratorType::parallel);
  auto g = mlir::linalg::GenericOp::create(
      b, ctx.loc(), mlir::TypeRange{tensor_type(mctx, out)}, mlir::ValueRange{value_of(idx)},
      mlir::ValueRange{empty_tensor(ctx, out)}, maps, iters,
      [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        // The element's index along `a` comes from idx; the others are the loop's.
        Value id64 = args[0];
        if (dtype_bits(id_dtype) < 64)
          id64 = is_signed_int(id_dtype) ? Value(ar::ExtSIOp::create(nb, nl, nb.getI64Type(), id64))
                                         : Value(ar::ExtUIOp::create(nb, nl, nb.getI64Type(), id64));
        id64 = ar::MaxSIOp::create(nb, nl, id64, ar::ConstantIntOp::create(nb, nl, 0, 64));
        id64 = ar::MinSIOp::create(nb, nl, id64, ar::ConstantIntOp::create(nb, nl, n - 1, 64));
        llvm::SmallVector<Value> at;
        for (unsigned i = 0; i < r; ++i)
          at.push_back(static_cast<int>(i) == a ? Value(ar::IndexCastOp::create(nb, nl, nb.getIndexType(), id64))
                                                : Value(mlir::linalg::IndexOp::create(nb, nl, i)));
        mlir::linalg::YieldOp::create(nb, nl, Value(mlir::tensor::ExtractOp::create(nb, nl, xv, at)));
      });
  return wrap(ctx, g.getResult(0), out);
}

}  // namespace radix
