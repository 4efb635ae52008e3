// conv1d / conv2d / reduce_window / max_pool2d / avg_pool2d: shape inference
// alone (pure functions, no trace), then numerics against naive loops written
// from the definition (ops_conv.h), compiled for every schedule ISA and as
// plain loops; the vectorized builds must not fall back to loops.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "op_test_helpers.h"

namespace radix {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- configs

struct Config {
  const char* name;
  VectorIsa isa;
  bool vectorize;
};
const Config kConfigs[] = {
    {"sse", {4, 16}, true}, {"avx2", {8, 16}, true}, {"avx512", {16, 32}, true}, {"loops", {}, false}};

CompileFnOptions options(const Config& c) {
  CompileFnOptions o;
  o.compile.codegen.cpu.schedule_isa = c.isa;
  o.compile.codegen.cpu.vectorize = c.vectorize;
  return o;
}

// Compiles fn under config c, checks the schedule did not fall back, runs it.
template <class Fn, class... S>
Vals run_with(const Config& c, Fn fn, const std::vector<Vals>& inputs, Shape* out_shape, const S&... shapes) {
  auto exe = compile_fn(cpu(), options(c), fn, shapes...);
  if (!exe.ok()) {
    ADD_FAILURE() << c.name << ": compile failed: " << exe.status().to_string();
    return {};
  }
  EXPECT_FALSE(exe->executable().stats().schedule_fell_back) << c.name;
  const std::vector<Shape> sh{shapes...};
  std::vector<Buffer> bufs;
  for (size_t i = 0; i < sh.size(); ++i) bufs.push_back(to_device(sh[i], inputs.at(i)));
  Buffer res = [&]<size_t... I>(std::index_sequence<I...>) {
    return must(exe->call(bufs[I]...));
  }(std::index_sequence_for<S...>{});
  if (out_shape) *out_shape = exe->executable().signature().outputs.at(0);
  return to_host(res);
}

// ---------------------------------------------------------------- reference conv

// One convolution case, described in NCHW terms whatever its layout; a 1-D
// case has H = KH = 1 and no H axes in its tensors.
struct ConvCase {
  int64_t N, C, H, W, O, KH, KW;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  Padding pad;
  int64_t groups = 1;
  ConvLayout layout = ConvLayout::kNHWC;
  bool one_d = false;
  DType dtype = DType::kF32;

  bool nhwc() const { return layout == ConvLayout::kNHWC; }
  std::vector<int64_t> in_dims() const {
    if (one_d) return nhwc() ? std::vector<int64_t>{N, W, C} : std::vector<int64_t>{N, C, W};
    return nhwc() ? std::vector<int64_t>{N, H, W, C} : std::vector<int64_t>{N, C, H, W};
  }
  std::vector<int64_t> k_dims() const {
    const int64_t Cg = C / groups;
    if (one_d) return nhwc() ? std::vector<int64_t>{KW, Cg, O} : std::vector<int64_t>{O, Cg, KW};
    return nhwc() ? std::vector<int64_t>{KH, KW, Cg, O} : std::vector<int64_t>{O, Cg, KH, KW};
  }
  ConvOptions opts() const {
    ConvOptions o;
    o.strides = one_d ? std::vector<int64_t>{sw} : std::vector<int64_t>{sh, sw};
    o.dilations = one_d ? std::vector<int64_t>{dw} : std::vector<int64_t>{dh, dw};
    o.padding = pad;
    o.groups = groups;
    o.layout = layout;
    return o;
  }
  std::string str() const {
    std::ostringstream s;
    s << (one_d ? "conv1d " : "conv2d ") << (nhwc() ? "NHWC" : "NCHW") << " N" << N << " C" << C << " H" << H << " W"
      << W << " O" << O << " K" << KH << "x" << KW << " s" << sh << "," << sw << " d" << dh << "," << dw << " g"
      << groups << " " << dtype_name(dtype);
    return s.str();
  }
};

// (low, high) padding of one dim, from the definition of "same" / "valid".
std::pair<int64_t, int64_t> pads_of(const Padding& p, size_t dim, int64_t in, int64_t k, int64_t s, int64_t d) {
  if (p.mode == Padding::Mode::kExplicit) return p.pads[dim];
  if (p.mode == Padding::Mode::kValid) return {0, 0};
  const int64_t out = (in + s - 1) / s, eff = (k - 1) * d + 1;
  const int64_t total = std::max<int64_t>((out - 1) * s + eff - in, 0);
  return {total / 2, total - total / 2};
}

// The definition: out[n, o, y, x] = sum over i < C/groups, ky, kx of
// in[n, g * C/groups + i, y*sh + ky*dh - lo_h, x*sw + kx*dw - lo_w] * k[o, i, ky, kx]
// (zero outside the input), g = o / (O/groups). Returns values in the case's
// output layout and the output dims.
std::pair<Vals, std::vector<int64_t>> reference_conv(const ConvCase& c, const Vals& in, const Vals& k) {
  auto [lh, hh] = c.one_d ? std::pair<int64_t, int64_t>{0, 0} : pads_of(c.pad, 0, c.H, c.KH, c.sh, c.dh);
  auto [lw, hw] = pads_of(c.pad, c.one_d ? 0 : 1, c.W, c.KW, c.sw, c.dw);
  const int64_t OH = (c.H + lh + hh - ((c.KH - 1) * c.dh + 1)) / c.sh + 1;
  const int64_t OW = (c.W + lw + hw - ((c.KW - 1) * c.dw + 1)) / c.sw + 1;
  const int64_t Cg = c.C / c.groups, Og = c.O / c.groups;
  auto in_at = [&](int64_t n, int64_t ch, int64_t y, int64_t x) {
    return c.nhwc() ? in[size_t(((n * c.H + y) * c.W + x) * c.C + ch)] : in[size_t(((n * c.C + ch) * c.H + y) * c.W + x)];
  };
  auto k_at = [&](int64_t o, int64_t i, int64_t y, int64_t x) {
    return c.nhwc() ? k[size_t(((y * c.KW + x) * Cg + i) * c.O + o)] : k[size_t(((o * Cg + i) * c.KH + y) * c.KW + x)];
  };
  Vals out(size_t(c.N * c.O * OH * OW));
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t o = 0; o < c.O; ++o)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t x = 0; x < OW; ++x) {
          long double acc = 0;
          const int64_t g = o / Og;
          for (int64_t i = 0; i < Cg; ++i)
            for (int64_t ky = 0; ky < c.KH; ++ky)
              for (int64_t kx = 0; kx < c.KW; ++kx) {
                const int64_t iy = y * c.sh + ky * c.dh - lh, ix = x * c.sw + kx * c.dw - lw;
                if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue;
                acc += in_at(n, g * Cg + i, iy, ix) * k_at(o, i, ky, kx);
              }
          const size_t at = c.nhwc() ? size_t(((n * OH + y) * OW + x) * c.O + o) : size_t(((n * c.O + o) * OH + y) * OW + x);
          out[at] = acc;
        }
  std::vector<int64_t> dims;
  if (c.one_d) dims = c.nhwc() ? std::vector<int64_t>{c.N, OW, c.O} : std::vector<int64_t>{c.N, c.O, OW};
  else dims = c.nhwc() ? std::vector<int64_t>{c.N, OH, OW, c.O} : std::vector<int64_t>{c.N, c.O, OH, OW};
  return {out, dims};
}

// Tolerance: products of values in [-1, 1) summed over T = C/groups * KH * KW
// terms. f32 accumulation error is at most about T * 2^-24 * sum|x||k| <= T^2 * 6e-8;
// with T <= 72 here we allow 1e-5 relative + 2e-6 * T absolute (f64: 1e-12).
// f16 / bf16 accumulate in f32 and round once, so they may differ from the
// exact value by one rounding: eps(dtype) relative (plus a small absolute term).
void check_conv(const ConvCase& c, const Config& cfg, uint32_t seed) {
  const Shape si = shape_of(c.dtype, c.in_dims()), sk = shape_of(c.dtype, c.k_dims());
  const Vals in = quantize(c.dtype, rand_vals(size_t(si.count()), -1, 1, seed));
  const Vals k = quantize(c.dtype, rand_vals(size_t(sk.count()), -1, 1, seed + 1));
  auto [want, dims] = reference_conv(c, in, k);
  const ConvOptions o = c.opts();
  const bool one_d = c.one_d;
  Shape got_shape;
  Vals got = run_with(
      cfg, [o, one_d](Tensor x, Tensor w) { return one_d ? conv1d(x, w, o) : conv2d(x, w, o); }, {in, k}, &got_shape,
      si, sk);
  EXPECT_EQ(got_shape, shape_of(c.dtype, dims)) << c.str() << " [" << cfg.name << "]";
  const double T = double(c.C / c.groups * c.KH * c.KW);
  double rtol = 1e-5, atol = 2e-6 * T;
  if (c.dtype == DType::kF64) rtol = atol = 1e-12;
  if (is_half_float(c.dtype)) {
    rtol = eps(c.dtype);
    atol = 1e-3;
    want = quantize(c.dtype, want);
  }
  EXPECT_TRUE(close(got, want, c.dtype, rtol, atol)) << c.str() << " [" << cfg.name << "]";
}

std::vector<ConvCase> conv_cases() {
  using P = Padding;
  std::vector<ConvCase> v;
  for (ConvLayout l : {ConvLayout::kNHWC, ConvLayout::kNCHW}) {
    auto add = [&](ConvCase c) {
      c.layout = l;
      v.push_back(c);
    };
    // N, C, H, W, O, KH, KW, sh, sw, dh, dw, pad, groups
    add({1, 8, 10, 16, 16, 3, 3, 1, 1, 1, 1, P::same()});                 // register tiles divide evenly
    add({2, 3, 7, 9, 5, 3, 2, 1, 1, 1, 1, P::valid()});                   // odd everything
    add({1, 1, 1, 1, 1, 1, 1});                                           // all size 1
    add({1, 4, 9, 11, 8, 3, 3, 2, 3, 1, 1, P::same()});                   // strides
    add({1, 5, 12, 13, 6, 3, 2, 1, 1, 2, 3, P::valid()});                 // dilations
    add({2, 4, 8, 8, 12, 3, 3, 2, 1, 2, 1, P::explicit_pads({{2, 0}, {1, 3}})});  // asymmetric padding
    add({1, 6, 7, 10, 4, 3, 3, 1, 2, 1, 1, P::same(), 2});                // groups
    add({1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, P::same(), 8});                 // depthwise
    add({1, 4, 6, 7, 8, 2, 3, 2, 1, 1, 2, P::valid(), 4});                // depthwise, multiplier 2
    ConvCase d1{2, 5, 1, 17, 7, 1, 4, 1, 2, 1, 2, P::same()};             // conv1d
    d1.one_d = true;
    add(d1);
    ConvCase d1g{1, 6, 1, 11, 9, 1, 3, 1, 1, 1, 1, P::explicit_pads({{2, 1}}), 3};  // conv1d, groups
    d1g.one_d = true;
    add(d1g);
  }
  return v;
}

TEST(ConvNumerics, Conv2dAndConv1dOnEveryIsa) {
  uint32_t seed = 100;
  for (const ConvCase& c : conv_cases()) {
    for (const Config& cfg : kConfigs) check_conv(c, cfg, seed);
    seed += 2;
  }
}

TEST(ConvNumerics, F64AndHalfPrecision) {
  for (DType d : {DType::kF64, DType::kF16, DType::kBF16})
    for (ConvLayout l : {ConvLayout::kNHWC, ConvLayout::kNCHW}) {
      ConvCase c{1, 6, 6, 8, 8, 3, 3, 1, 1, 1, 1, Padding::same()};
      c.layout = l;
      c.dtype = d;
      for (const Config& cfg : kConfigs) check_conv(c, cfg, 7);
    }
}

// The benchmark's shape (3x3, stride 1, same, 56x56x64 -> 64), checked on
// every ISA, and shown to be vectorized: the scheduled IR holds FMAs on
// vectors of the ISA's width and no scalar convolution remains.
std::string slurp_stage(const fs::path& dir, const std::string& stage) { return testing::stage_dump(dir, stage); }

TEST(ConvSchedule, VectorizedOnEveryIsa) {
  for (ConvLayout l : {ConvLayout::kNHWC, ConvLayout::kNCHW}) {
    ConvCase c{1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, Padding::same()};
    c.layout = l;
    for (const Config& cfg : kConfigs) {
      if (!cfg.vectorize) continue;
      check_conv(c, cfg, 3);
      fs::path dir = fs::temp_directory_path() / ("radix-conv-" + std::to_string(::getpid()) + "-" + cfg.name);
      fs::remove_all(dir);
      CompileFnOptions o = options(cfg);
      o.compile.diagnostics.dump = {"schedule-script", "schedule"};
      o.compile.diagnostics.dump_dir = dir.string();
      ConvOptions co = c.opts();
      auto exe = must(compile_fn(cpu(), o, [co](Tensor x, Tensor w) { return conv2d(x, w, co); },
                                 shape_of(c.dtype, c.in_dims()), shape_of(c.dtype, c.k_dims())));
      EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
      const std::string script = slurp_stage(dir, "schedule-script.mlir"), ir = slurp_stage(dir, "schedule.mlir");
      EXPECT_NE(script.find("transform.structured.decompose"), std::string::npos) << cfg.name;
      EXPECT_NE(ir.find("vector.fma"), std::string::npos) << cfg.name;
      // register tiles of one to four full vectors of output channels
      bool full_vectors = false;
      for (int v = 1; v <= 4; ++v)
        full_vectors |= ir.find("vector<" + std::to_string(v * cfg.isa.f32_lanes) + "xf32>") != std::string::npos;
      EXPECT_TRUE(full_vectors) << cfg.name;
      EXPECT_EQ(ir.find("linalg.conv_2d"), std::string::npos) << cfg.name << ": a convolution was left unvectorized";
      fs::remove_all(dir);
    }
  }
}

// NHWC pooling over H and W (the pool2d conveniences) goes the same way:
// linalg.pooling_nhwc_* tiled, decomposed and vectorized along C.
TEST(PoolSchedule, NhwcPoolingVectorized) {
  const Shape s(DType::kF32, {1, 16, 16, 32});
  for (const Config& cfg : kConfigs) {
    if (!cfg.vectorize) continue;
    fs::path dir = fs::temp_directory_path() / ("radix-pool-" + std::to_string(::getpid()) + "-" + cfg.name);
    fs::remove_all(dir);
    CompileFnOptions o = options(cfg);
    o.compile.diagnostics.dump = {"schedule"};
    o.compile.diagnostics.dump_dir = dir.string();
    Pool2dOptions po;
    po.strides = {2, 2};
    po.padding = Padding::same();
    auto exe = must(compile_fn(cpu(), o, [po](Tensor x) { return max_pool2d(x, {3, 3}, po); }, s));
    EXPECT_FALSE(exe.executable().stats().schedule_fell_back) << cfg.name;
    const std::string ir = slurp_stage(dir, "schedule.mlir");
    EXPECT_EQ(ir.find("linalg.pooling"), std::string::npos) << cfg.name << ": pooling left unvectorized";
    EXPECT_NE(ir.find("arith.maximumf %"), std::string::npos) << cfg.name;
    EXPECT_NE(ir.find("vector<" + std::to_string(std::min<int64_t>(32, 2 * cfg.isa.f32_lanes)) + "xf32>"),
              std::string::npos) << cfg.name;
    fs::remove_all(dir);
  }
}

TEST(ConvNumerics, TagsCarryOver) {
  const Shape si(DType::kF32, {1, 5, 6, 3}, {"b", "h", "w", "c"});
  const Shape sk(DType::kF32, {3, 3, 3, 4}, {"kh", "kw", "c", "o"});
  EXPECT_EQ(conv2d_shape(si, sk, {.padding = Padding::same()}), Shape(DType::kF32, {1, 5, 6, 4}, {"b", "h", "w", "o"}));
  // An untagged output-channel axis keeps the input's channel tag.
  EXPECT_EQ(conv2d_shape(si, Shape(DType::kF32, {3, 3, 3, 4})), Shape(DType::kF32, {1, 3, 4, 4}, {"b", "h", "w", "c"}));
  ConvCase c{1, 3, 5, 6, 4, 3, 3, 1, 1, 1, 1, Padding::same()};
  const Vals in = rand_vals(size_t(si.count()), -1, 1, 5), k = rand_vals(size_t(sk.count()), -1, 1, 6);
  Shape got_shape;
  Vals got = run_with(kConfigs[2], [](Tensor x, Tensor w) { return conv2d(x, w, {.padding = Padding::same()}); },
                      {in, k}, &got_shape, si, sk);
  EXPECT_EQ(got_shape, Shape(DType::kF32, {1, 5, 6, 4}, {"b", "h", "w", "o"}));
  EXPECT_TRUE(close(got, reference_conv(c, in, k).first, DType::kF32, 1e-5, 1e-4));
}

// ---------------------------------------------------------------- conv shape inference

ConvOptions with(std::vector<int64_t> s, std::vector<int64_t> d, Padding p, int64_t g = 1,
                 ConvLayout l = ConvLayout::kNHWC) {
  ConvOptions o;
  o.strides = std::move(s);
  o.dilations = std::move(d);
  o.padding = std::move(p);
  o.groups = g;
  o.layout = l;
  return o;
}

TEST(ConvShape, Inference) {
  const DType f = DType::kF32;
  // valid: (in - eff) / stride + 1
  EXPECT_EQ(conv2d_shape(Shape(f, {2, 10, 12, 3}), Shape(f, {3, 5, 3, 8})), Shape(f, {2, 8, 8, 8}));
  EXPECT_EQ(conv2d_shape(Shape(f, {2, 3, 10, 12}), Shape(f, {8, 3, 3, 5}), with({}, {}, {}, 1, ConvLayout::kNCHW)),
            Shape(f, {2, 8, 8, 8}));
  // same: ceil(in / stride), whatever the kernel and dilation
  EXPECT_EQ(conv2d_shape(Shape(f, {1, 9, 10, 4}), Shape(f, {3, 4, 4, 6}), with({2, 3}, {2, 1}, Padding::same())),
            Shape(f, {1, 5, 4, 6}));
  // strides, dilations, explicit padding: (9 + 1 + 2 - 5) / 2 + 1 = 4; (7 + 0 + 0 - 3) / 1 + 1 = 5
  EXPECT_EQ(conv2d_shape(Shape(f, {1, 9, 7, 4}), Shape(f, {3, 2, 4, 6}),
                         with({2, 1}, {2, 2}, Padding::explicit_pads({{1, 2}, {0, 0}}))),
            Shape(f, {1, 4, 5, 6}));
  // a single stride applies to every dim
  EXPECT_EQ(conv2d_shape(Shape(f, {1, 8, 8, 1}), Shape(f, {1, 1, 1, 1}), with({2}, {}, {})), Shape(f, {1, 4, 4, 1}));
  // groups: kernel input channels = C / groups
  EXPECT_EQ(conv2d_shape(Shape(f, {1, 5, 5, 6}), Shape(f, {1, 1, 2, 9}), with({}, {}, {}, 3)), Shape(f, {1, 5, 5, 9}));
  EXPECT_EQ(conv1d_shape(Shape(f, {3, 20, 4}), Shape(f, {5, 4, 7}), with({3}, {}, Padding::same())),
            Shape(f, {3, 7, 7}));
  EXPECT_EQ(conv1d_shape(Shape(f, {3, 4, 20}), Shape(f, {7, 4, 5}), with({1}, {4}, {}, 1, ConvLayout::kNCHW)),
            Shape(f, {3, 7, 4}));
  // the kernel exactly as big as the padded input
  EXPECT_EQ(conv2d_shape(Shape(f, {1, 1, 1, 1}), Shape(f, {3, 3, 1, 2}), with({}, {}, Padding::explicit_pads({{1, 1}, {2, 0}}))),
            Shape(f, {1, 1, 1, 2}));
  EXPECT_EQ(conv2d_shape(Shape(DType::kBF16, {1, 4, 4, 2}), Shape(DType::kBF16, {1, 1, 2, 2})),
            Shape(DType::kBF16, {1, 4, 4, 2}));
}

// Expects a TraceError whose message holds every one of `parts`.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no TraceError";
  } catch (const TraceError& e) {
    const std::string m = e.what();
    for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  }
}

TEST(ConvShape, Errors) {
  const DType f = DType::kF32;
  const Shape in(f, {1, 8, 8, 6}), k(f, {3, 3, 6, 4});
  const std::string si = in.to_string();
  auto conv_err = [&](const Shape& a, const Shape& b, const ConvOptions& o, const std::string& why) {
    expect_error([&] { conv2d_shape(a, b, o); }, {"conv2d(", a.to_string(), b.to_string(), why});
  };
  conv_err(in, Shape(f, {3, 3, 5, 4}), {}, "channels");                             // channel mismatch
  conv_err(in, Shape(f, {3, 3, 2, 4}), with({}, {}, {}, 4), "divide the input channels");   // 4 does not divide 6
  conv_err(in, Shape(f, {3, 3, 3, 6}), with({}, {}, {}, 3), "C/groups");                    // 6 / 3 = 2 input channels
  conv_err(Shape(f, {1, 8, 8, 6}), Shape(f, {3, 3, 3, 5}), with({}, {}, {}, 2), "output channels");
  conv_err(in, k, with({}, {}, {}, 0), "groups must be >= 1");
  conv_err(in, Shape(f, {9, 3, 6, 4}), {}, "bigger than the padded input");          // window > input
  conv_err(in, k, with({}, {4, 1}, {}), "bigger than the padded input");             // dilated window > input
  conv_err(in, k, with({0, 1}, {}, {}), "strides must be positive");
  conv_err(in, k, with({1, 1}, {-1}, {}), "dilations must be positive");
  conv_err(in, k, with({1, 1, 1}, {}, {}), "strides has 3 values");
  conv_err(in, k, with({}, {}, Padding::explicit_pads({{1, 1}})), "padding has 1");
  conv_err(in, k, with({}, {}, Padding::explicit_pads({{1, -1}, {0, 0}})), "padding must be >= 0");
  conv_err(Shape(f, {8, 8, 6}), k, {}, "rank 4");
  conv_err(in, Shape(DType::kF64, {3, 3, 6, 4}), {}, "share one dtype");
  conv_err(Shape(DType::kI32, {1, 8, 8, 6}), Shape(DType::kI32, {3, 3, 6, 4}), {}, "floating-point");
  conv_err(in, Shape(f, {4, 6, 3, 3}), with({}, {}, {}, 1, ConvLayout::kNCHW), "channels");  // NHWC data, NCHW layout
  expect_error([&] { conv1d_shape(Shape(f, {1, 4, 3}), Shape(f, {5, 3, 2})); }, {"conv1d(", "f32[1,4,3]", "f32[5,3,2]", "bigger"});

  // The traced op throws the same error, so compile_fn reports it.
  auto bad = compile_fn(cpu(), [](Tensor x, Tensor w) { return conv2d(x, w); }, in, Shape(f, {3, 3, 5, 4}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().to_string().find("conv2d(" + si), std::string::npos) << bad.status().to_string();
}

// ---------------------------------------------------------------- pooling

// reduce_window from the definition, over any axes of a row-major tensor.
Vals reference_window(const std::vector<int64_t>& dims, const Vals& x, WindowReduction kind, const std::vector<int>& axes,
                      const std::vector<int64_t>& window, const std::vector<int64_t>& strides,
                      const std::vector<int64_t>& dil, const std::vector<std::pair<int64_t, int64_t>>& pads,
                      bool count_padding, std::vector<int64_t>* out_dims) {
  std::vector<int64_t> od = dims;
  for (size_t j = 0; j < axes.size(); ++j) {
    const int64_t padded = dims[size_t(axes[j])] + pads[j].first + pads[j].second;
    od[size_t(axes[j])] = (padded - ((window[j] - 1) * dil[j] + 1)) / strides[j] + 1;
  }
  *out_dims = od;
  const std::vector<int64_t> xs = strides_of(dims);
  Vals out(size_t(count_of(od)));
  for (int64_t lin = 0; lin < count_of(od); ++lin) {
    const std::vector<int64_t> o = unravel(lin, od);
    long double acc = kind == WindowReduction::kMax ? -INFINITY : kind == WindowReduction::kMin ? INFINITY : 0;
    int64_t valid = 0;
    for (int64_t w = 0; w < count_of(window); ++w) {
      const std::vector<int64_t> wi = unravel(w, window);
      std::vector<int64_t> idx = o;
      bool inside = true;
      for (size_t j = 0; j < axes.size(); ++j) {
        const size_t a = size_t(axes[j]);
        idx[a] = o[a] * strides[j] + wi[j] * dil[j] - pads[j].first;
        inside &= idx[a] >= 0 && idx[a] < dims[a];
      }
      if (!inside) continue;
      ++valid;
      int64_t at = 0;
      for (size_t a = 0; a < dims.size(); ++a) at += idx[a] * xs[a];
      const long double v = x[size_t(at)];
      if (kind == WindowReduction::kMax) acc = std::max(acc, v);
      else if (kind == WindowReduction::kMin) acc = std::min(acc, v);
      else acc += v;
    }
    if (kind == WindowReduction::kAvg) acc /= count_padding ? count_of(window) : std::max<int64_t>(valid, 1);
    out[size_t(lin)] = acc;
  }
  return out;
}

TEST(PoolNumerics, Pool2dOnEveryIsa) {
  struct Case {
    ConvLayout layout;
    std::vector<int64_t> dims;  // in the layout
    std::array<int64_t, 2> window;
    std::vector<int64_t> strides;  // empty: the window
    Padding pad;
    bool count_padding = false;
  };
  using P = Padding;
  const std::vector<Case> cases = {
      {ConvLayout::kNHWC, {2, 8, 8, 16}, {2, 2}, {}, P::valid()},
      {ConvLayout::kNHWC, {1, 7, 9, 3}, {3, 3}, {2, 2}, P::same()},
      {ConvLayout::kNHWC, {1, 7, 9, 3}, {3, 3}, {2, 2}, P::same(), true},
      {ConvLayout::kNCHW, {1, 3, 9, 7}, {3, 2}, {1, 2}, P::explicit_pads({{1, 2}, {0, 1}})},
      {ConvLayout::kNCHW, {2, 2, 5, 5}, {5, 5}, {1, 1}, P::valid()},
      {ConvLayout::kNHWC, {1, 1, 1, 1}, {1, 1}, {}, P::valid()},
      {ConvLayout::kNHWC, {1, 4, 4, 2}, {3, 3}, {1, 1}, P::explicit_pads({{2, 2}, {2, 2}})},  // edge windows hold one valid tap
  };
  uint32_t seed = 300;
  for (const Case& c : cases) {
    const Shape s = shape_of(DType::kF32, c.dims);
    const Vals x = rand_vals(size_t(s.count()), -2, 2, seed++);
    const std::vector<int> axes = c.layout == ConvLayout::kNHWC ? std::vector<int>{1, 2} : std::vector<int>{2, 3};
    const std::vector<int64_t> win = {c.window[0], c.window[1]};
    const std::vector<int64_t> st = c.strides.empty() ? win : c.strides;
    std::vector<std::pair<int64_t, int64_t>> pads;
    for (size_t j = 0; j < 2; ++j)
      pads.push_back(pads_of(c.pad, j, c.dims[size_t(axes[j])], win[j], st[j], 1));
    Pool2dOptions po;
    po.strides = c.strides;
    po.padding = c.pad;
    po.layout = c.layout;
    po.count_padding = c.count_padding;
    for (WindowReduction kind : {WindowReduction::kMax, WindowReduction::kAvg}) {
      std::vector<int64_t> od;
      const Vals want = reference_window(c.dims, x, kind, axes, win, st, {1, 1}, pads, c.count_padding, &od);
      for (const Config& cfg : kConfigs) {
        Shape got_shape;
        const std::array<int64_t, 2> w = c.window;
        Vals got = run_with(
            cfg,
            [kind, w, po](Tensor t) { return kind == WindowReduction::kMax ? max_pool2d(t, w, po) : avg_pool2d(t, w, po); },
            {x}, &got_shape, s);
        EXPECT_EQ(got_shape, shape_of(DType::kF32, od)) << cfg.name;
        // max is exact; avg sums at most 25 values of size <= 2 in f32.
        EXPECT_TRUE(close(got, want, DType::kF32, 1e-6, 1e-6))
            << (kind == WindowReduction::kMax ? "max " : "avg ") << s.to_string() << " [" << cfg.name << "]";
      }
    }
  }
}

TEST(PoolNumerics, ReduceWindowGeneral) {
  // A tagged rank-3 tensor windowed over its last axis (1-D, dilated, strided)
  // and over two axes by tag, every reduction, a few dtypes.
  const Shape s(DType::kF32, {3, 10, 12}, {"b", "t", "d"});
  const Vals x = rand_vals(size_t(s.count()), -3, 3, 9);
  struct Case {
    Axes axes;
    std::vector<int> idx;
    std::vector<int64_t> window, strides, dil;
    std::vector<std::pair<int64_t, int64_t>> pads;
  };
  const std::vector<Case> cases = {
      {{"d"}, {2}, {8}, {1}, {1}, {{0, 0}}},                      // a long 1-D window on the innermost axis
      {{2}, {2}, {3}, {2}, {2}, {{1, 2}}},                        // dilated, strided, padded
      {{"d", "t"}, {2, 1}, {2, 3}, {2, 1}, {1, 2}, {{1, 0}, {2, 2}}},  // axes out of order, by tag
  };
  for (const Case& c : cases)
    for (WindowReduction kind : {WindowReduction::kMax, WindowReduction::kMin, WindowReduction::kSum, WindowReduction::kAvg}) {
      WindowOptions o;
      o.axes = c.axes;
      o.window = c.window;
      o.strides = c.strides;
      o.dilations = c.dil;
      o.padding = Padding::explicit_pads(c.pads);
      std::vector<int64_t> od;
      const Vals want = reference_window({3, 10, 12}, x, kind, c.idx, c.window, c.strides, c.dil, c.pads, false, &od);
      for (const Config& cfg : kConfigs) {
        Shape got_shape;
        Vals got = run_with(cfg, [kind, o](Tensor t) { return reduce_window(t, kind, o); }, {x}, &got_shape, s);
        EXPECT_EQ(got_shape, Shape(DType::kF32, std::span<const int64_t>(od), s.tags())) << cfg.name;
        EXPECT_TRUE(close(got, want, DType::kF32, 1e-6, 1e-5)) << int(kind) << " [" << cfg.name << "]";
      }
    }
  // Integers (max / sum exact) and f16 (sum in f32, rounded once).
  for (DType d : {DType::kI32, DType::kF16}) {
    const Shape si = s.with_dtype(d);
    const Vals xi = d == DType::kI32 ? Vals(x.begin(), x.end()) : quantize(d, x);
    Vals xr = xi;
    if (d == DType::kI32)
      for (Val& v : xr) v = std::trunc(v);
    WindowOptions o;
    o.axes = {"t", "d"};
    o.window = {3, 3};
    o.padding = Padding::same();
    for (WindowReduction kind : {WindowReduction::kMax, WindowReduction::kSum}) {
      std::vector<int64_t> od;
      Vals want = reference_window({3, 10, 12}, xr, kind, {1, 2}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, false, &od);
      if (d == DType::kF16) want = quantize(d, want);
      Shape got_shape;
      Vals got = run_with(kConfigs[2], [kind, o](Tensor t) { return reduce_window(t, kind, o); }, {xr}, &got_shape, si);
      EXPECT_TRUE(close(got, want, d, eps(d), 1e-3)) << dtype_name(d) << " " << int(kind);
    }
  }
}

TEST(PoolShape, InferenceAndErrors) {
  const DType f = DType::kF32;
  const Shape x(f, {2, 9, 9, 4}, {"b", "h", "w", "c"});
  WindowOptions o;
  o.axes = {"h", "w"};
  o.window = {3, 3};
  o.strides = {2};
  EXPECT_EQ(reduce_window_shape(x, WindowReduction::kMax, o), Shape(f, {2, 4, 4, 4}, {"b", "h", "w", "c"}));
  o.padding = Padding::same();
  EXPECT_EQ(reduce_window_shape(x, WindowReduction::kAvg, o), Shape(f, {2, 5, 5, 4}, {"b", "h", "w", "c"}));
  o.dilations = {4};
  o.padding = {};
  EXPECT_EQ(reduce_window_shape(x, WindowReduction::kSum, o), Shape(f, {2, 1, 1, 4}, {"b", "h", "w", "c"}));

  auto err = [&](const Shape& s, WindowReduction k, const WindowOptions& wo, const std::string& why) {
    expect_error([&] { reduce_window_shape(s, k, wo); }, {"reduce_window(", s.to_string(), why});
  };
  WindowOptions b;
  b.axes = {"h", "w"};
  b.window = {3, 3};
  WindowOptions big = b;
  big.window = {10, 3};
  err(x, WindowReduction::kMax, big, "bigger than the padded input");
  WindowOptions dil = b;
  dil.dilations = {5, 1};
  err(x, WindowReduction::kMax, dil, "bigger than the padded input");
  WindowOptions st = b;
  st.strides = {1, 0};
  err(x, WindowReduction::kMax, st, "strides must be positive");
  WindowOptions ax = b;
  ax.axes = {"h", "z"};
  err(x, WindowReduction::kMax, ax, "axis 'z' does not exist");
  WindowOptions twice = b;
  twice.axes = {"h", 1};
  err(x, WindowReduction::kMax, twice, "given twice");
  WindowOptions nwin = b;
  nwin.window = {3};
  err(x, WindowReduction::kMax, nwin, "window has 1 sizes for 2 axes");
  WindowOptions zero = b;
  zero.window = {0, 3};
  err(x, WindowReduction::kMax, zero, "window size must be >= 1");
  err(x.with_dtype(DType::kI32), WindowReduction::kAvg, b, "floating-point");
  err(x.with_dtype(DType::kBool), WindowReduction::kMax, b, "bool");

  auto bad = compile_fn(cpu(), [](Tensor t) { return max_pool2d(t, {3, 3}); }, Shape(f, {4, 4}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().to_string().find("max_pool2d(f32[4,4])"), std::string::npos) << bad.status().to_string();
  auto bad2 = compile_fn(cpu(), [](Tensor t) { return avg_pool2d(t, {3, 3}); }, Shape(f, {1, 2, 2, 1}));
  ASSERT_FALSE(bad2.ok());
  EXPECT_NE(bad2.status().to_string().find("avg_pool2d(f32[1,2,2,1]"), std::string::npos) << bad2.status().to_string();
}

}  // namespace
}  // namespace radix
