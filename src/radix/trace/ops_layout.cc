// Layout ops (ops_layout.h). Slices are tensor.extract_slice (views after
// bufferization); joins and pads write pieces into one destination with
// tensor.insert_slice; reverse is a linalg.generic reading through a
// reversed map; the regrouping ops are reshapes and transposes.
#include "radix/trace/ops_layout.h"

#include <numeric>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;

namespace {

std::string shapes_str(const std::vector<Shape>& xs) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + xs[i].to_string();
  return s;
}

int resolve(const char* op, const Shape& x, const Axis& a) {
  auto i = x.find_axis(a);
  if (!i) fail(std::string(op) + "(" + x.to_string() + "): axis " + a.to_string() + " does not exist");
  return *i;
}

Shape with_dims(const Shape& x, const std::vector<int64_t>& dims, const char* op) {
  try {
    return Shape(x.dtype(), std::span<const int64_t>(dims), x.tags());
  } catch (const std::invalid_argument& e) {
    fail(std::string(op) + "(" + x.to_string() + "): " + e.what());
  }
}

// Writes `piece` into `dest` at `offsets` with `strides`.
mlir::Value insert(CompilationContext& ctx, mlir::Value piece, mlir::Value dest, const Shape& piece_shape,
                   const std::vector<int64_t>& offsets, const std::vector<int64_t>& strides) {
  mlir::OpBuilder& b = ctx.builder();
  std::vector<int64_t> sizes(piece_shape.dims().begin(), piece_shape.dims().end());
  return mlir::tensor::InsertSliceOp::create(b, ctx.loc(), piece, dest, index_attrs(b, offsets), index_attrs(b, sizes),
                                             index_attrs(b, strides));
}

}  // namespace

// ---------------------------------------------------------------- shape inference

namespace infer {

Shape slice(const Shape& x, const std::vector<SliceSpec>& specs) {
  std::vector<int64_t> dims(x.dims().begin(), x.dims().end());
  std::vector<bool> seen(dims.size(), false);
  for (const SliceSpec& s : specs) {
    const int a = resolve("slice", x, s.axis);
    if (seen[static_cast<size_t>(a)]) fail("slice(" + x.to_string() + "): axis " + s.axis.to_string() + " given twice");
    seen[static_cast<size_t>(a)] = true;
    if (s.stride < 1)
      fail("slice(" + x.to_string() + "): stride " + std::to_string(s.stride) + " on axis " + s.axis.to_string() +
           " must be >= 1");
    const int64_t n = x.dim(a);
    auto norm = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
    const int64_t start = norm(s.start), end = std::max(norm(s.end), start);
    dims[static_cast<size_t>(a)] = (end - start + s.stride - 1) / s.stride;
  }
  return with_dims(x, dims, "slice");
}

Shape concatenate(const std::vector<Shape>& xs, const Axis& axis) {
  if (xs.empty()) fail("concatenate: no tensors given");
  const Shape& first = xs[0];
  const int a = resolve("concatenate", first, axis);
  int64_t total = 0;
  for (const Shape& s : xs) {
    bool same = s.rank() == first.rank() && s.dtype() == first.dtype();
    for (int i = 0; same && i < s.rank(); ++i) same = i == a || s.dim(i) == first.dim(i);
    if (!same)
      fail("concatenate(" + shapes_str(xs) + ") along axis " + axis.to_string() +
           ": every tensor needs the same dtype, rank and sizes off that axis");
    if (__builtin_add_overflow(total, s.dim(a), &total)) fail("concatenate(" + shapes_str(xs) + "): size overflow");
  }
  return first.with_dim(a, total);
}

Shape pad(const Shape& x, const std::vector<PadSpec>& specs) {
  std::vector<int64_t> dims(x.dims().begin(), x.dims().end());
  std::vector<bool> seen(dims.size(), false);
  for (const PadSpec& p : specs) {
    const int a = resolve("pad", x, p.axis);
    if (seen[static_cast<size_t>(a)]) fail("pad(" + x.to_string() + "): axis " + p.axis.to_string() + " given twice");
    seen[static_cast<size_t>(a)] = true;
    if (p.low < 0 || p.high < 0 || p.interior < 0)
      fail("pad(" + x.to_string() + "): axis " + p.axis.to_string() + " has a negative padding (low " +
           std::to_string(p.low) + ", high " + std::to_string(p.high) + ", interior " + std::to_string(p.interior) +
           "); slice first to crop");
    const int64_t n = x.dim(a);
    dims[static_cast<size_t>(a)] = p.low + p.high + n + (n > 0 ? (n - 1) * p.interior : 0);
  }
  return with_dims(x, dims, "pad");
}

Shape repeat(const Shape& x, const Axis& axis, int64_t times, const char* op) {
  const int a = resolve(op, x, axis);
  if (times < 1) fail(std::string(op) + "(" + x.to_string() + "): times " + std::to_string(times) + " must be >= 1");
  std::vector<int64_t> dims(x.dims().begin(), x.dims().end());
  if (__builtin_mul_overflow(dims[static_cast<size_t>(a)], times, &dims[static_cast<size_t>(a)]))
    fail(std::string(op) + "(" + x.to_string() + "): size overflow");
  return with_dims(x, dims, op);
}

}  // namespace infer

// ---------------------------------------------------------------- slicing

Tensor slice(const Tensor& x, const std::vector<SliceSpec>& specs) {
  CompilationContext& ctx = context_for("slice", {&x});
  Shape out = infer::slice(x.shape(), specs);
  std::vector<int64_t> offsets(static_cast<size_t>(x.rank()), 0), strides(static_cast<size_t>(x.rank()), 1);
  for (const SliceSpec& s : specs) {
    const int a = x.axis(s.axis);
    const int64_t n = x.dim(a);
    offsets[static_cast<size_t>(a)] = std::clamp<int64_t>(s.start < 0 ? s.start + n : s.start, 0, n);
    strides[static_cast<size_t>(a)] = s.stride;
  }
  if (out.same_dims(x.shape())) return x;
  mlir::OpBuilder& b = ctx.builder();
  std::vector<int64_t> sizes(out.dims().begin(), out.dims().end());
  auto type = tensor_type(&ctx.mlir_context(), out);
  mlir::Value v = mlir::tensor::ExtractSliceOp::create(b, ctx.loc(), type, value_of(x), index_attrs(b, offsets),
                                                       index_attrs(b, sizes), index_attrs(b, strides));
  return wrap(ctx, v, out);
}

Tensor slice(const Tensor& x, const Axis& axis, int64_t start, int64_t end, int64_t stride) {
  return slice(x, std::vector<SliceSpec>{{axis, start, end, stride}});
}

// ---------------------------------------------------------------- joining and splitting

Tensor concatenate(const std::vector<Tensor>& xs, const Axis& axis) {
  if (xs.empty()) fail("concatenate: no tensors given");
  CompilationContext& ctx = CompilationContext::require_current("concatenate");
  std::vector<Shape> shapes;
  for (const Tensor& t : xs) {
    context_for("concatenate", {&t});
    shapes.push_back(t.shape());
  }
  Shape out = infer::concatenate(shapes, axis);
  if (xs.size() == 1) return xs[0];
  const int a = xs[0].axis(axis);
  mlir::Value dest = empty_tensor(ctx, out);
  std::vector<int64_t> offsets(static_cast<size_t>(out.rank()), 0), strides(static_cast<size_t>(out.rank()), 1);
  for (const Tensor& t : xs) {
    if (t.dim(a) == 0) continue;
    dest = insert(ctx, value_of(t), dest, t.shape(), offsets, strides);
    offsets[static_cast<size_t>(a)] += t.dim(a);
  }
  return wrap(ctx, dest, out);
}

Tensor stack(const std::vector<Tensor>& xs, int axis, Tag tag) {
  if (xs.empty()) fail("stack: no tensors given");
  std::vector<Tensor> expanded;
  for (const Tensor& t : xs) {
    if (t.shape().dtype() != xs[0].dtype() || !t.shape().same_dims(xs[0].shape())) {
      std::vector<Shape> shapes;
      for (const Tensor& u : xs) shapes.push_back(u.shape());
      fail("stack(" + shapes_str(shapes) + "): every tensor needs the same dtype and dims");
    }
    expanded.push_back(expand_dims(t, axis, tag));
  }
  return concatenate(expanded, axis < 0 ? axis + xs[0].rank() + 1 : axis);
}

std::vector<Tensor> split(const Tensor& x, const Axis& axis, const std::vector<int64_t>& sizes) {
  context_for("split", {&x});
  const int a = x.axis(axis);
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail(describe("split", {&x}) + ": negative piece size " + std::to_string(s));
    total += s;
  }
  if (total != x.dim(a))
    fail(describe("split", {&x}) + ": piece sizes sum to " + std::to_string(total) + ", axis " + axis.to_string() +
         " has size " + std::to_string(x.dim(a)));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, a, at, at + s));
    at += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, const Axis& axis, int64_t n) {
  context_for("chunk", {&x});
  const int a = x.axis(axis);
  if (n < 1 || x.dim(a) % n != 0)
    fail(describe("chunk", {&x}) + ": axis " + axis.to_string() + " of size " + std::to_string(x.dim(a)) +
         " does not split into " + std::to_string(n) + " equal pieces");
  return split(x, a, std::vector<int64_t>(static_cast<size_t>(n), x.dim(a) / n));
}

// ---------------------------------------------------------------- padding and reversing

Tensor pad(const Tensor& x, const std::vector<PadSpec>& specs, double value) {
  CompilationContext& ctx = context_for("pad", {&x});
  Shape out = infer::pad(x.shape(), specs);
  Tensor filled = full(out, value);
  if (x.count() == 0) return filled;
  std::vector<int64_t> offsets(static_cast<size_t>(x.rank()), 0), strides(static_cast<size_t>(x.rank()), 1);
  for (const PadSpec& p : specs) {
    const int a = x.axis(p.axis);
    offsets[static_cast<size_t>(a)] = p.low;
    strides[static_cast<size_t>(a)] = p.interior + 1;
  }
  return wrap(ctx, insert(ctx, value_of(x), value_of(filled), x.shape(), offsets, strides), out);
}

Tensor reverse(const Tensor& x, const std::vector<Axis>& axes) {
  CompilationContext& ctx = context_for("reverse", {&x});
  std::vector<bool> rev(static_cast<size_t>(x.rank()), false);
  for (const Axis& a : axes) {
    const int i = resolve("reverse", x.shape(), a);
    if (rev[static_cast<size_t>(i)]) fail(describe("reverse", {&x}) + ": axis " + a.to_string() + " given twice");
    rev[static_cast<size_t>(i)] = true;
  }
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  const unsigned r = static_cast<unsigned>(x.rank());
  llvm::SmallVector<mlir::AffineExpr> in;
  bool any = false;
  for (unsigned i = 0; i < r; ++i) {
    mlir::AffineExpr d = mlir::getAffineDimExpr(i, mctx);
    const bool flip = rev[i] && x.dim(static_cast<int>(i)) > 1;
    any |= flip;
    in.push_back(flip ? mlir::getAffineConstantExpr(x.dim(static_cast<int>(i)) - 1, mctx) - d : d);
  }
  if (!any) return x;
  llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::get(r, 0, in, mctx),
                                             mlir::AffineMap::getMultiDimIdentityMap(r, mctx)};
  llvm::SmallVector<mlir::utils::IteratorType> iters(r, mlir::utils::IteratorType::parallel);
  mlir::OpBuilder& b = ctx.builder();
  auto g = mlir::linalg::GenericOp::create(
      b, ctx.loc(), mlir::TypeRange{tensor_type(mctx, x.shape())}, mlir::ValueRange{value_of(x)},
      mlir::ValueRange{empty_tensor(ctx, x.shape())}, maps, iters,
      [](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        mlir::linalg::YieldOp::create(nb, nl, args[0]);
      });
  return wrap(ctx, g.getResult(0), x.shape());
}

// ---------------------------------------------------------------- repeating

namespace {
// Broadcasts x with a new axis of size `times` after (repeat) or before
// (tile) `axis`, then merges the two.
Tensor repeat_impl(const char* op, const Tensor& x, const Axis& axis, int64_t times, bool inner) {
  context_for(op, {&x});
  Shape out = infer::repeat(x.shape(), axis, times, op);
  if (times == 1) return x;
  const int a = x.axis(axis);
  const int new_axis = inner ? a + 1 : a;
  Shape wide = x.shape().without_tags().insert_axis(new_axis, times);
  Axes map;
  for (int i = 0; i < x.rank(); ++i) map.push_back(i < new_axis ? i : i + 1);
  Tensor b = broadcast(x, wide, map);
  return reshape(b, out.dims(), out.tags());
}
}  // namespace

Tensor repeat(const Tensor& x, const Axis& axis, int64_t times) { return repeat_impl("repeat", x, axis, times, true); }
Tensor tile(const Tensor& x, const Axis& axis, int64_t times) { return repeat_impl("tile", x, axis, times, false); }

// ---------------------------------------------------------------- regrouping

Tensor flatten(const Tensor& x, Tag tag) {
  context_for("flatten", {&x});
  const int64_t n = x.count();
  std::vector<Tag> tags = {tag};
  return reshape(x, std::span<const int64_t>(&n, 1), tag.empty() ? std::span<const Tag>() : std::span<const Tag>(tags));
}

Tensor merge_axes(const Tensor& x, const Axis& first, const Axis& last, Tag tag) {
  context_for("merge_axes", {&x});
  const int f = resolve("merge_axes", x.shape(), first), l = resolve("merge_axes", x.shape(), last);
  if (f > l) fail(describe("merge_axes", {&x}) + ": axis " + first.to_string() + " comes after " + last.to_string());
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  for (int i = 0; i < x.rank(); ++i) {
    if (i > f && i <= l) {
      dims.back() *= x.dim(i);
      continue;
    }
    dims.push_back(x.dim(i));
    tags.push_back(i == f ? tag : x.shape().tag(i));
  }
  return reshape(x, dims, tags);
}

Tensor split_axis(const Tensor& x, const Axis& axis, const std::vector<int64_t>& parts, const std::vector<Tag>& part_tags) {
  context_for("split_axis", {&x});
  const int a = resolve("split_axis", x.shape(), axis);
  if (!part_tags.empty() && part_tags.size() != parts.size())
    fail(describe("split_axis", {&x}) + ": " + std::to_string(part_tags.size()) + " tags for " +
         std::to_string(parts.size()) + " parts");
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  int infer_at = -1;
  int64_t known = 1;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (parts[k] == -1) {
      if (infer_at >= 0) fail(describe("split_axis", {&x}) + ": more than one -1");
      infer_at = static_cast<int>(k);
    } else if (parts[k] < 0) {
      fail(describe("split_axis", {&x}) + ": negative part " + std::to_string(parts[k]));
    } else {
      known *= parts[k];
    }
  }
  std::vector<int64_t> p = parts;
  if (infer_at >= 0) {
    if (known == 0 || x.dim(a) % known != 0)
      fail(describe("split_axis", {&x}) + ": cannot infer the -1 part of axis " + axis.to_string());
    p[static_cast<size_t>(infer_at)] = x.dim(a) / known;
    known *= p[static_cast<size_t>(infer_at)];
  }
  if (known != x.dim(a))
    fail(describe("split_axis", {&x}) + ": parts multiply to " + std::to_string(known) + ", axis " +
         axis.to_string() + " has size " + std::to_string(x.dim(a)));
  for (int i = 0; i < x.rank(); ++i) {
    if (i != a) {
      dims.push_back(x.dim(i));
      tags.push_back(x.shape().tag(i));
      continue;
    }
    for (size_t k = 0; k < p.size(); ++k) {
      dims.push_back(p[k]);
      tags.push_back(part_tags.empty() ? Tag() : part_tags[k]);
    }
  }
  return reshape(x, dims, tags);
}

Tensor swap_axes(const Tensor& x, const Axis& a, const Axis& b) {
  context_for("swap_axes", {&x});
  const int i = resolve("swap_axes", x.shape(), a), j = resolve("swap_axes", x.shape(), b);
  Axes perm;
  for (int k = 0; k < x.rank(); ++k) perm.push_back(k == i ? j : k == j ? i : k);
  return transpose(x, perm);
}

}  // namespace radix
