// Sorting: the sorted axis is moved innermost and the operands viewed as
// [rows, n]; each row is then sorted by scf loops over tensors (tensor.extract
// / tensor.insert on loop-carried tensors), which one-shot bufferization turns
// into in-place loads and stores.
//
//  * sort / argsort: insertion sort of runs of 16, then a bottom-up merge
//    sort of the runs. Every operand gets one [2, rows, n] work tensor whose
//    halves are the ping-pong buffers, so each loop yields the tensor it
//    received (bufferized in place, no per-pass copies). The merge step is
//    branch-free: both candidates are read (clamped indices), compared once,
//    and a select picks the element.
//  * top_k (k <= kHeapMax): a binary heap of the k best per row, worst at
//    the root: an element enters only if it beats the root (one comparison
//    for most elements of a long row), then sifts down; O(n log k). The heap
//    is ordered at the end by two stable merge sorts of k elements.
//
// A comparator is traced into the loop bodies on rank-0 tensors; the rank-0
// linalg ops it emits are then rewritten into plain scalar ops (scalar_body.h),
// so the loop bodies allocate nothing.
#include "radix/trace/ops_sort.h"

#include "radix/trace/scalar_body.h"

#include <string>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;
using mlir::Value;
using mlir::ValueRange;
namespace ar = mlir::arith;

// ---------------------------------------------------------------- shape inference
namespace sort_shapes {
namespace {

std::string describe_shapes(const char* op, std::span<const Shape> shapes) {
  std::string s = std::string(op) + "(";
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shapes[i].to_string();
  return s + ")";
}

int resolve_axis(const char* op, std::span<const Shape> shapes, const Axis& axis) {
  auto i = shapes[0].find_axis(axis);
  if (!i)
    fail(describe_shapes(op, shapes) + ": axis " + axis.to_string() + " does not exist in " +
         shapes[0].to_string());
  return *i;
}

void require_sortable_key(const char* op, std::span<const Shape> shapes, bool has_comparator) {
  if (is_bool(shapes[0].dtype()) && !has_comparator)
    fail(describe_shapes(op, shapes) + ": bool keys have no default order; pass a comparator or convert them");
}

void require_index_dtype(const char* op, std::span<const Shape> shapes, int64_t n, DType index_dtype) {
  if (!is_integer(index_dtype))
    fail(describe_shapes(op, shapes) + ": index dtype must be an integer dtype, got " +
         std::string(dtype_name(index_dtype)));
  const int bits = dtype_bits(index_dtype) - (is_signed_int(index_dtype) ? 1 : 0);
  if (bits < 63 && n > 0 && static_cast<uint64_t>(n - 1) >> bits != 0)
    fail(describe_shapes(op, shapes) + ": index dtype " + std::string(dtype_name(index_dtype)) +
         " cannot hold index " + std::to_string(n - 1));
}

}  // namespace

std::vector<Shape> sort(std::span<const Shape> operands, const Axis& axis, bool has_comparator) {
  if (operands.empty()) fail("sort(): needs at least one operand");
  for (const Shape& s : operands)
    if (!s.same_dims(operands[0]))
      fail(describe_shapes("sort", operands) + ": all operands must have the same dims");
  resolve_axis("sort", operands, axis);
  require_sortable_key("sort", operands, has_comparator);
  return std::vector<Shape>(operands.begin(), operands.end());
}

Shape argsort(const Shape& x, const Axis& axis, DType index_dtype, bool has_comparator) {
  std::span<const Shape> ops(&x, 1);
  const int a = resolve_axis("argsort", ops, axis);
  require_sortable_key("argsort", ops, has_comparator);
  require_index_dtype("argsort", ops, x.dim(a), index_dtype);
  return x.with_dtype(index_dtype);
}

std::pair<Shape, Shape> top_k(const Shape& x, int64_t k, const Axis& axis, DType index_dtype) {
  std::span<const Shape> ops(&x, 1);
  const int a = resolve_axis("top_k", ops, axis);
  require_sortable_key("top_k", ops, false);
  const int64_t n = x.dim(a);
  if (k <= 0) fail(describe_shapes("top_k", ops) + ": k = " + std::to_string(k) + " must be positive");
  if (k > n)
    fail(describe_shapes("top_k", ops) + ": k = " + std::to_string(k) + " exceeds the size " + std::to_string(n) +
         " of axis " + axis.to_string());
  require_index_dtype("top_k", ops, n, index_dtype);
  Shape v = x.with_dim(a, k);
  return {v, v.with_dtype(index_dtype)};
}

void check_comparator(const char* op, const Shape& key, const Shape& result) {
  if (result.rank() != 0 || !is_bool(result.dtype()))
    fail(std::string(op) + "(" + key.to_string() + "): the comparator must return a rank-0 bool tensor, got " +
         result.to_string());
}

}  // namespace sort_shapes

namespace {

// "a before b" on scalars of the key dtype: an i1.
using Before = std::function<Value(Value a, Value b)>;

// top_k keeps a heap of the k best while k is at most this; beyond, sorting
// the whole row costs about as much and streams better.
constexpr int64_t kHeapMax = 1024;
// merge_sort_rows insertion-sorts runs of this length before merging.
constexpr int64_t kRun = 16;

mlir::OpBuilder& builder(CompilationContext& ctx) { return ctx.builder(); }

Value idx(CompilationContext& ctx, int64_t v) {
  return ar::ConstantIndexOp::create(builder(ctx), ctx.loc(), v);
}

// The default order: ascending / descending by value, NaNs last either way.
Before default_before(CompilationContext& ctx, DType d, bool descending) {
  return [&ctx, d, descending](Value a, Value b) -> Value {
    mlir::OpBuilder& bd = builder(ctx);
    mlir::Location l = ctx.loc();
    if (is_float(d)) {
      // Unordered-or-less is true when either is NaN; requiring `a` to be a
      // number leaves exactly "a < b, or b alone is NaN".
      Value lt = ar::CmpFOp::create(bd, l, descending ? ar::CmpFPredicate::UGT : ar::CmpFPredicate::ULT, a, b);
      Value a_num = ar::CmpFOp::create(bd, l, ar::CmpFPredicate::ORD, a, a);
      return ar::AndIOp::create(bd, l, lt, a_num);
    }
    ar::CmpIPredicate p = is_signed_int(d) ? (descending ? ar::CmpIPredicate::sgt : ar::CmpIPredicate::slt)
                                           : (descending ? ar::CmpIPredicate::ugt : ar::CmpIPredicate::ult);
    return ar::CmpIOp::create(bd, l, p, a, b);
  };
}

// Traces the user comparator at the builder's insertion point (the end of a
// loop body) and returns its i1.
Before comparator_before(CompilationContext& ctx, const char* op, const Shape& key_shape, DType d,
                         const SortComparator& cmp) {
  return [&ctx, op, key_shape, d, &cmp](Value a, Value b) -> Value {
    const std::string what = std::string(op) + "(" + key_shape.to_string() + ")";
    return trace_scalar_fn(
        ctx, what, {a, b}, {d, d},
        [&](const Shape& r) { sort_shapes::check_comparator(op, key_shape, r); },
        [&](const std::vector<Tensor>& t) { return cmp(t[0], t[1]); });
  };
}

// Operands viewed as [rows, n] with the sorted axis innermost, and the way back.
struct RowView {
  std::vector<int64_t> perm;  // transposition that moves the axis last
  Shape moved;                // x's shape after that transposition
  int64_t rows = 1, n = 1;
};

RowView row_view(const Shape& x, int axis) {
  RowView v;
  for (int i = 0; i < x.rank(); ++i)
    if (i != axis) v.perm.push_back(i);
  v.perm.push_back(axis);
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  for (int64_t p : v.perm) {
    dims.push_back(x.dim(static_cast<int>(p)));
    tags.push_back(x.tag(static_cast<int>(p)));
  }
  v.moved = Shape(x.dtype(), std::span<const int64_t>(dims), std::span<const Tag>(tags));
  v.n = x.dim(axis);
  v.rows = v.n == 0 ? 0 : x.count() / v.n;
  return v;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

Axes axes_of(const std::vector<int64_t>& perm) { return Axes(perm.begin(), perm.end()); }

Tensor to_rows(const Tensor& x, const RowView& v) {
  Tensor t = is_identity(v.perm) ? x : transpose(x, axes_of(v.perm));
  return reshape(t, {v.rows, v.n});
}

// Inverse of to_rows for a result with `len` elements along the axis.
Tensor from_rows(const Tensor& r, const RowView& v, int64_t len) {
  Shape moved = v.moved.with_dim(v.moved.rank() - 1, len);
  Tensor t = reshape(r, moved.dims(), moved.tags());
  if (is_identity(v.perm)) return t;
  Axes inv(v.perm.size(), 0);
  for (size_t i = 0; i < v.perm.size(); ++i) inv[static_cast<size_t>(v.perm[i])] = static_cast<int>(i);
  return transpose(t, inv);
}

mlir::Value extract2(CompilationContext& ctx, Value t, Value r, Value c) {
  return mlir::tensor::ExtractOp::create(builder(ctx), ctx.loc(), t, ValueRange{r, c});
}
mlir::Value insert2(CompilationContext& ctx, Value v, Value t, Value r, Value c) {
  return mlir::tensor::InsertOp::create(builder(ctx), ctx.loc(), v, t, ValueRange{r, c});
}
mlir::Value extract3(CompilationContext& ctx, Value t, Value h, Value r, Value c) {
  return mlir::tensor::ExtractOp::create(builder(ctx), ctx.loc(), t, ValueRange{h, r, c});
}
mlir::Value insert3(CompilationContext& ctx, Value v, Value t, Value h, Value r, Value c) {
  return mlir::tensor::InsertOp::create(builder(ctx), ctx.loc(), v, t, ValueRange{h, r, c});
}

// Stable bottom-up merge sort of each row of the [rows, n] tensors `ins`
// by ins[0] under `before`; the others follow the same permutation. Returns
// the first `keep` columns of each sorted row (all when keep < 0).
std::vector<Value> merge_sort_rows(CompilationContext& ctx, const std::vector<Value>& ins, int64_t rows, int64_t n,
                                   const Before& before, int64_t keep = -1) {
  if (keep < 0) keep = n;
  if ((n <= 1 || rows == 0) && keep == n) return ins;
  // Runs of kRun are insertion-sorted first (cheaper than the 4 merge passes
  // they replace), then merged pairwise.
  int passes = 0;
  while ((kRun << passes) < n) ++passes;
  mlir::OpBuilder& b = builder(ctx);
  mlir::Location l = ctx.loc();
  const size_t m = ins.size();
  auto attrs = [&](std::initializer_list<int64_t> v) {
    llvm::SmallVector<mlir::OpFoldResult> r;
    for (int64_t x : v) r.push_back(b.getIndexAttr(x));
    return r;
  };

  // Work tensors [2, rows, n]: the two halves are contiguous, so the final
  // slice is copied out with one memcpy.
  std::vector<Value> work;
  for (Value v : ins) {
    auto tt = llvm::cast<mlir::RankedTensorType>(v.getType());
    Value e = mlir::tensor::EmptyOp::create(b, l, llvm::ArrayRef<int64_t>{2, rows, n}, tt.getElementType());
    work.push_back(mlir::tensor::InsertSliceOp::create(b, l, v, e, attrs({0, 0, 0}), attrs({1, rows, n}),
                                                       attrs({1, 1, 1})));
  }
  Value c0 = idx(ctx, 0), c1 = idx(ctx, 1), cn = idx(ctx, n);
  Value c_run = idx(ctx, kRun);
  auto row_loop = mlir::scf::ForOp::create(
      b, l, c0, idx(ctx, rows), c1, work, [&](mlir::OpBuilder&, mlir::Location, Value r, ValueRange w_row) {
        auto runs = mlir::scf::ForOp::create(
            b, l, c0, cn, c_run, w_row, [&](mlir::OpBuilder&, mlir::Location, Value lo, ValueRange w_run) {
              Value hi = ar::MinUIOp::create(b, l, ar::AddIOp::create(b, l, lo, c_run), cn);
              auto elems = mlir::scf::ForOp::create(
                  b, l, ar::AddIOp::create(b, l, lo, c1), hi, c1, w_run,
                  [&](mlir::OpBuilder&, mlir::Location, Value i, ValueRange w) {
                    llvm::SmallVector<Value> vals;
                    for (Value t : w) vals.push_back(extract3(ctx, t, c0, r, i));
                    llvm::SmallVector<Value> init = {i};
                    init.append(w.begin(), w.end());
                    llvm::SmallVector<mlir::Type> types;
                    for (Value v : init) types.push_back(v.getType());
                    // Shift the elements after which vals[0] goes (strictly: ties stay first).
                    auto shift = mlir::scf::WhileOp::create(
                        b, l, types, init,
                        [&](mlir::OpBuilder&, mlir::Location, ValueRange st) {
                          Value pos = st[0];
                          Value first = ar::AddIOp::create(b, l, lo, c1);
                          Value prev = ar::SubIOp::create(b, l, ar::MaxUIOp::create(b, l, pos, first), c1);
                          Value more =
                              ar::AndIOp::create(b, l, ar::CmpIOp::create(b, l, ar::CmpIPredicate::ugt, pos, lo),
                                                 before(vals[0], extract3(ctx, st[1], c0, r, prev)));
                          mlir::scf::ConditionOp::create(b, l, more, st);
                        },
                        [&](mlir::OpBuilder&, mlir::Location, ValueRange st) {
                          Value prev = ar::SubIOp::create(b, l, st[0], c1);
                          llvm::SmallVector<Value> next = {prev};
                          for (size_t t = 0; t < m; ++t)
                            next.push_back(
                                insert3(ctx, extract3(ctx, st[1 + t], c0, r, prev), st[1 + t], c0, r, st[0]));
                          mlir::scf::YieldOp::create(b, l, next);
                        });
                    llvm::SmallVector<Value> out;
                    for (size_t t = 0; t < m; ++t)
                      out.push_back(insert3(ctx, vals[t], shift.getResult(1 + t), c0, r, shift.getResult(0)));
                    mlir::scf::YieldOp::create(b, l, out);
                  });
              mlir::scf::YieldOp::create(b, l, elems.getResults());
            });
        auto pass_loop = mlir::scf::ForOp::create(
            b, l, c0, idx(ctx, passes), c1, runs.getResults(),
            [&](mlir::OpBuilder&, mlir::Location, Value p, ValueRange w_pass) {
              // Pass p merges runs of width kRun * 2^p from half (p & 1) into the other half.
              Value width = ar::ShLIOp::create(b, l, c_run, p);
              Value width2 = ar::ShLIOp::create(b, l, width, c1);
              Value src = ar::AndIOp::create(b, l, p, c1);
              Value dst = ar::SubIOp::create(b, l, c1, src);
              auto run_loop = mlir::scf::ForOp::create(
                  b, l, c0, cn, width2, w_pass, [&](mlir::OpBuilder&, mlir::Location, Value lo, ValueRange w_run) {
                    Value mid = ar::MinUIOp::create(b, l, ar::AddIOp::create(b, l, lo, width), cn);
                    Value hi = ar::MinUIOp::create(b, l, ar::AddIOp::create(b, l, lo, width2), cn);
                    Value mid_last = ar::SubIOp::create(b, l, mid, c1);
                    Value hi_last = ar::SubIOp::create(b, l, hi, c1);
                    llvm::SmallVector<Value> carried = {lo, mid};
                    carried.append(w_run.begin(), w_run.end());
                    auto step_loop = mlir::scf::ForOp::create(
                        b, l, lo, hi, c1, carried, [&](mlir::OpBuilder&, mlir::Location, Value k, ValueRange st) {
                          Value i = st[0], j = st[1];
                          // Clamped reads stay inside the runs; `take_right` ignores them when exhausted.
                          Value li = ar::MinUIOp::create(b, l, i, mid_last);
                          Value rj = ar::MinUIOp::create(b, l, j, hi_last);
                          Value kl = extract3(ctx, st[2], src, r, li), kr = extract3(ctx, st[2], src, r, rj);
                          Value right_first = before(kr, kl);
                          Value left_done = ar::CmpIOp::create(b, l, ar::CmpIPredicate::uge, i, mid);
                          Value right_left = ar::CmpIOp::create(b, l, ar::CmpIPredicate::ult, j, hi);
                          Value take_right =
                              ar::AndIOp::create(b, l, right_left, ar::OrIOp::create(b, l, left_done, right_first));
                          llvm::SmallVector<Value> next = {
                              ar::SelectOp::create(b, l, take_right, i, ar::AddIOp::create(b, l, i, c1)),
                              ar::SelectOp::create(b, l, take_right, ar::AddIOp::create(b, l, j, c1), j)};
                          for (size_t t = 0; t < m; ++t) {
                            Value w = st[2 + t];
                            Value vl = t == 0 ? kl : extract3(ctx, w, src, r, li);
                            Value vr = t == 0 ? kr : extract3(ctx, w, src, r, rj);
                            next.push_back(insert3(ctx, ar::SelectOp::create(b, l, take_right, vr, vl), w, dst, r, k));
                          }
                          mlir::scf::YieldOp::create(b, l, next);
                        });
                    mlir::scf::YieldOp::create(b, l, step_loop.getResults().drop_front(2));
                  });
              mlir::scf::YieldOp::create(b, l, run_loop.getResults());
            });
        mlir::scf::YieldOp::create(b, l, pass_loop.getResults());
      });
  // After `passes` passes the sorted rows are in half (passes & 1).
  const int64_t half = passes & 1;
  std::vector<Value> outs;
  for (Value w : row_loop.getResults()) {
    auto et = llvm::cast<mlir::RankedTensorType>(w.getType()).getElementType();
    if (keep == n) {  // contiguous: one memcpy
      outs.push_back(mlir::tensor::ExtractSliceOp::create(b, l, mlir::RankedTensorType::get({rows, n}, et), w,
                                                          attrs({half, 0, 0}), attrs({1, rows, n}), attrs({1, 1, 1})));
      continue;
    }
    // A strided slice would bufferize to a memref.copy the JIT cannot link
    // (memrefCopy); copy the row heads with loops instead.
    Value e = mlir::tensor::EmptyOp::create(b, l, llvm::ArrayRef<int64_t>{rows, keep}, et);
    Value h = idx(ctx, half);
    auto outer = mlir::scf::ForOp::create(
        b, l, c0, idx(ctx, rows), c1, ValueRange{e}, [&](mlir::OpBuilder&, mlir::Location, Value r, ValueRange o) {
          auto inner = mlir::scf::ForOp::create(
              b, l, c0, idx(ctx, keep), c1, o, [&](mlir::OpBuilder&, mlir::Location, Value c, ValueRange oi) {
                mlir::scf::YieldOp::create(b, l, ValueRange{insert2(ctx, extract3(ctx, w, h, r, c), oi[0], r, c)});
              });
          mlir::scf::YieldOp::create(b, l, inner.getResults());
        });
    outs.push_back(outer.getResult(0));
  }
  return outs;
}

// The core of sort / argsort: sorts `operands` (operands[0] = keys) along
// `axis`; with_index adds the positions as a last payload of index_dtype.
std::vector<Tensor> sort_impl(const char* op, const std::vector<Tensor>& operands, const Axis& axis,
                              const SortComparator* cmp, bool descending, bool with_index, DType index_dtype) {
  std::vector<Shape> shapes;
  for (const Tensor& t : operands) shapes.push_back(t.shape());
  if (operands.empty()) fail(std::string(op) + "(): needs at least one operand");
  CompilationContext& ctx = CompilationContext::require_current(op);
  for (const Tensor& t : operands) context_for(op, {&t});
  ctx.mlir_context().getOrLoadDialect<mlir::scf::SCFDialect>();
  if (with_index) sort_shapes::argsort(shapes[0], axis, index_dtype, cmp != nullptr);
  else sort_shapes::sort(shapes, axis, cmp != nullptr);

  const Shape& key = shapes[0];
  const int a = *key.find_axis(axis);
  const RowView v = row_view(key, a);
  std::vector<Tensor> rows;
  for (const Tensor& t : operands) rows.push_back(to_rows(t, v));
  if (with_index)
    rows.push_back(broadcast(iota(v.n, index_dtype), Shape(index_dtype, {v.rows, v.n}), {1}));
  std::vector<Value> ins;
  for (const Tensor& t : rows) ins.push_back(value_of(t));
  const Before before = cmp ? comparator_before(ctx, op, key, key.dtype(), *cmp)
                            : default_before(ctx, key.dtype(), descending);
  std::vector<Value> sorted = merge_sort_rows(ctx, ins, v.rows, v.n, before);
  std::vector<Tensor> out;
  for (size_t t = 0; t < sorted.size(); ++t) {
    if (with_index && t + 1 < sorted.size()) continue;
    Tensor r = wrap(ctx, sorted[t], rows[t].shape());
    out.push_back(from_rows(r, v, v.n));
  }
  // Results keep each operand's own tags (from_rows restores the key's).
  for (size_t t = 0; t < out.size() && !with_index; ++t) out[t] = out[t].with_tags(operands[t].shape().tags());
  return out;
}

// top_k by a heap of the k best per row, worst at the root (see the file
// comment); returns the heap arrays [rows, k], not yet in order.
std::pair<Value, Value> heap_top_k(CompilationContext& ctx, Value x, int64_t rows, int64_t n, int64_t k, DType d,
                                   DType index_dtype) {
  mlir::OpBuilder& b = builder(ctx);
  mlir::Location l = ctx.loc();
  const Before better_value = default_before(ctx, d, /*descending=*/true);
  mlir::Type et = element_type(&ctx.mlir_context(), d), it = element_type(&ctx.mlir_context(), index_dtype);
  // a ranks below b: a worse value, or an equal one at a later index.
  auto worse = [&](Value va, Value ia, Value vb, Value ib) -> Value {
    Value tie_later = ar::AndIOp::create(
        b, l, ar::XOrIOp::create(b, l, better_value(va, vb), ar::ConstantIntOp::create(b, l, 1, 1)),
        ar::CmpIOp::create(b, l, ar::CmpIPredicate::ugt, ia, ib));
    return ar::OrIOp::create(b, l, better_value(vb, va), tie_later);
  };
  Value c0 = idx(ctx, 0), c1 = idx(ctx, 1), c2 = idx(ctx, 2), ck = idx(ctx, k);
  auto empty = [&](mlir::Type t) -> Value {
    return mlir::tensor::EmptyOp::create(b, l, llvm::ArrayRef<int64_t>{rows, k}, t);
  };
  auto row_loop = mlir::scf::ForOp::create(
      b, l, c0, idx(ctx, rows), c1, ValueRange{empty(et), empty(it)},
      [&](mlir::OpBuilder&, mlir::Location, Value r, ValueRange w_row) {
        // The first k elements: push each, sifting it up past better parents.
        auto fill = mlir::scf::ForOp::create(
            b, l, c0, ck, c1, w_row, [&](mlir::OpBuilder&, mlir::Location, Value i, ValueRange w) {
              Value xv = extract2(ctx, x, r, i), xi = ar::IndexCastOp::create(b, l, it, i);
              llvm::SmallVector<mlir::Type> types = {b.getIndexType(), w[0].getType(), w[1].getType()};
              auto up = mlir::scf::WhileOp::create(
                  b, l, types, ValueRange{i, w[0], w[1]},
                  [&](mlir::OpBuilder&, mlir::Location, ValueRange st) {
                    Value above = ar::SubIOp::create(b, l, ar::MaxUIOp::create(b, l, st[0], c1), c1);
                    Value parent = ar::DivUIOp::create(b, l, above, c2);
                    Value more = ar::AndIOp::create(
                        b, l, ar::CmpIOp::create(b, l, ar::CmpIPredicate::ugt, st[0], c0),
                        worse(xv, xi, extract2(ctx, st[1], r, parent), extract2(ctx, st[2], r, parent)));
                    mlir::scf::ConditionOp::create(b, l, more, st);
                  },
                  [&](mlir::OpBuilder&, mlir::Location, ValueRange st) {
                    Value parent = ar::DivUIOp::create(b, l, ar::SubIOp::create(b, l, st[0], c1), c2);
                    Value hv = insert2(ctx, extract2(ctx, st[1], r, parent), st[1], r, st[0]);
                    Value hi = insert2(ctx, extract2(ctx, st[2], r, parent), st[2], r, st[0]);
                    mlir::scf::YieldOp::create(b, l, ValueRange{parent, hv, hi});
                  });
              Value pos = up.getResult(0);
              mlir::scf::YieldOp::create(b, l, ValueRange{insert2(ctx, xv, up.getResult(1), r, pos),
                                                          insert2(ctx, xi, up.getResult(2), r, pos)});
            });
        // The rest: an element enters only if it beats the root (a later
        // index never wins a tie); it replaces the root and sifts down. The
        // root's value rides along as a scalar.
        llvm::SmallVector<Value> carried(fill.getResults().begin(), fill.getResults().end());
        carried.push_back(extract2(ctx, fill.getResult(0), r, c0));
        auto rest = mlir::scf::ForOp::create(
            b, l, ck, idx(ctx, n), c1, carried, [&](mlir::OpBuilder&, mlir::Location, Value i, ValueRange w) {
              Value xv = extract2(ctx, x, r, i);
              auto admit = mlir::scf::IfOp::create(
                  b, l, better_value(xv, w[2]),
                  [&](mlir::OpBuilder&, mlir::Location) {
                    Value xi = ar::IndexCastOp::create(b, l, it, i);
                    // State: (pos, heap); the before region picks the worse child and
                    // continues while it is worse than x, handing the child on.
                    llvm::SmallVector<mlir::Type> types = {b.getIndexType(), w[0].getType(), w[1].getType(),
                                                           b.getIndexType()};
                    auto down = mlir::scf::WhileOp::create(
                        b, l, types, ValueRange{c0, w[0], w[1]},
                        [&](mlir::OpBuilder&, mlir::Location, ValueRange st) {
                          Value left = ar::AddIOp::create(b, l, ar::MulIOp::create(b, l, st[0], c2), c1);
                          Value right = ar::AddIOp::create(b, l, left, c1);
                          Value has_left = ar::CmpIOp::create(b, l, ar::CmpIPredicate::ult, left, ck);
                          Value has_right = ar::CmpIOp::create(b, l, ar::CmpIPredicate::ult, right, ck);
                          Value lc = ar::MinUIOp::create(b, l, left, idx(ctx, k - 1));
                          Value rc = ar::MinUIOp::create(b, l, right, idx(ctx, k - 1));
                          Value lv = extract2(ctx, st[1], r, lc), li = extract2(ctx, st[2], r, lc);
                          Value rv = extract2(ctx, st[1], r, rc), ri = extract2(ctx, st[2], r, rc);
                          Value use_right = ar::AndIOp::create(b, l, has_right, worse(rv, ri, lv, li));
                          Value cv = ar::SelectOp::create(b, l, use_right, rv, lv);
                          Value ci = ar::SelectOp::create(b, l, use_right, ri, li);
                          Value child = ar::SelectOp::create(b, l, use_right, rc, lc);
                          Value more = ar::AndIOp::create(b, l, has_left, worse(cv, ci, xv, xi));
                          mlir::scf::ConditionOp::create(b, l, more, ValueRange{st[0], st[1], st[2], child});
                        },
                        [&](mlir::OpBuilder&, mlir::Location, ValueRange st) {
                          Value hv = insert2(ctx, extract2(ctx, st[1], r, st[3]), st[1], r, st[0]);
                          Value hi = insert2(ctx, extract2(ctx, st[2], r, st[3]), st[2], r, st[0]);
                          mlir::scf::YieldOp::create(b, l, ValueRange{st[3], hv, hi});
                        });
                    Value pos = down.getResult(0);
                    Value hv = insert2(ctx, xv, down.getResult(1), r, pos);
                    Value hi = insert2(ctx, xi, down.getResult(2), r, pos);
                    mlir::scf::YieldOp::create(b, l, ValueRange{hv, hi, extract2(ctx, hv, r, c0)});
                  },
                  [&](mlir::OpBuilder&, mlir::Location) { mlir::scf::YieldOp::create(b, l, w); });
              mlir::scf::YieldOp::create(b, l, admit.getResults());
            });
        mlir::scf::YieldOp::create(b, l, rest.getResults().take_front(2));
      });
  return {row_loop.getResult(0), row_loop.getResult(1)};
}

}  // namespace

Tensor sort(const Tensor& x, const Axis& axis, SortOptions options) {
  return sort_impl("sort", {x}, axis, nullptr, options.descending, false, DType::kI32)[0];
}
Tensor sort(const Tensor& x, const Axis& axis, const SortComparator& before) {
  return sort_impl("sort", {x}, axis, &before, false, false, DType::kI32)[0];
}
std::vector<Tensor> sort(const std::vector<Tensor>& operands, const Axis& axis, SortOptions options) {
  return sort_impl("sort", operands, axis, nullptr, options.descending, false, DType::kI32);
}
std::vector<Tensor> sort(const std::vector<Tensor>& operands, const Axis& axis, const SortComparator& before) {
  return sort_impl("sort", operands, axis, &before, false, false, DType::kI32);
}

Tensor argsort(const Tensor& x, const Axis& axis, SortOptions options) {
  return sort_impl("argsort", {x}, axis, nullptr, options.descending, true, options.index_dtype)[0];
}
Tensor argsort(const Tensor& x, const Axis& axis, const SortComparator& before, DType index_dtype) {
  return sort_impl("argsort", {x}, axis, &before, false, true, index_dtype)[0];
}

TopK top_k(const Tensor& x, int64_t k, const Axis& axis, DType index_dtype) {
  CompilationContext& ctx = context_for("top_k", {&x});
  ctx.mlir_context().getOrLoadDialect<mlir::scf::SCFDialect>();
  sort_shapes::top_k(x.shape(), k, axis, index_dtype);
  const int a = *x.shape().find_axis(axis);
  const RowView v = row_view(x.shape(), a);
  Tensor rows = to_rows(x, v);
  Value vals, ids;
  if (k <= kHeapMax) {
    auto [hv, hi] = heap_top_k(ctx, value_of(rows), v.rows, v.n, k, x.dtype(), index_dtype);
    // Order the heap: by index, then stably by value (descending).
    std::vector<Value> by_index = merge_sort_rows(ctx, {hi, hv}, v.rows, k, default_before(ctx, index_dtype, false));
    std::vector<Value> by_value = merge_sort_rows(ctx, {by_index[1], by_index[0]}, v.rows, k,
                                                  default_before(ctx, x.dtype(), /*descending=*/true));
    vals = by_value[0];
    ids = by_value[1];
  } else {
    Tensor index = broadcast(iota(v.n, index_dtype), Shape(index_dtype, {v.rows, v.n}), {1});
    std::vector<Value> s = merge_sort_rows(ctx, {value_of(rows), value_of(index)}, v.rows, v.n,
                                           default_before(ctx, x.dtype(), /*descending=*/true), k);
    vals = s[0];
    ids = s[1];
  }
  TopK out;
  out.values = from_rows(wrap(ctx, vals, Shape(x.dtype(), {v.rows, k})), v, k);
  out.indices = from_rows(wrap(ctx, ids, Shape(index_dtype, {v.rows, k})), v, k);
  return out;
}

}  // namespace radix
