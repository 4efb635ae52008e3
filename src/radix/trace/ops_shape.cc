// Shape ops: broadcast, reshape, transpose, expand_dims, squeeze.
#include <numeric>

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;

namespace {
mlir::Value identity_body(mlir::OpBuilder&, mlir::Location, mlir::ValueRange v) { return v[0]; }


void check_broadcast_dims(const char* op, const Tensor& x, const Shape& shape, const std::vector<int>& map) {
  for (int i = 0; i < x.rank(); ++i) {
    int64_t d = x.shape().dim(i), t = shape.dim(map[static_cast<size_t>(i)]);
    if (d != t && d != 1)
      fail(std::string(op) + ": cannot broadcast " + x.shape().to_string() + " to " + shape.to_string() + ": axis " +
           std::to_string(i) + " has size " + std::to_string(d) + " but target axis " +
           std::to_string(map[static_cast<size_t>(i)]) + " has size " + std::to_string(t));
  }
}
}  // namespace

Tensor broadcast(const Tensor& x, const Shape& shape, const Axes& axes) {
  CompilationContext& ctx = context_for("broadcast", {&x});
  if (axes.size() != static_cast<size_t>(x.rank()))
    fail("broadcast: " + x.shape().to_string() + " to " + shape.to_string() + ": " + std::to_string(axes.size()) +
         " axes given for an operand of rank " + std::to_string(x.rank()));
  std::vector<int> map;
  for (const Axis& a : axes) {
    auto j = shape.find_axis(a);
    if (!j)
      fail("broadcast: " + x.shape().to_string() + " to " + shape.to_string() + ": axis " + a.to_string() +
           " is not in the target shape");
    for (int prev : map)
      if (prev == *j) fail("broadcast: axes " + axes_str(axes) + " map two operand axes to target axis " +
                           std::to_string(*j));
    map.push_back(*j);
  }
  check_broadcast_dims("broadcast", x, shape, map);
  const Tensor* ops[] = {&x};
  return emit_map(ctx, ops, {map}, shape_for("broadcast", {&x}, [&] { return shape.with_dtype(x.dtype()); }),
                  identity_body);
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  CompilationContext& ctx = context_for("broadcast_to", {&x});
  if (x.rank() > shape.rank())
    fail("broadcast_to: cannot broadcast " + x.shape().to_string() + " to the lower-rank " + shape.to_string());
  bool by_tag = x.rank() > 0;
  for (int i = 0; i < x.rank(); ++i) by_tag &= !x.shape().tag(i).empty();
  for (int i = 0; i < shape.rank(); ++i) by_tag &= !shape.tag(i).empty();
  std::vector<int> map;
  for (int i = 0; i < x.rank(); ++i) {
    if (by_tag) {
      auto j = shape.find_axis(Axis(x.shape().tag(i)));
      if (!j)
        fail("broadcast_to: cannot broadcast " + x.shape().to_string() + " to " + shape.to_string() + ": tag '" +
             std::string(x.shape().tag(i).name()) + "' is not in the target");
      map.push_back(*j);
    } else {
      map.push_back(shape.rank() - x.rank() + i);
    }
  }
  check_broadcast_dims("broadcast_to", x, shape, map);
  const Tensor* ops[] = {&x};
  return emit_map(ctx, ops, {map}, shape_for("broadcast_to", {&x}, [&] { return shape.with_dtype(x.dtype()); }),
                  identity_body);
}

Tensor reshape(const Tensor& x, std::initializer_list<int64_t> dims) {
  return reshape(x, std::span<const int64_t>(dims.begin(), dims.size()));
}

Tensor reshape(const Tensor& x, std::span<const int64_t> dims_in, std::span<const Tag> tags) {
  CompilationContext& ctx = context_for("reshape", {&x});
  auto dims_str = [&] {
    std::string s = "[";
    for (size_t i = 0; i < dims_in.size(); ++i) {
      if (i) s += ",";
      s += std::to_string(dims_in[i]);
    }
    return s + "]";
  };
  if (dims_in.size() > static_cast<size_t>(kMaxRank))
    fail("reshape: " + x.shape().to_string() + " to " + dims_str() + ": rank exceeds 8");
  std::vector<int64_t> dims(dims_in.begin(), dims_in.end());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer >= 0) fail("reshape: " + x.shape().to_string() + " to " + dims_str() + ": more than one -1");
      infer = static_cast<int>(i);
    } else if (dims[i] < 0) {
      fail("reshape: " + x.shape().to_string() + " to " + dims_str() + ": negative dimension");
    } else if (__builtin_mul_overflow(known, dims[i], &known)) {
      fail("reshape: " + x.shape().to_string() + " to " + dims_str() + ": the element count overflows 64 bits");
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.count() % known != 0)
      fail("reshape: " + x.shape().to_string() + " to " + dims_str() + ": cannot infer the -1 dimension");
    dims[static_cast<size_t>(infer)] = x.count() / known;
    known *= dims[static_cast<size_t>(infer)];
  }
  if (known != x.count())
    fail("reshape: " + x.shape().to_string() + " (" + std::to_string(x.count()) + " elements) to " + dims_str() +
         " (" + std::to_string(known) + " elements)");
  Shape out;
  try {
    out = tags.empty() ? Shape(x.dtype(), std::span<const int64_t>(dims))
                       : Shape(x.dtype(), std::span<const int64_t>(dims), tags);
  } catch (const std::invalid_argument& e) {
    fail("reshape: " + x.shape().to_string() + " to " + dims_str() + ": " + e.what());
  }
  if (out.same_dims(x.shape())) return x.with_tags(out.tags());

  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Value v = value_of(x);
  // Collapse to rank 1 (or 0), then expand to the target: both are views
  // of contiguous data, so bufferization makes no copy.
  if (x.rank() > 1) {
    mlir::ReassociationIndices all(static_cast<size_t>(x.rank()));
    std::iota(all.begin(), all.end(), 0);
    auto t = tensor_type(mctx, Shape(x.dtype(), {x.count()}));
    v = mlir::tensor::CollapseShapeOp::create(b, ctx.loc(), t, v, llvm::ArrayRef<mlir::ReassociationIndices>{all});
  }
  auto out_t = tensor_type(mctx, out);
  if (out.rank() == 0) {
    v = mlir::tensor::CollapseShapeOp::create(b, ctx.loc(), out_t, v, llvm::ArrayRef<mlir::ReassociationIndices>{});
  } else if (x.rank() == 0) {
    v = mlir::tensor::ExpandShapeOp::create(b, ctx.loc(), out_t, v, llvm::ArrayRef<mlir::ReassociationIndices>{});
  } else if (out.rank() > 1) {
    mlir::ReassociationIndices all(static_cast<size_t>(out.rank()));
    std::iota(all.begin(), all.end(), 0);
    v = mlir::tensor::ExpandShapeOp::create(b, ctx.loc(), out_t, v, llvm::ArrayRef<mlir::ReassociationIndices>{all});
  }
  return wrap(ctx, v, out);
}

Tensor transpose(const Tensor& x, const Axes& perm) {
  CompilationContext& ctx = context_for("transpose", {&x});
  if (perm.size() != static_cast<size_t>(x.rank()))
    fail("transpose: " + x.shape().to_string() + " with permutation " + axes_str(perm) + ": need " +
         std::to_string(x.rank()) + " axes");
  std::vector<int> p;
  std::vector<int> map(static_cast<size_t>(x.rank()), -1);
  for (size_t i = 0; i < perm.size(); ++i) {
    auto a = x.shape().find_axis(perm[i]);
    if (!a) fail("transpose: " + x.shape().to_string() + ": axis " + perm[i].to_string() + " does not exist");
    if (map[static_cast<size_t>(*a)] >= 0)
      fail("transpose: " + x.shape().to_string() + ": permutation " + axes_str(perm) + " repeats an axis");
    map[static_cast<size_t>(*a)] = static_cast<int>(i);
    p.push_back(*a);
  }
  bool identity = true;
  for (size_t i = 0; i < p.size(); ++i) identity &= p[i] == static_cast<int>(i);
  if (identity) return x;
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  Shape out(x.dtype());
  for (int a : p) {
    dims.push_back(x.shape().dim(a));
    tags.push_back(x.shape().tag(a));
  }
  out = Shape(x.dtype(), std::span<const int64_t>(dims), std::span<const Tag>(tags));
  const Tensor* ops[] = {&x};
  return emit_map(ctx, ops, {map}, out, identity_body);
}

Tensor expand_dims(const Tensor& x, int axis, Tag tag) {
  context_for("expand_dims", {&x});
  if (axis < 0) axis += x.rank() + 1;
  if (axis < 0 || axis > x.rank())
    fail("expand_dims: " + x.shape().to_string() + ": axis " + std::to_string(axis) + " out of range");
  Shape s;
  try {
    s = x.shape().insert_axis(axis, 1, tag);
  } catch (const std::invalid_argument& e) {
    fail(std::string("expand_dims: ") + x.shape().to_string() + ": " + e.what());
  }
  return reshape(x, s.dims(), s.tags());
}

Tensor squeeze(const Tensor& x, const Axis& axis) {
  context_for("squeeze", {&x});
  int a = x.axis(axis);
  if (x.shape().dim(a) != 1)
    fail("squeeze: " + x.shape().to_string() + ": axis " + axis.to_string() + " has size " +
         std::to_string(x.shape().dim(a)) + ", not 1");
  Shape s = x.shape().drop_axis(a);
  return reshape(x, s.dims(), s.tags());
}

}  // namespace radix
