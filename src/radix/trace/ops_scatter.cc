// Gather and scatter (ops_scatter.h).
//
// gather is one linalg.generic over the result that reads each element of x
// through tensor.extract at the clamped start plus the element's offset (plain
// loops, like take_along_axis). scatter views indices as [N, K] and updates
// as [N, W] (N scatter positions, W elements per window) and runs an scf.for
// over N; a window that fits whole is applied by an inner scf.for over W
// that reads, combines and writes x's elements with tensor.extract /
// tensor.insert on the loop-carried tensor, so both loops bufferize in place.
#include "radix/trace/ops_scatter.h"

#include <algorithm>
#include <string>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"
#include "radix/trace/scalar_body.h"

namespace radix {

using namespace detail;
using mlir::Value;
using mlir::ValueRange;
namespace ar = mlir::arith;

namespace {

std::string operands_str(std::initializer_list<const Shape*> xs) {
  std::string s;
  for (const Shape* x : xs) s += (s.empty() ? "" : ", ") + x->to_string();
  return s;
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Throws unless v is strictly ascending with every entry in [0, bound).
void check_sorted_dims(const std::string& what, const char* name, const std::vector<int64_t>& v, int64_t bound) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] < 0 || v[i] >= bound || (i > 0 && v[i] <= v[i - 1]))
      fail(what + ": " + name + " " + list_str(v) + " must be ascending, distinct and in [0, " + std::to_string(bound) +
           ")");
}

void check_index_operand(const std::string& what, const Shape& indices, size_t k) {
  if (!is_integer(indices.dtype()))
    fail(what + ": indices " + indices.to_string() + " must have an integer dtype");
  if (indices.rank() == 0) fail(what + ": indices need a last axis holding the index vector");
  if (indices.dim(indices.rank() - 1) != static_cast<int64_t>(k))
    fail(what + ": the last axis of indices has size " + std::to_string(indices.dim(indices.rank() - 1)) + " but " +
         std::to_string(k) + " coordinates are mapped");
}

void check_index_map(const std::string& what, const char* name, const std::vector<int64_t>& map, int rank) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t d : map) {
    if (d < 0 || d >= rank || seen[static_cast<size_t>(d)])
      fail(what + ": " + name + " " + list_str(map) + " must be distinct axes of x in [0, " + std::to_string(rank) +
           ")");
    seen[static_cast<size_t>(d)] = true;
  }
}

// Resolved axes of the convenience forms, in the order given.
std::vector<int64_t> resolve_axes(const std::string& what, const Shape& x, const std::vector<Axis>& axes) {
  std::vector<int64_t> r;
  for (const Axis& a : axes) {
    auto i = x.find_axis(a);
    if (!i) fail(what + ": axis " + a.to_string() + " does not exist in " + x.to_string());
    if (std::find(r.begin(), r.end(), *i) != r.end()) fail(what + ": axis " + a.to_string() + " given twice");
    r.push_back(*i);
  }
  if (r.empty()) fail(what + ": needs at least one axis");
  return r;
}

// Element `at` of an integer tensor as i64 (u64 past INT64_MAX reads negative,
// which unsigned comparisons then treat as huge).
Value index_i64(mlir::OpBuilder& b, mlir::Location l, Value t, ValueRange at, DType d) {
  Value v = mlir::tensor::ExtractOp::create(b, l, t, at);
  if (dtype_bits(d) < 64)
    v = is_signed_int(d) ? Value(ar::ExtSIOp::create(b, l, b.getI64Type(), v))
                         : Value(ar::ExtUIOp::create(b, l, b.getI64Type(), v));
  return v;
}

Value clamp_to_index(mlir::OpBuilder& b, mlir::Location l, Value v, DType d, int64_t hi) {
  if (dtype_bits(d) == 64 && !is_signed_int(d)) {
    Value neg = ar::CmpIOp::create(b, l, ar::CmpIPredicate::slt, v, ar::ConstantIntOp::create(b, l, 0, 64));
    v = ar::SelectOp::create(b, l, neg, ar::ConstantIntOp::create(b, l, hi, 64), v);
  }
  v = ar::MaxSIOp::create(b, l, v, ar::ConstantIntOp::create(b, l, 0, 64));
  v = ar::MinSIOp::create(b, l, v, ar::ConstantIntOp::create(b, l, hi, 64));
  return ar::IndexCastOp::create(b, l, b.getIndexType(), v);
}

}  // namespace

// ---------------------------------------------------------------- shape inference
namespace infer {

Shape gather(const Shape& x, const Shape& indices, const GatherDims& dims) {
  const std::string what = "gather(" + operands_str({&x, &indices}) + ")";
  check_index_operand(what, indices, dims.start_index_map.size());
  check_index_map(what, "start_index_map", dims.start_index_map, x.rank());
  if (dims.slice_sizes.size() != static_cast<size_t>(x.rank()))
    fail(what + ": slice_sizes " + list_str(dims.slice_sizes) + " needs one size per axis of x");
  for (int i = 0; i < x.rank(); ++i)
    if (dims.slice_sizes[static_cast<size_t>(i)] < 0 || dims.slice_sizes[static_cast<size_t>(i)] > x.dim(i))
      fail(what + ": slice size " + std::to_string(dims.slice_sizes[static_cast<size_t>(i)]) + " on axis " +
           std::to_string(i) + " does not fit its size " + std::to_string(x.dim(i)));
  check_sorted_dims(what, "collapsed_slice_dims", dims.collapsed_slice_dims, x.rank());
  for (int64_t c : dims.collapsed_slice_dims)
    if (dims.slice_sizes[static_cast<size_t>(c)] != 1)
      fail(what + ": collapsed axis " + std::to_string(c) + " needs slice size 1");
  const int batch = indices.rank() - 1;
  const int64_t kept = x.rank() - static_cast<int64_t>(dims.collapsed_slice_dims.size());
  if (static_cast<int64_t>(dims.offset_dims.size()) != kept)
    fail(what + ": offset_dims " + list_str(dims.offset_dims) + " needs one entry per kept axis of x (" +
         std::to_string(kept) + ")");
  const int64_t rank = batch + kept;
  if (rank > kMaxRank) fail(what + ": the result would exceed rank 8");
  check_sorted_dims(what, "offset_dims", dims.offset_dims, rank);
  std::vector<int64_t> out_dims;
  std::vector<Tag> out_tags;
  int next_batch = 0, next_x = 0;
  for (int64_t r = 0; r < rank; ++r) {
    if (std::find(dims.offset_dims.begin(), dims.offset_dims.end(), r) != dims.offset_dims.end()) {
      while (std::find(dims.collapsed_slice_dims.begin(), dims.collapsed_slice_dims.end(), next_x) !=
             dims.collapsed_slice_dims.end())
        ++next_x;
      out_dims.push_back(dims.slice_sizes[static_cast<size_t>(next_x)]);
      out_tags.push_back(x.tag(next_x++));
    } else {
      out_dims.push_back(indices.dim(next_batch));
      out_tags.push_back(indices.tag(next_batch++));
    }
  }
  try {
    return Shape(x.dtype(), std::span<const int64_t>(out_dims), std::span<const Tag>(out_tags));
  } catch (const std::invalid_argument& e) {
    fail(what + ": " + e.what());
  }
}

GatherDims gather_dims(const Shape& x, const Shape& indices, const std::vector<Axis>& axes) {
  const std::string what = "gather(" + operands_str({&x, &indices}) + ")";
  const std::vector<int64_t> a = resolve_axes(what, x, axes);
  check_index_operand(what, indices, a.size());
  GatherDims g;
  g.start_index_map = a;
  g.collapsed_slice_dims = a;
  std::sort(g.collapsed_slice_dims.begin(), g.collapsed_slice_dims.end());
  for (int i = 0; i < x.rank(); ++i) {
    const bool taken = std::find(a.begin(), a.end(), i) != a.end();
    g.slice_sizes.push_back(taken ? 1 : x.dim(i));
  }
  const int64_t batch = indices.rank() - 1;
  for (int64_t i = 0; i < x.rank() - static_cast<int64_t>(a.size()); ++i) g.offset_dims.push_back(batch + i);
  return g;
}

Shape scatter(const Shape& x, const Shape& indices, const Shape& updates, const ScatterDims& dims) {
  const std::string what = "scatter(" + operands_str({&x, &indices, &updates}) + ")";
  check_index_operand(what, indices, dims.scatter_dims_to_operand_dims.size());
  check_index_map(what, "scatter_dims_to_operand_dims", dims.scatter_dims_to_operand_dims, x.rank());
  if (updates.dtype() != x.dtype()) fail(what + ": updates need x's dtype");
  check_sorted_dims(what, "update_window_dims", dims.update_window_dims, updates.rank());
  check_sorted_dims(what, "inserted_window_dims", dims.inserted_window_dims, x.rank());
  if (dims.update_window_dims.size() + dims.inserted_window_dims.size() != static_cast<size_t>(x.rank()))
    fail(what + ": update_window_dims " + list_str(dims.update_window_dims) + " and inserted_window_dims " +
         list_str(dims.inserted_window_dims) + " must cover the " + std::to_string(x.rank()) + " axes of x");
  const int batch = indices.rank() - 1;
  if (updates.rank() != batch + static_cast<int>(dims.update_window_dims.size()))
    fail(what + ": updates need rank " + std::to_string(batch + dims.update_window_dims.size()) +
         " (indices' batch axes and the window axes)");
  int next_batch = 0;
  size_t next_window = 0;
  int next_x = 0;
  for (int u = 0; u < updates.rank(); ++u) {
    if (next_window < dims.update_window_dims.size() && dims.update_window_dims[next_window] == u) {
      ++next_window;
      while (std::find(dims.inserted_window_dims.begin(), dims.inserted_window_dims.end(), next_x) !=
             dims.inserted_window_dims.end())
        ++next_x;
      if (updates.dim(u) > x.dim(next_x))
        fail(what + ": window axis " + std::to_string(u) + " of updates (size " + std::to_string(updates.dim(u)) +
             ") is larger than axis " + std::to_string(next_x) + " of x");
      ++next_x;
    } else {
      if (updates.dim(u) != indices.dim(next_batch))
        fail(what + ": axis " + std::to_string(u) + " of updates has size " + std::to_string(updates.dim(u)) +
             " but batch axis " + std::to_string(next_batch) + " of indices has " +
             std::to_string(indices.dim(next_batch)));
      ++next_batch;
    }
  }
  return x;
}

ScatterDims scatter_dims(const Shape& x, const Shape& indices, const Shape& updates, const std::vector<Axis>& axes) {
  const std::string what = "scatter(" + operands_str({&x, &indices, &updates}) + ")";
  const std::vector<int64_t> a = resolve_axes(what, x, axes);
  check_index_operand(what, indices, a.size());
  ScatterDims s;
  s.scatter_dims_to_operand_dims = a;
  s.inserted_window_dims = a;
  std::sort(s.inserted_window_dims.begin(), s.inserted_window_dims.end());
  const int64_t batch = indices.rank() - 1;
  for (int64_t i = 0; i < x.rank() - static_cast<int64_t>(a.size()); ++i) s.update_window_dims.push_back(batch + i);
  // The convenience form wants the whole slices: updates = [batch..., other axes of x].
  std::vector<int64_t> want(indices.dims().begin(), indices.dims().end() - 1);
  for (int i = 0; i < x.rank(); ++i)
    if (std::find(a.begin(), a.end(), i) == a.end()) want.push_back(x.dim(i));
  if (!std::equal(want.begin(), want.end(), updates.dims().begin(), updates.dims().end()))
    fail(what + ": updates must have dims " + list_str(want) + " (indices' batch axes, then x's other axes)");
  return s;
}

}  // namespace infer

// ---------------------------------------------------------------- gather

Tensor gather(const Tensor& x, const Tensor& indices, const GatherDims& dims) {
  CompilationContext& ctx = context_for("gather", {&x, &indices});
  const Shape out = infer::gather(x.shape(), indices.shape(), dims);
  if (out.count() == 0) return full(out, 0);
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  const unsigned r = static_cast<unsigned>(out.rank());
  Value xv = value_of(x), iv = value_of(indices);
  const DType id_dtype = indices.dtype();
  llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::getMultiDimIdentityMap(r, mctx)};
  llvm::SmallVector<mlir::utils::IteratorType> iters(r, mlir::utils::IteratorType::parallel);
  auto is_offset = [&](int64_t d) {
    return std::find(dims.offset_dims.begin(), dims.offset_dims.end(), d) != dims.offset_dims.end();
  };
  auto g = mlir::linalg::GenericOp::create(
      b, ctx.loc(), mlir::TypeRange{tensor_type(mctx, out)}, ValueRange{}, ValueRange{empty_tensor(ctx, out)}, maps,
      iters, [&](mlir::OpBuilder& nb, mlir::Location nl, ValueRange) {
        // The batch position (into indices) and the offset within the slice
        // (per kept axis of x) of this result element.
        llvm::SmallVector<Value> at_batch, offsets;
        for (unsigned i = 0; i < r; ++i) {
          Value v = mlir::linalg::IndexOp::create(nb, nl, i);
          (is_offset(i) ? offsets : at_batch).push_back(v);
        }
        llvm::SmallVector<Value> coords;
        Value zero = ar::ConstantIndexOp::create(nb, nl, 0);
        size_t next_offset = 0;
        for (int d = 0; d < x.rank(); ++d) {
          const bool collapsed = std::find(dims.collapsed_slice_dims.begin(), dims.collapsed_slice_dims.end(), d) !=
                                 dims.collapsed_slice_dims.end();
          Value c = collapsed ? zero : offsets[next_offset++];
          auto k = std::find(dims.start_index_map.begin(), dims.start_index_map.end(), d);
          if (k != dims.start_index_map.end()) {
            llvm::SmallVector<Value> at = at_batch;
            at.push_back(ar::ConstantIndexOp::create(nb, nl, k - dims.start_index_map.begin()));
            Value start = clamp_to_index(nb, nl, index_i64(nb, nl, iv, at, id_dtype), id_dtype,
                                         x.dim(d) - dims.slice_sizes[static_cast<size_t>(d)]);
            c = ar::AddIOp::create(nb, nl, start, c);
          }
          coords.push_back(c);
        }
        mlir::linalg::YieldOp::create(nb, nl, Value(mlir::tensor::ExtractOp::create(nb, nl, xv, coords)));
      });
  return wrap(ctx, g.getResult(0), out);
}

Tensor gather(const Tensor& x, const Tensor& indices, const std::vector<Axis>& axes) {
  context_for("gather", {&x, &indices});
  const GatherDims g = infer::gather_dims(x.shape(), indices.shape(), axes);
  const Shape out = infer::gather(x.shape(), indices.shape(), g);
  if (g.start_index_map.size() == 1 && g.start_index_map[0] == 0 && out.count() > 0) {
    // Rows along the leading axis: take() copies each row as one contiguous
    // run, with the same clamp and the same result layout.
    const Shape ids = shape_for("gather", {&x, &indices}, [&] { return indices.shape().drop_axis(indices.rank() - 1); });
    return take(x, reshape(indices, ids.dims(), ids.tags()), 0);
  }
  return gather(x, indices, g);
}

// ---------------------------------------------------------------- scatter
namespace {

Tensor scatter_impl(const Tensor& x, const Tensor& indices, const Tensor& updates, const ScatterDims& dims,
                    const ScatterMode* mode, const ScatterFn* fn) {
  CompilationContext& ctx = context_for("scatter", {&x, &indices, &updates});
  infer::scatter(x.shape(), indices.shape(), updates.shape(), dims);
  const std::string what = describe("scatter", {&x, &indices, &updates});
  const DType d = x.dtype();
  if (mode && *mode != ScatterMode::kSet && is_bool(d))
    fail(what + ": add / min / max are not defined for bool tensors (use kSet or a combination function)");
  ctx.mlir_context().getOrLoadDialect<mlir::scf::SCFDialect>();
  const int batch = indices.rank() - 1;
  const int64_t k_count = indices.dim(batch);
  int64_t n_count = 1;
  for (int i = 0; i < batch; ++i) n_count *= indices.dim(i);
  // Window size per axis of x (1 on inserted axes).
  std::vector<int64_t> win(static_cast<size_t>(x.rank()), 1);
  {
    size_t next = 0;
    for (int i = 0; i < x.rank(); ++i)
      if (std::find(dims.inserted_window_dims.begin(), dims.inserted_window_dims.end(), i) ==
          dims.inserted_window_dims.end())
        win[static_cast<size_t>(i)] = updates.dim(static_cast<int>(dims.update_window_dims[next++]));
  }
  int64_t w_count = 1;
  for (int64_t w : win) w_count *= w;
  if (n_count == 0 || w_count == 0 || x.shape().count() == 0) return x;

  // updates as [N, W]: batch axes first, then the window axes.
  Axes perm;
  bool identity = true;
  for (int u = 0; u < updates.rank(); ++u)
    if (std::find(dims.update_window_dims.begin(), dims.update_window_dims.end(), u) == dims.update_window_dims.end())
      perm.push_back(u);
  for (int64_t u : dims.update_window_dims) perm.push_back(static_cast<int>(u));
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i].index() == static_cast<int>(i);
  Tensor upd = reshape(identity ? updates : transpose(updates, perm), {n_count, w_count});
  Tensor idx = reshape(indices, {n_count, k_count});

  mlir::OpBuilder& b = ctx.builder();
  mlir::Location l = ctx.loc();
  Value uv = value_of(upd), iv = value_of(idx);
  const DType id_dtype = indices.dtype();
  Value c0 = ar::ConstantIndexOp::create(b, l, 0), c1 = ar::ConstantIndexOp::create(b, l, 1);
  auto combine = [&](mlir::OpBuilder& nb, mlir::Location nl, Value old, Value u) -> Value {
    if (fn)
      return trace_scalar_fn(ctx, what, {old, u}, {d, d}, d,
                             [&](const std::vector<Tensor>& t) { return (*fn)(t[0], t[1]); });
    const bool f = is_float(d), s = is_signed_int(d);
    switch (*mode) {
      case ScatterMode::kSet: return u;
      case ScatterMode::kAdd: return f ? Value(ar::AddFOp::create(nb, nl, old, u)) : Value(ar::AddIOp::create(nb, nl, old, u));
      case ScatterMode::kMax:
        if (f) return ar::MaximumFOp::create(nb, nl, old, u);
        return s ? Value(ar::MaxSIOp::create(nb, nl, old, u)) : Value(ar::MaxUIOp::create(nb, nl, old, u));
      case ScatterMode::kMin:
        if (f) return ar::MinimumFOp::create(nb, nl, old, u);
        return s ? Value(ar::MinSIOp::create(nb, nl, old, u)) : Value(ar::MinUIOp::create(nb, nl, old, u));
    }
    return u;
  };
  const bool reads_old = fn || *mode != ScatterMode::kSet;
  auto outer = mlir::scf::ForOp::create(
      b, l, c0, ar::ConstantIndexOp::create(b, l, n_count), c1, ValueRange{value_of(x)},
      [&](mlir::OpBuilder& nb, mlir::Location nl, Value n, ValueRange acc) {
        // Starts per axis of x, and whether the whole window fits (unsigned
        // compares: a negative start reads as huge).
        std::vector<Value> start(static_cast<size_t>(x.rank()));
        Value fits = ar::ConstantIntOp::create(nb, nl, 1, 1);
        for (int64_t k = 0; k < k_count; ++k) {
          const int64_t a = dims.scatter_dims_to_operand_dims[static_cast<size_t>(k)];
          Value s = index_i64(nb, nl, iv, ValueRange{n, Value(ar::ConstantIndexOp::create(nb, nl, k))}, id_dtype);
          Value ok = ar::CmpIOp::create(nb, nl, ar::CmpIPredicate::ule, s,
                                        ar::ConstantIntOp::create(nb, nl, x.dim(static_cast<int>(a)) - win[static_cast<size_t>(a)], 64));
          fits = ar::AndIOp::create(nb, nl, fits, ok);
          start[static_cast<size_t>(a)] = s;
        }
        auto branch = mlir::scf::IfOp::create(
            nb, nl, fits,
            [&](mlir::OpBuilder& tb, mlir::Location tl) {
              std::vector<Value> base(start.size());
              for (size_t a = 0; a < start.size(); ++a)
                base[a] = start[a] ? Value(ar::IndexCastOp::create(tb, tl, tb.getIndexType(), start[a])) : Value();
              auto inner = mlir::scf::ForOp::create(
                  tb, tl, c0, ar::ConstantIndexOp::create(tb, tl, w_count), c1, acc,
                  [&](mlir::OpBuilder& ib, mlir::Location il, Value w, ValueRange acc2) {
                    // Window element w, row-major over the window's axes.
                    llvm::SmallVector<Value> coords(start.size());
                    Value rest = w;
                    for (int a = x.rank() - 1; a >= 0; --a) {
                      const size_t ua = static_cast<size_t>(a);
                      Value off = c0;
                      if (win[ua] > 1) {
                        Value wa = ar::ConstantIndexOp::create(ib, il, win[ua]);
                        off = ar::RemUIOp::create(ib, il, rest, wa);
                        rest = ar::DivUIOp::create(ib, il, rest, wa);
                      }
                      coords[ua] = base[ua] ? Value(ar::AddIOp::create(ib, il, base[ua], off)) : off;
                    }
                    Value u = mlir::tensor::ExtractOp::create(ib, il, uv, ValueRange{n, w});
                    Value old = reads_old ? Value(mlir::tensor::ExtractOp::create(ib, il, acc2[0], coords)) : Value();
                    Value v = combine(ib, il, old, u);
                    mlir::scf::YieldOp::create(ib, il,
                                               ValueRange{mlir::tensor::InsertOp::create(ib, il, v, acc2[0], coords)});
                  });
              mlir::scf::YieldOp::create(tb, tl, inner.getResults());
            },
            [&](mlir::OpBuilder& eb, mlir::Location el) { mlir::scf::YieldOp::create(eb, el, acc); });
        mlir::scf::YieldOp::create(nb, nl, branch.getResults());
      });
  return wrap(ctx, outer.getResult(0), x.shape());
}

}  // namespace

Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates, const ScatterDims& dims,
               ScatterMode mode) {
  return scatter_impl(x, indices, updates, dims, &mode, nullptr);
}
Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates, const ScatterDims& dims,
               const ScatterFn& combine) {
  return scatter_impl(x, indices, updates, dims, nullptr, &combine);
}
Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates, const std::vector<Axis>& axes,
               ScatterMode mode) {
  context_for("scatter", {&x, &indices, &updates});
  return scatter_impl(x, indices, updates, infer::scatter_dims(x.shape(), indices.shape(), updates.shape(), axes),
                      &mode, nullptr);
}
Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates, const std::vector<Axis>& axes,
               const ScatterFn& combine) {
  context_for("scatter", {&x, &indices, &updates});
  return scatter_impl(x, indices, updates, infer::scatter_dims(x.shape(), indices.shape(), updates.shape(), axes),
                      nullptr, &combine);
}

}  // namespace radix
