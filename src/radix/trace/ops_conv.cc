// Convolution and pooling. Shape inference (conv_geometry, window_geometry)
// is pure and runs first. Emission pads (see pad()), then emits either a named
// linalg.conv_2d_nhwc_hwcf (groups == 1, which the CPU schedule vectorizes;
// NCHW / OIHW operands are transposed to it and back, conv1d gets a unit H
// axis) or one linalg.generic (grouped convolutions, reduce_window; pooling
// over H and W of an f32 / f64 NHWC tensor emits linalg.pooling_nhwc_*).
#include <algorithm>
#include <functional>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "radix/trace/emit_util.h"
#include "radix/trace/ops.h"

namespace radix {

using namespace detail;
using mlir::Value;

namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

std::string padding_str(const Padding& p) {
  switch (p.mode) {
    case Padding::Mode::kValid: return "valid";
    case Padding::Mode::kSame: return "same";
    case Padding::Mode::kExplicit: break;
  }
  std::string s = "[";
  for (size_t i = 0; i < p.pads.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(p.pads[i].first) + ":" + std::to_string(p.pads[i].second);
  }
  return s + "]";
}

using Err = std::function<void(const std::string&)>;

// Resolves a per-dim attribute: empty -> `dflt` everywhere, one value ->
// that value everywhere, else exactly n values; all must be positive.
std::vector<int64_t> per_dim(const std::vector<int64_t>& v, size_t n, int64_t dflt, const char* what, const Err& err) {
  std::vector<int64_t> r;
  if (v.empty()) r.assign(n, dflt);
  else if (v.size() == 1) r.assign(n, v[0]);
  else if (v.size() == n) r = v;
  else err(std::string(what) + " has " + std::to_string(v.size()) + " values, expected 1 or " + std::to_string(n));
  for (int64_t x : r)
    if (x <= 0) err(std::string(what) + " must be positive, got " + ints(v));
  return r;
}

// Per spatial / windowed dim: sizes, attributes, resolved padding, output size.
struct Spatial {
  std::vector<int64_t> in, k, stride, dil, lo, hi, out;
};

// Fills lo / hi / out from in / k / stride / dil; `what` names the kernel
// ("kernel" or "window") in errors.
void resolve_spatial(Spatial& s, const Padding& p, const char* what, const Err& err) {
  const size_t n = s.in.size();
  s.lo.assign(n, 0);
  s.hi.assign(n, 0);
  s.out.assign(n, 0);
  if (p.mode == Padding::Mode::kExplicit) {
    if (p.pads.size() != n)
      err("explicit padding has " + std::to_string(p.pads.size()) + " (low, high) pairs, expected " + std::to_string(n));
    for (size_t i = 0; i < n; ++i) {
      if (p.pads[i].first < 0 || p.pads[i].second < 0) err("padding must be >= 0, got " + padding_str(p));
      s.lo[i] = p.pads[i].first;
      s.hi[i] = p.pads[i].second;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (s.k[i] < 1) err(std::string(what) + " size must be >= 1 in every dim, got " + ints(s.k));
    const int64_t eff = (s.k[i] - 1) * s.dil[i] + 1;
    if (p.mode == Padding::Mode::kSame) {
      const int64_t out = (s.in[i] + s.stride[i] - 1) / s.stride[i];
      const int64_t total = std::max<int64_t>((out - 1) * s.stride[i] + eff - s.in[i], 0);
      s.lo[i] = total / 2;
      s.hi[i] = total - s.lo[i];
    }
    const int64_t padded = s.in[i] + s.lo[i] + s.hi[i];
    if (eff > padded)
      err(std::string(what) + " (effective size " + std::to_string(eff) + " with dilation " + std::to_string(s.dil[i]) +
          ") is bigger than the padded input (" + std::to_string(padded) + ") in spatial dim " + std::to_string(i));
    s.out[i] = (padded - eff) / s.stride[i] + 1;
  }
}

// ---------------------------------------------------------------- conv shapes

struct ConvGeometry {
  int sr = 0;                // spatial rank
  int in_c = 0, k_i = 0, k_o = 0;  // channel axes of input / kernel
  std::vector<int> in_sp, k_sp;    // spatial axes of input / kernel
  int64_t N = 0, C = 0, O = 0, G = 1;
  Spatial sp;
  Shape out;  // the result: input dtype, tagged
};

ConvGeometry conv_geometry(const char* op, int sr, const Shape& in, const Shape& k, const ConvOptions& o) {
  const bool nhwc = o.layout == ConvLayout::kNHWC;
  const std::string layout = sr == 1 ? (nhwc ? "NWC/WIO" : "NCW/OIW") : (nhwc ? "NHWC/HWIO" : "NCHW/OIHW");
  Err err = [&](const std::string& why) {
    fail(std::string(op) + "(" + in.to_string() + ", " + k.to_string() + "; " + layout + ", strides " +
         ints(o.strides) + ", dilations " + ints(o.dilations) + ", padding " + padding_str(o.padding) + ", groups " +
         std::to_string(o.groups) + "): " + why);
  };
  if (in.dtype() != k.dtype()) err("input and kernel must share one dtype");
  if (!is_float(in.dtype())) err("requires a floating-point dtype, got " + std::string(dtype_name(in.dtype())));
  if (in.rank() != sr + 2 || k.rank() != sr + 2)
    err("input and kernel must have rank " + std::to_string(sr + 2) + " (" + layout + ")");
  ConvGeometry g;
  g.sr = sr;
  for (int i = 0; i < sr; ++i) {
    g.in_sp.push_back(nhwc ? 1 + i : 2 + i);
    g.k_sp.push_back(nhwc ? i : 2 + i);
  }
  g.in_c = nhwc ? sr + 1 : 1;
  g.k_i = nhwc ? sr : 1;
  g.k_o = nhwc ? sr + 1 : 0;
  g.N = in.dim(0);
  g.C = in.dim(g.in_c);
  g.O = k.dim(g.k_o);
  g.G = o.groups;
  if (g.G < 1) err("groups must be >= 1");
  if (g.C % g.G != 0) err("groups (" + std::to_string(g.G) + ") must divide the input channels (" + std::to_string(g.C) + ")");
  if (g.O % g.G != 0)
    err("groups (" + std::to_string(g.G) + ") must divide the kernel's output channels (" + std::to_string(g.O) + ")");
  if (k.dim(g.k_i) != g.C / g.G)
    err("the input has " + std::to_string(g.C) + " channels, so the kernel's input-channel axis must be C/groups = " +
        std::to_string(g.C / g.G) + ", got " + std::to_string(k.dim(g.k_i)));
  const size_t n = static_cast<size_t>(sr);
  g.sp.stride = per_dim(o.strides, n, 1, "strides", err);
  g.sp.dil = per_dim(o.dilations, n, 1, "dilations", err);
  for (int i = 0; i < sr; ++i) {
    g.sp.in.push_back(in.dim(g.in_sp[static_cast<size_t>(i)]));
    g.sp.k.push_back(k.dim(g.k_sp[static_cast<size_t>(i)]));
  }
  resolve_spatial(g.sp, o.padding, "kernel", err);

  std::vector<int64_t> dims(n + 2);
  std::vector<Tag> tags(n + 2);
  const int oc = nhwc ? sr + 1 : 1;
  dims[0] = g.N;
  tags[0] = in.tag(0);
  dims[static_cast<size_t>(oc)] = g.O;
  tags[static_cast<size_t>(oc)] = k.tag(g.k_o).empty() ? in.tag(g.in_c) : k.tag(g.k_o);
  for (int i = 0; i < sr; ++i) {
    const size_t a = static_cast<size_t>(g.in_sp[static_cast<size_t>(i)]);
    dims[a] = g.sp.out[static_cast<size_t>(i)];
    tags[a] = in.tag(static_cast<int>(a));
  }
  try {
    g.out = Shape(in.dtype(), std::span<const int64_t>(dims), std::span<const Tag>(tags));
  } catch (const std::invalid_argument& e) {
    err(std::string("result: ") + e.what());
  }
  return g;
}

// ---------------------------------------------------------------- window shapes

const char* kind_name(WindowReduction k) {
  switch (k) {
    case WindowReduction::kMax: return "max";
    case WindowReduction::kMin: return "min";
    case WindowReduction::kSum: return "sum";
    case WindowReduction::kAvg: return "avg";
  }
  return "?";
}

struct WindowGeometry {
  std::vector<int> axes;  // windowed axes of x, in opts order
  Spatial sp;
  Shape out;
};

WindowGeometry window_geometry(const char* op, const Shape& x, WindowReduction kind, const WindowOptions& o) {
  Err err = [&](const std::string& why) {
    std::string axes = "{";
    for (size_t i = 0; i < o.axes.size(); ++i) axes += (i ? ", " : "") + o.axes[i].to_string();
    fail(std::string(op) + "(" + x.to_string() + "; " + kind_name(kind) + ", axes " + axes + "}, window " +
         ints(o.window) + ", strides " + ints(o.strides) + ", dilations " + ints(o.dilations) + ", padding " +
         padding_str(o.padding) + "): " + why);
  };
  if (is_bool(x.dtype())) err("not defined for bool tensors");
  if (kind == WindowReduction::kAvg && !is_float(x.dtype()))
    err("avg requires a floating-point dtype, got " + std::string(dtype_name(x.dtype())));
  if (o.axes.empty()) err("no windowed axes given");
  if (o.window.size() != o.axes.size())
    err("window has " + std::to_string(o.window.size()) + " sizes for " + std::to_string(o.axes.size()) + " axes");
  WindowGeometry g;
  std::vector<bool> seen(static_cast<size_t>(x.rank()), false);
  for (const Axis& a : o.axes) {
    auto i = x.find_axis(a);
    if (!i) err("axis " + a.to_string() + " does not exist");
    if (seen[static_cast<size_t>(*i)]) err("axis " + a.to_string() + " given twice");
    seen[static_cast<size_t>(*i)] = true;
    g.axes.push_back(*i);
    g.sp.in.push_back(x.dim(*i));
  }
  const size_t n = o.axes.size();
  g.sp.k = o.window;
  g.sp.stride = per_dim(o.strides, n, 1, "strides", err);
  g.sp.dil = per_dim(o.dilations, n, 1, "dilations", err);
  resolve_spatial(g.sp, o.padding, "window", err);
  g.out = x;
  for (size_t j = 0; j < n; ++j) g.out = g.out.with_dim(g.axes[j], g.sp.out[j]);
  return g;
}

// ---------------------------------------------------------------- emission helpers

// The identity of a window reduction in dtype d (padding value of max / min pooling).
Value identity(mlir::OpBuilder& b, mlir::Location l, DType d, WindowReduction k) {
  if (k == WindowReduction::kSum || k == WindowReduction::kAvg) return scalar_constant(b, l, d, 0);
  const bool is_max = k == WindowReduction::kMax;
  mlir::Type et = element_type(b.getContext(), d);
  if (is_float(d)) {
    auto fe = llvm::cast<mlir::FloatType>(et);
    return mlir::arith::ConstantOp::create(
        b, l, b.getFloatAttr(et, llvm::APFloat::getInf(fe.getFloatSemantics(), /*Negative=*/is_max)));
  }
  const unsigned bits = static_cast<unsigned>(dtype_bits(d));
  llvm::APInt v = is_signed_int(d) ? (is_max ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getSignedMaxValue(bits))
                                   : (is_max ? llvm::APInt::getMinValue(bits) : llvm::APInt::getMaxValue(bits));
  return mlir::arith::ConstantOp::create(b, l, b.getIntegerAttr(et, v));
}

Value combine(mlir::OpBuilder& b, mlir::Location l, DType d, WindowReduction k, Value x, Value acc) {
  namespace ar = mlir::arith;
  switch (k) {
    case WindowReduction::kSum:
    case WindowReduction::kAvg:
      if (is_float(d)) return ar::AddFOp::create(b, l, x, acc);
      return ar::AddIOp::create(b, l, x, acc);
    case WindowReduction::kMax:
      if (is_float(d)) return ar::MaximumFOp::create(b, l, x, acc);
      if (is_signed_int(d)) return ar::MaxSIOp::create(b, l, x, acc);
      return ar::MaxUIOp::create(b, l, x, acc);
    case WindowReduction::kMin:
      if (is_float(d)) return ar::MinimumFOp::create(b, l, x, acc);
      if (is_signed_int(d)) return ar::MinSIOp::create(b, l, x, acc);
      return ar::MinUIOp::create(b, l, x, acc);
  }
  return acc;
}

// x (untagged) padded by lo / hi per axis with the scalar `value`; no-op
// without padding. Not a tensor.pad (nor a plain copy into a slice, which
// canonicalization folds back into an insert_slice): both bufferize to a
// strided memref.copy, which lowers to a call of the runtime's memrefCopy that
// the JIT does not link. Instead the padded tensor is filled and its interior
// slice written in place by a linalg.generic that reads x with tensor.extract
// at its own indices; marked kPadCopyAttr so that the CPU schedule vectorizes
// it (contiguous loads) instead of treating it as a plain elementwise op.
constexpr const char* kPadCopyAttr = "radix.pad_copy";

Tensor pad(CompilationContext& ctx, const Tensor& x, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
           Value value) {
  bool any = false;
  for (size_t i = 0; i < lo.size(); ++i) any |= lo[i] != 0 || hi[i] != 0;
  if (!any) return x;
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Location l = ctx.loc();
  Shape s = x.shape();
  llvm::SmallVector<mlir::OpFoldResult> offsets, sizes, strides;
  for (int i = 0; i < x.rank(); ++i) {
    const size_t u = static_cast<size_t>(i);
    s = s.with_dim(i, x.shape().dim(i) + lo[u] + hi[u]);
    offsets.push_back(b.getIndexAttr(lo[u]));
    sizes.push_back(b.getIndexAttr(x.shape().dim(i)));
    strides.push_back(b.getIndexAttr(1));
  }
  Value full = mlir::linalg::FillOp::create(b, l, mlir::ValueRange{value}, mlir::ValueRange{empty_tensor(ctx, s)})
                   .getResult(0);
  Value inner = mlir::tensor::ExtractSliceOp::create(b, l, tensor_type(mctx, x.shape()), full, offsets, sizes, strides);
  const unsigned r = static_cast<unsigned>(x.rank());
  llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::getMultiDimIdentityMap(r, mctx)};
  llvm::SmallVector<mlir::utils::IteratorType> iters(r, mlir::utils::IteratorType::parallel);
  Value src = value_of(x);
  auto copy = mlir::linalg::GenericOp::create(
      b, l, mlir::TypeRange{inner.getType()}, mlir::ValueRange{}, mlir::ValueRange{inner}, maps, iters,
      [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange) {
        llvm::SmallVector<Value> idx;
        for (unsigned i = 0; i < r; ++i) idx.push_back(mlir::linalg::IndexOp::create(nb, nl, i));
        mlir::linalg::YieldOp::create(nb, nl, Value(mlir::tensor::ExtractOp::create(nb, nl, src, idx)));
      });
  copy->setAttr(kPadCopyAttr, b.getUnitAttr());
  Value v = mlir::tensor::InsertSliceOp::create(b, l, copy.getResult(0), full, offsets, sizes, strides);
  return wrap(ctx, v, s);
}

Tensor filled(CompilationContext& ctx, const Shape& s, Value init) {
  Value v = mlir::linalg::FillOp::create(ctx.builder(), ctx.loc(), mlir::ValueRange{init},
                                         mlir::ValueRange{empty_tensor(ctx, s)})
                .getResult(0);
  return wrap(ctx, v, s);
}

Shape untagged(DType d, std::vector<int64_t> dims) { return Shape(d, std::span<const int64_t>(dims)); }

// ---------------------------------------------------------------- conv emission

// A 2-D NHWC / HWIO convolution of untagged, already padded acc-dtype
// operands; returns the untagged [N, OH, OW, O] result `out`.
Tensor emit_conv2d(CompilationContext& ctx, const Tensor& x, const Tensor& k, int64_t groups,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& dil, const Shape& out) {
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Location l = ctx.loc();
  const DType d = x.dtype();
  Tensor acc = filled(ctx, out, scalar_constant(b, l, d, 0));
  if (groups == 1) {
    llvm::SmallVector<Value, 2> ins = {value_of(x), value_of(k)};
    Value r = mlir::linalg::Conv2DNhwcHwcfOp::create(b, l, mlir::TypeRange{tensor_type(mctx, out)}, ins,
                                                     mlir::ValueRange{value_of(acc)}, b.getI64VectorAttr(stride),
                                                     b.getI64VectorAttr(dil))
                  .getResult(0);
    return wrap(ctx, r, out);
  }
  // Grouped: split the channel axes into (group, channel in group), input
  // [N, H, W, G, C/G], kernel [KH, KW, C/G, G, O/G], result [N, OH, OW, G, O/G],
  // and run one generic over loops (n, oh, ow, g, og | kh, kw, ci).
  const int64_t N = x.shape().dim(0), Hp = x.shape().dim(1), Wp = x.shape().dim(2), C = x.shape().dim(3);
  const int64_t KH = k.shape().dim(0), KW = k.shape().dim(1), OH = out.dim(1), OW = out.dim(2), O = out.dim(3);
  const Shape og_shape(d, {N, OH, OW, groups, O / groups});
  Tensor xg = reshape(x, {N, Hp, Wp, groups, C / groups});
  Tensor kg = reshape(k, {KH, KW, C / groups, groups, O / groups});
  Tensor accg = reshape(acc, og_shape.dims());
  auto D = [&](unsigned i) { return mlir::getAffineDimExpr(i, mctx); };
  auto map = [&](llvm::ArrayRef<mlir::AffineExpr> e) { return mlir::AffineMap::get(8, 0, e, mctx); };
  const mlir::AffineExpr h = D(1) * stride[0] + D(5) * dil[0], w = D(2) * stride[1] + D(6) * dil[1];
  llvm::SmallVector<mlir::AffineMap> maps = {map({D(0), h, w, D(3), D(7)}), map({D(5), D(6), D(7), D(3), D(4)}),
                                             map({D(0), D(1), D(2), D(3), D(4)})};
  using IT = mlir::utils::IteratorType;
  llvm::SmallVector<IT> iters = {IT::parallel, IT::parallel,  IT::parallel,  IT::parallel,
                                 IT::parallel, IT::reduction, IT::reduction, IT::reduction};
  auto gop = mlir::linalg::GenericOp::create(
      b, l, mlir::TypeRange{tensor_type(mctx, og_shape)}, mlir::ValueRange{value_of(xg), value_of(kg)},
      mlir::ValueRange{value_of(accg)}, maps, iters, [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange a) {
        Value p = mlir::arith::MulFOp::create(nb, nl, a[0], a[1]);
        mlir::linalg::YieldOp::create(nb, nl, Value(mlir::arith::AddFOp::create(nb, nl, a[2], p)));
      });
  return reshape(wrap(ctx, gop.getResult(0), og_shape), out.dims());
}

Tensor conv(const char* op, int sr, const Tensor& input, const Tensor& kernel, const ConvOptions& o) {
  CompilationContext& ctx = context_for(op, {&input, &kernel});
  const ConvGeometry g = conv_geometry(op, sr, input.shape(), kernel.shape(), o);
  const bool nhwc = o.layout == ConvLayout::kNHWC;
  // 16-bit floats multiply and accumulate in f32, rounded once at the end.
  const DType acc = is_half_float(input.dtype()) ? DType::kF32 : input.dtype();
  Tensor x = convert(input, acc), k = convert(kernel, acc);
  x = reshape(x, x.shape().dims());  // drop tags: the emitters work on plain dims
  k = reshape(k, k.shape().dims());
  std::vector<int64_t> stride = g.sp.stride, dil = g.sp.dil, lo = g.sp.lo, hi = g.sp.hi, osz = g.sp.out;
  if (sr == 1) {
    // conv1d is a conv2d over a unit H axis.
    auto unit_h = [&](const Tensor& t, int axis) {
      std::vector<int64_t> dims(t.shape().dims().begin(), t.shape().dims().end());
      dims.insert(dims.begin() + axis, 1);
      return reshape(t, dims);
    };
    x = unit_h(x, nhwc ? 1 : 2);
    k = unit_h(k, nhwc ? 0 : 2);
    stride.insert(stride.begin(), 1);
    dil.insert(dil.begin(), 1);
    lo.insert(lo.begin(), 0);
    hi.insert(hi.begin(), 0);
    osz.insert(osz.begin(), 1);
  }
  // NCHW runs as NHWC between transposes: vectorized channels-first tiles
  // transpose every step (measured 40x slower than the transposes here).
  if (!nhwc) {
    x = transpose(x, {0, 2, 3, 1});
    k = transpose(k, {2, 3, 1, 0});
  }
  x = pad(ctx, x, {0, lo[0], lo[1], 0}, {0, hi[0], hi[1], 0}, scalar_constant(ctx.builder(), ctx.loc(), acc, 0));
  Tensor r = emit_conv2d(ctx, x, k, g.G, stride, dil, untagged(acc, {g.N, osz[0], osz[1], g.O}));
  if (!nhwc) r = transpose(r, {0, 3, 1, 2});
  return convert(reshape(r, g.out.dims(), g.out.tags()), input.dtype());
}

// ---------------------------------------------------------------- window emission

Tensor window_reduce(const char* op, const Tensor& x, WindowReduction kind, const WindowOptions& o) {
  CompilationContext& ctx = context_for(op, {&x});
  const WindowGeometry g = window_geometry(op, x.shape(), kind, o);
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  mlir::Location l = ctx.loc();
  const bool sums = kind == WindowReduction::kSum || kind == WindowReduction::kAvg;
  // f16 / bf16 sums accumulate in f32 and round once; max / min are exact.
  const DType cd = sums && is_half_float(x.dtype()) ? DType::kF32 : x.dtype();
  Tensor xc = convert(x, cd);
  xc = reshape(xc, xc.shape().dims());
  const int r = x.rank();
  const size_t nw = g.axes.size();
  std::vector<int64_t> lo(static_cast<size_t>(r), 0), hi(static_cast<size_t>(r), 0);
  for (size_t j = 0; j < nw; ++j) {
    lo[static_cast<size_t>(g.axes[j])] = g.sp.lo[j];
    hi[static_cast<size_t>(g.axes[j])] = g.sp.hi[j];
  }
  xc = pad(ctx, xc, lo, hi, identity(b, l, cd, kind));

  // Loops: the r result axes (parallel), then one per windowed axis
  // (reduction); a shape-only window operand gives those loops their sizes,
  // as linalg's pooling ops do.
  const unsigned nl = static_cast<unsigned>(r) + static_cast<unsigned>(nw);
  llvm::SmallVector<mlir::AffineExpr> in_e, win_e, out_e;
  for (int i = 0; i < r; ++i) {
    mlir::AffineExpr e = mlir::getAffineDimExpr(static_cast<unsigned>(i), mctx);
    out_e.push_back(e);
    for (size_t j = 0; j < nw; ++j)
      if (g.axes[j] == i)
        e = e * g.sp.stride[j] + mlir::getAffineDimExpr(static_cast<unsigned>(r) + static_cast<unsigned>(j), mctx) *
                                     g.sp.dil[j];
    in_e.push_back(e);
  }
  for (size_t j = 0; j < nw; ++j)
    win_e.push_back(mlir::getAffineDimExpr(static_cast<unsigned>(r) + static_cast<unsigned>(j), mctx));
  llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::get(nl, 0, in_e, mctx),
                                             mlir::AffineMap::get(nl, 0, win_e, mctx),
                                             mlir::AffineMap::get(nl, 0, out_e, mctx)};
  using IT = mlir::utils::IteratorType;
  llvm::SmallVector<IT> iters(static_cast<size_t>(r), IT::parallel);
  iters.append(nw, IT::reduction);
  Shape out = untagged(cd, std::vector<int64_t>(g.out.dims().begin(), g.out.dims().end()));
  Value window = mlir::tensor::EmptyOp::create(b, l, llvm::SmallVector<int64_t>(g.sp.k.begin(), g.sp.k.end()),
                                               element_type(mctx, cd));
  Tensor init = filled(ctx, out, identity(b, l, cd, kind));
  Value pooled;
  // Ranges view their elements: keep those alive in locals.
  const mlir::Type rt = tensor_type(mctx, out);
  const Value init_v = value_of(init);
  llvm::SmallVector<Value, 2> ins = {value_of(xc), window};
  if (r == 4 && g.axes == std::vector<int>{1, 2} && (cd == DType::kF32 || cd == DType::kF64)) {
    // H and W of an f32 / f64 NHWC tensor: linalg's named pooling op, which
    // the CPU schedule vectorizes along C (as it does convolutions).
    auto st = b.getI64VectorAttr(g.sp.stride), di = b.getI64VectorAttr(g.sp.dil);
    const mlir::ValueRange outs(init_v);
    if (kind == WindowReduction::kMax)
      pooled = mlir::linalg::PoolingNhwcMaxOp::create(b, l, rt, ins, outs, st, di).getResult(0);
    else if (kind == WindowReduction::kMin)
      pooled = mlir::linalg::PoolingNhwcMinOp::create(b, l, rt, ins, outs, st, di).getResult(0);
    else
      pooled = mlir::linalg::PoolingNhwcSumOp::create(b, l, rt, ins, outs, st, di).getResult(0);
  } else {
    pooled = mlir::linalg::GenericOp::create(
                 b, l, rt, ins, init_v, maps, iters,
                 [&](mlir::OpBuilder& nb, mlir::Location nloc, mlir::ValueRange a) {
                   mlir::linalg::YieldOp::create(nb, nloc, combine(nb, nloc, cd, kind, a[0], a[2]));
                 })
                 .getResult(0);
  }
  Tensor res = wrap(ctx, pooled, out);

  if (kind == WindowReduction::kAvg) {
    if (o.count_padding) {
      int64_t n = 1;
      for (int64_t w : g.sp.k) n *= w;
      res = res / static_cast<double>(n);
    } else {
      // Per output position, the number of window taps inside the unpadded
      // input: a product of per-axis counts, known at trace time.
      std::vector<std::vector<int64_t>> per_axis(nw);
      std::vector<int64_t> cdims;
      for (size_t j = 0; j < nw; ++j) {
        for (int64_t q = 0; q < g.sp.out[j]; ++q) {
          int64_t c = 0;
          for (int64_t w = 0; w < g.sp.k[j]; ++w) {
            const int64_t pos = q * g.sp.stride[j] + w * g.sp.dil[j] - g.sp.lo[j];
            c += pos >= 0 && pos < g.sp.in[j];
          }
          per_axis[j].push_back(std::max<int64_t>(c, 1));  // a window wholly in the padding sums to 0: 0 / 1
        }
        cdims.push_back(g.sp.out[j]);
      }
      Shape cs = untagged(cd, cdims);
      std::vector<double> counts(static_cast<size_t>(cs.count()));
      for (size_t lin = 0; lin < counts.size(); ++lin) {
        size_t rest = lin;
        double c = 1;
        for (size_t j = nw; j-- > 0;) {
          const size_t sz = static_cast<size_t>(cdims[j]);
          c *= static_cast<double>(per_axis[j][rest % sz]);
          rest /= sz;
        }
        counts[lin] = c;
      }
      Tensor ct = constant(cs, counts);
      std::vector<int> ident(static_cast<size_t>(r));
      for (int i = 0; i < r; ++i) ident[static_cast<size_t>(i)] = i;
      std::vector<int> cmap(g.axes.begin(), g.axes.end());
      const Tensor* ops[] = {&res, &ct};
      res = emit_map(ctx, ops, {ident, cmap}, out, [](mlir::OpBuilder& nb, mlir::Location nloc, mlir::ValueRange v) {
        return Value(mlir::arith::DivFOp::create(nb, nloc, v[0], v[1]));
      });
    }
  }
  return convert(reshape(res, g.out.dims(), g.out.tags()), x.dtype());
}

Tensor pool2d(const char* op, const Tensor& x, WindowReduction kind, std::array<int64_t, 2> window,
              const Pool2dOptions& po) {
  context_for(op, {&x});
  if (x.rank() != 4)
    fail(std::string(op) + "(" + x.shape().to_string() + "): expects a rank-4 " +
         (po.layout == ConvLayout::kNHWC ? "NHWC" : "NCHW") + " tensor");
  WindowOptions o;
  o.axes = po.layout == ConvLayout::kNHWC ? Axes{1, 2} : Axes{2, 3};
  o.window = {window[0], window[1]};
  o.strides = po.strides.empty() ? o.window : po.strides;
  o.padding = po.padding;
  o.count_padding = po.count_padding;
  return window_reduce(op, x, kind, o);
}

}  // namespace

Shape conv1d_shape(const Shape& input, const Shape& kernel, const ConvOptions& opts) {
  return conv_geometry("conv1d", 1, input, kernel, opts).out;
}
Shape conv2d_shape(const Shape& input, const Shape& kernel, const ConvOptions& opts) {
  return conv_geometry("conv2d", 2, input, kernel, opts).out;
}
Tensor conv1d(const Tensor& input, const Tensor& kernel, const ConvOptions& opts) {
  return conv("conv1d", 1, input, kernel, opts);
}
Tensor conv2d(const Tensor& input, const Tensor& kernel, const ConvOptions& opts) {
  return conv("conv2d", 2, input, kernel, opts);
}

Shape reduce_window_shape(const Shape& x, WindowReduction kind, const WindowOptions& opts) {
  return window_geometry("reduce_window", x, kind, opts).out;
}
Tensor reduce_window(const Tensor& x, WindowReduction kind, const WindowOptions& opts) {
  return window_reduce("reduce_window", x, kind, opts);
}
Tensor max_pool2d(const Tensor& x, std::array<int64_t, 2> window, const Pool2dOptions& opts) {
  return pool2d("max_pool2d", x, WindowReduction::kMax, window, opts);
}
Tensor avg_pool2d(const Tensor& x, std::array<int64_t, 2> window, const Pool2dOptions& opts) {
  return pool2d("avg_pool2d", x, WindowReduction::kAvg, window, opts);
}

}  // namespace radix
