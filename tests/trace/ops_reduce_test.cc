// Numerics of reduce_sum / reduce_max / reduce_min / reduce_mean over single
// axes, several axes, all axes, by tag and with keep_dims, for integer and
// float dtypes, against naive loops computed here.
#include <algorithm>
#include <filesystem>
#include <unistd.h>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "radix/core/half.h"
#include "trace/op_test_helpers.h"

namespace radix {
namespace {


enum class RK { kSum, kMax, kMin, kMean };

// Naive reduction of x (dims `in`) over the axes flagged in `red`; the result
// is in row-major order of the kept axes. Sums wrap for integer dtypes.
Vals reduce_ref(DType d, const std::vector<int64_t>& in, const Vals& x, const std::vector<bool>& red, RK k) {
  std::vector<int64_t> od;
  for (size_t i = 0; i < in.size(); ++i)
    if (!red[i]) od.push_back(in[i]);
  const int64_t n_out = count_of(od), n_red = count_of(in) / std::max<int64_t>(n_out, 1);
  Vals acc(static_cast<size_t>(n_out), k == RK::kMax ? -INFINITY : k == RK::kMin ? INFINITY : 0);
  std::vector<uint64_t> iacc(static_cast<size_t>(n_out), 0);  // integer sums, modulo 2^64
  for (int64_t l = 0; l < count_of(in); ++l) {
    auto ii = unravel(l, in);
    int64_t o = 0;
    for (size_t i = 0; i < in.size(); ++i)
      if (!red[i]) o = o * in[i] + ii[i];
    Val& a = acc[static_cast<size_t>(o)];
    if (k == RK::kMax) a = std::max(a, x[l]);
    else if (k == RK::kMin) a = std::min(a, x[l]);
    else a += x[l];
    iacc[static_cast<size_t>(o)] += static_cast<uint64_t>(x[l] < 0 ? static_cast<uint64_t>(static_cast<int64_t>(x[l]))
                                                                   : static_cast<uint64_t>(x[l]));
  }
  for (size_t i = 0; i < acc.size(); ++i) {
    if (k == RK::kMean) acc[i] = quantize(d, acc[i] / n_red);
    else if (k == RK::kSum && !is_float(d)) acc[i] = wrap(d, static_cast<Val>(iacc[i]));
  }
  return acc;
}

struct ReduceCase {
  std::vector<int64_t> dims;
  std::vector<Tag> tags;   // empty: untagged
  Axes axes;               // as passed to the op
  std::vector<int> resolved;  // the same axes as indices
  bool keep_dims = false;
};

const std::vector<ReduceCase> kCases = {
    {{3, 4, 5}, {}, {0}, {0}},
    {{3, 4, 5}, {}, {1}, {1}},
    {{3, 4, 5}, {}, {2}, {2}},
    {{3, 4, 5}, {}, {-1}, {2}},
    {{3, 4, 5}, {}, {0, 2}, {0, 2}},
    {{3, 4, 5}, {}, {2, 0}, {0, 2}},
    {{3, 4, 5}, {}, {}, {0, 1, 2}},                  // all axes
    {{3, 4, 5}, {}, {1}, {1}, true},                 // keep_dims
    {{3, 4, 5}, {}, {0, 2}, {0, 2}, true},
    {{3, 4, 5}, {}, {}, {0, 1, 2}, true},
    {{3, 4, 5}, {"a", "b", "c"}, {"b"}, {1}},        // by tag
    {{3, 4, 5}, {"a", "b", "c"}, {"c", "a"}, {0, 2}, true},
    {{2, 3, 4, 16}, {}, {1, 3}, {1, 3}},
    {{7}, {}, {0}, {0}},
    {{6, 1}, {}, {1}, {1}},
};

// The result shape the spec implies: reduced axes dropped, or kept as size 1 (tags kept).
Shape reduced_shape(DType d, const ReduceCase& c, const std::vector<bool>& red) {
  std::vector<int64_t> od;
  std::vector<Tag> ot;
  for (size_t i = 0; i < c.dims.size(); ++i) {
    if (red[i] && !c.keep_dims) continue;
    od.push_back(red[i] ? 1 : c.dims[i]);
    if (!c.tags.empty()) ot.push_back(c.tags[i]);
  }
  return shape_of(d, od, ot);
}

// Runs all four (or, for integers, three) reductions of one case and checks them.
void check_case(DType d, const ReduceCase& c, const Vals& x, double rtol, double atol) {
  const Shape in = shape_of(d, c.dims, c.tags);
  SCOPED_TRACE(in.to_string() + (c.keep_dims ? " keep_dims" : ""));
  std::vector<bool> red(c.dims.size(), false);
  for (int a : c.resolved) red[static_cast<size_t>(a)] = true;
  const Axes axes = c.axes;
  const ReduceOptions opts{c.keep_dims};
  const bool fl = is_float(d);
  Outs o;
  if (is_unsigned_int(d)) {
    // Sum and max share the identity 0 here; returned together they hit the
    // bug shown by Reduce.SharedInitMultiOutput, so compile them apart.
    Outs s = run([axes, opts](Tensor x) { return reduce_sum(x, axes, opts); }, {x}, in);
    o = run([axes, opts](Tensor x) {
      return std::vector<Tensor>{reduce_max(x, axes, opts), reduce_min(x, axes, opts)};
    }, {x}, in);
    o.values.insert(o.values.begin(), s.values[0]);
    o.shapes.insert(o.shapes.begin(), s.shapes[0]);
  } else {
    o = run([axes, opts, fl](Tensor x) {
      std::vector<Tensor> r{reduce_sum(x, axes, opts), reduce_max(x, axes, opts), reduce_min(x, axes, opts)};
      if (fl) r.push_back(reduce_mean(x, axes, opts));
      return r;
    }, {x}, in);
  }
  const Shape want_shape = reduced_shape(d, c, red);
  const RK kinds[] = {RK::kSum, RK::kMax, RK::kMin, RK::kMean};
  const char* names[] = {"sum", "max", "min", "mean"};
  for (size_t k = 0; k < o.values.size(); ++k) {
    EXPECT_EQ(o.shapes[k], want_shape) << names[k];
    Vals want = reduce_ref(d, c.dims, x, red, kinds[k]);
    if (kinds[k] == RK::kSum) want = quantize(d, want);
    EXPECT_TRUE(close(o.values[k], want, d, kinds[k] == RK::kMax || kinds[k] == RK::kMin ? 0 : rtol,
                      kinds[k] == RK::kMax || kinds[k] == RK::kMin ? 0 : atol))
        << names[k];
  }
}

TEST(Reduce, Floats) {
  // Tolerance: max / min exact. Sums of n terms in [-1, 1]: f32 rtol 1e-5 +
  // atol 1e-5 (accumulation order differs from the reference), f64 1e-12.
  // f16 / bf16 use small integers, so every partial sum is exact: sum exact,
  // mean within one rounding (rtol = eps).
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16})
    for (const ReduceCase& c : kCases) {
      const int64_t n = count_of(c.dims);
      Vals x;
      if (d == DType::kF16 || d == DType::kBF16) {
        for (int64_t i = 0; i < n; ++i) x.push_back(static_cast<Val>((i * 7) % 9) - 4);
      } else {
        x = quantize(d, rand_vals(static_cast<size_t>(n), -1, 1, 21));
      }
      const double tol = d == DType::kF32 ? 1e-5 : d == DType::kF64 ? 1e-12 : eps(d);
      check_case(d, c, x, tol, d == DType::kF32 || d == DType::kF64 ? tol : 0);
    }
}

TEST(Reduce, Integers) {
  // Tolerance: exact. Sums wrap modulo 2^bits (u8 sums of values near 255,
  // i8 sums of +-100), max / min use the dtype's ordering (u32 > INT_MAX).
  for (DType d : {DType::kI32, DType::kI64, DType::kU8, DType::kI8, DType::kU32, DType::kU64})
    for (size_t ci : {0, 4, 6, 7, 10, 11, 12}) {
      const ReduceCase& c = kCases[ci];
      const int64_t n = count_of(c.dims);
      Vals x;
      std::mt19937_64 rng(static_cast<uint64_t>(ci) + 3);
      for (int64_t i = 0; i < n; ++i) {
        Val v;
        switch (d) {
          case DType::kU8: v = 200 + static_cast<Val>(rng() % 56); break;
          case DType::kI8: v = static_cast<Val>(static_cast<int>(rng() % 201) - 100); break;
          case DType::kU32: v = static_cast<Val>(rng() % 4294967296ULL); break;
          case DType::kU64: v = static_cast<Val>(rng()); break;
          case DType::kI64: v = static_cast<Val>(static_cast<int64_t>(rng()) / 4); break;
          default: v = static_cast<Val>(static_cast<int64_t>(rng() % 2000001) - 1000000); break;
        }
        x.push_back(v);
      }
      check_case(d, c, x, 0, 0);
    }
}

TEST(Reduce, BoolMaxMin) {
  // max = any, min = all. Tolerance: exact.
  ScalarLoops scalar_loops;  // bool buffers: see the elementwise test's BoolVectorized
  const Shape in(DType::kBool, {3, 4});
  const Vals x = {0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1};
  Outs o = run([](Tensor x) { return std::vector<Tensor>{reduce_max(x, {1}), reduce_min(x, {1}), reduce_max(x)}; },
               {x}, in);
  const std::vector<bool> red = {false, true};
  EXPECT_TRUE(close(o.values[0], reduce_ref(DType::kBool, {3, 4}, x, red, RK::kMax), DType::kBool));
  EXPECT_TRUE(close(o.values[1], reduce_ref(DType::kBool, {3, 4}, x, red, RK::kMin), DType::kBool));
  EXPECT_TRUE(close(o.values[2], reduce_ref(DType::kBool, {3, 4}, x, {true, true}, RK::kMax), DType::kBool));
  EXPECT_EQ(o.shapes[2], Shape(DType::kBool));
}

TEST(Reduce, FloatSpecials) {
  // max / min propagate NaN; infinities reduce exactly. Tolerance: exact.
  const Val inf = std::numeric_limits<Val>::infinity(), nan = std::numeric_limits<Val>::quiet_NaN();
  const Vals x = {1, nan, 3, -inf, 2, 5, inf, -7};
  Outs o = run([](Tensor x) { return std::vector<Tensor>{reduce_max(x, {1}), reduce_min(x, {1})}; }, {x},
               Shape(DType::kF32, {2, 4}));
  EXPECT_TRUE(close(o.values[0], {nan, inf}, DType::kF32));
  EXPECT_TRUE(close(o.values[1], {nan, -7}, DType::kF32));
}

TEST(Reduce, SharedInitMultiOutput) {
  // Tolerance: exact.
  const Vals x = {200, 201, 250, 255, 210, 220, 230, 240, 100, 2, 3, 4};
  Outs o = run([](Tensor x) { return std::vector<Tensor>{reduce_sum(x, {0}), reduce_max(x, {0})}; }, {x},
               Shape(DType::kU8, {3, 4}));
  EXPECT_TRUE(close(o.values[0], reduce_ref(DType::kU8, {3, 4}, x, {true, false}, RK::kSum), DType::kU8));
  EXPECT_TRUE(close(o.values[1], reduce_ref(DType::kU8, {3, 4}, x, {true, false}, RK::kMax), DType::kU8));
}

}  // namespace
}  // namespace radix

namespace radix {
namespace {

// f16 / bf16 sums and means accumulate in f32: 4096 copies of f16(0.1) sum to
// their exact total 409.5 (f16 accumulation would stall near 256), and the
// mean is f16(0.1) itself.
TEST(Reduce, HalfPrecisionAccumulatesInF32) {
  for (DType d : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const uint16_t tenth = d == DType::kF16 ? float_to_f16(0.1f) : float_to_bf16(0.1f);
    auto decode = [d](uint16_t b) { return double(d == DType::kF16 ? f16_to_float(b) : bf16_to_float(b)); };
    Shape s(d, {2, 4096});
    auto exe = testing::must(compile_fn(testing::cpu(), [](Tensor x) {
      return std::make_tuple(reduce_sum(x, {1}), reduce_mean(x, {1}));
    }, s));
    auto [sum, mean] = testing::must(exe.call(testing::must(testing::cpu().buffer(s, std::vector<uint16_t>(8192, tenth)))));
    for (uint16_t g : testing::must(sum.to_host<uint16_t>()))
      EXPECT_NEAR(decode(g), 4096 * decode(tenth), d == DType::kF16 ? 0.125 : 1.0);  // half an ulp at 409.5
    for (uint16_t g : testing::must(mean.to_host<uint16_t>())) EXPECT_EQ(g, tenth);  // exact
  }
  // Errors still name the caller's shape.
  auto bad = compile_fn(testing::cpu(), [](Tensor x) { return reduce_sum(x, {"q"}); }, Shape(DType::kF16, {4}, {"a"}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("f16[a=4]"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace radix

namespace radix {
namespace {

// prod / all / any / argmax / argmin against plain loops, on every schedule.
TEST(ReduceMore, ProdAllAnyArgmaxArgmin) {
  const VectorIsa isas[] = {{4, 16}, {8, 16}, {16, 32}, {0, 0}};
  for (const VectorIsa& isa : isas) {
    SCOPED_TRACE("schedule_isa " + std::to_string(isa.f32_lanes));
    g_opts.compile.codegen.cpu.schedule_isa = isa;
    const int64_t R = 3, C = 19;
    const Shape fs(DType::kF32, {R, C}, {"r", "c"}), is(DType::kI32, {R, C}, {"r", "c"});
    Vals f = quantize(DType::kF32, rand_vals(R * C, 0.5, 1.5, 21)), iv;
    for (int64_t k = 0; k < R * C; ++k) iv.push_back(static_cast<Val>((k * 7) % 5 - 2));
    f[C + 4] = f[C + 9] = 9;      // tie for the max in row 1: first index wins
    f[2 * C + 3] = NAN;           // NaN in row 2 is both argmax and argmin
    Outs o = run([](Tensor a, Tensor b) {
      return std::vector<Tensor>{reduce_prod(a, {"c"}), reduce_prod(b, {"r"}), reduce_all(gt(b, full(Shape(DType::kI32), -2)), {"c"}),
                                 reduce_any(eq(b, full(Shape(DType::kI32), 2)), {"r"}), argmax(a, "c"), argmin(a, "c", DType::kI64),
                                 argmax(b, "r", DType::kU8), argmin(b, "c")};
    }, {f, iv}, fs, is);
    Vals prod_r, prod_c, all_r, any_c, amax, amin, bmax, bmin;
    for (int64_t r = 0; r < R; ++r) {
      double p = 1;
      bool all = true;
      int64_t imax = 0, imin = 0, jmin = 0;
      for (int64_t c = 0; c < C; ++c) {
        const Val v = f[r * C + c];
        p *= static_cast<double>(v);
        all = all && iv[r * C + c] > -2;
        const Val bmx = f[r * C + imax], bmn = f[r * C + imin];
        if (!std::isnan(bmx) && (std::isnan(v) || v > bmx)) imax = c;
        if (!std::isnan(bmn) && (std::isnan(v) || v < bmn)) imin = c;
        if (iv[r * C + c] < iv[r * C + jmin]) jmin = c;
      }
      prod_r.push_back(p);
      all_r.push_back(all);
      amax.push_back(imax);
      amin.push_back(imin);
      bmin.push_back(jmin);
    }
    for (int64_t c = 0; c < C; ++c) {
      int64_t p = 1, imax = 0;
      bool any = false;
      for (int64_t r = 0; r < R; ++r) {
        p *= static_cast<int64_t>(iv[r * C + c]);
        any = any || iv[r * C + c] == 2;
        if (iv[r * C + c] > iv[imax * C + c]) imax = r;
      }
      prod_c.push_back(p);
      any_c.push_back(any);
      bmax.push_back(imax);
    }
    // f32 product of 19 factors in [0.5, 1.5]: 19 roundings, 32 eps relative.
    EXPECT_TRUE(close(o.values[0], prod_r, DType::kF32, 32 * eps(DType::kF32)));
    EXPECT_TRUE(close(o.values[1], prod_c, DType::kI32));
    EXPECT_TRUE(close(o.values[2], all_r, DType::kBool));
    EXPECT_TRUE(close(o.values[3], any_c, DType::kBool));
    EXPECT_TRUE(close(o.values[4], amax, DType::kI32));
    EXPECT_EQ(o.values[4][1], 4);
    EXPECT_EQ(o.values[4][2], 3);
    EXPECT_TRUE(close(o.values[5], amin, DType::kI64));
    EXPECT_EQ(o.shapes[6], Shape(DType::kU8, {C}, {"c"}));
    EXPECT_TRUE(close(o.values[6], bmax, DType::kU8));
    EXPECT_TRUE(close(o.values[7], bmin, DType::kI32));
  }
  g_opts.compile.codegen.cpu.schedule_isa = {};
}

TEST(ReduceMore, BadInputNamesOpAndShape) {
  auto msg = [](auto fn, const Shape& s) {
    auto e = compile_fn(cpu(), fn, s);
    return e.ok() ? std::string("(compiled)") : e.status().message();
  };
  EXPECT_NE(msg([](Tensor x) { return argmax(x, 0, DType::kI8); }, Shape(DType::kF32, {300})).find("argmax(f32[300]): axis 0 of size 300 does not fit i8"),
            std::string::npos);
  EXPECT_NE(msg([](Tensor x) { return argmin(x, 0, DType::kF32); }, Shape(DType::kF32, {3})).find("index dtype must be an integer"),
            std::string::npos);
  EXPECT_NE(msg([](Tensor x) { return reduce_any(x); }, Shape(DType::kF32, {3})).find("reduce_any(f32[3]): takes a bool"),
            std::string::npos);
}

// argmax / argmin over rows of 32000 (a sampler's logits: the two
// vectorized passes, see first_extremum_index) against a naive loop that
// keeps the first index on ties and takes the first NaN: ties 20000 apart
// (and 1 apart, in one vector), two NaNs (the first wins both), a row of
// -inf (index 0), -0 and +0 tied for the maximum (the first of them), the
// extremum in the last element; f32 and bf16, one and two threads.
TEST(ReduceMore, ArgmaxOfLongRowsKeepsFirstIndexAndNaN) {
  const int64_t R = 6, C = 32000;
  std::vector<float> x = testing::random_vec<float>(size_t(R * C), -3, 3, 41);
  auto at = [&](int64_t r, int64_t c) -> float& { return x[size_t(r * C + c)]; };
  at(0, 20007) = at(0, 7) = 10;
  at(0, 100) = at(0, 101) = -10;
  at(1, 3) = 100;
  at(1, 31000) = at(1, 30001) = NAN;
  for (int64_t c = 0; c < C; ++c) at(2, c) = -INFINITY;
  for (int64_t c = 0; c < C; ++c) at(3, c) = -1.0f - std::abs(at(3, c));
  at(3, 900) = 0.0f;
  at(3, 500) = -0.0f;
  at(4, C - 1) = 50;
  at(4, C - 2) = -50;
  for (int64_t c = 0; c < C; ++c) at(5, c) = float(c % 97) - 48.0f;  // ties every 97
  for (DType d : {DType::kF32, DType::kBF16}) {
    std::vector<float> xd = x;
    if (d == DType::kBF16)
      for (float& v : xd) v = bf16_to_float(float_to_bf16(v));
    auto first = [&](int64_t r, bool is_max) {
      int64_t best = 0;
      for (int64_t c = 1; c < C; ++c) {
        const float v = xd[size_t(r * C + c)], b = xd[size_t(r * C + best)];
        if (!std::isnan(b) && (std::isnan(v) || (is_max ? v > b : v < b))) best = c;
      }
      return best;
    };
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " threads " + std::to_string(threads));
      CompileFnOptions o;
      o.compile.codegen.cpu.threads = threads;
      const Shape s(d, {R, C}, {"r", "c"});
      auto exe = must(compile_fn(cpu(), o, [](Tensor t) { return std::vector<Tensor>{argmax(t, "c"), argmin(t, "c", DType::kI64)}; }, s));
      std::vector<Buffer> out = must(exe.call(to_device(s, Vals(xd.begin(), xd.end()))));
      const std::vector<int32_t> amax = must(out[0].to_host<int32_t>());
      const std::vector<int64_t> amin = must(out[1].to_host<int64_t>());
      for (int64_t r = 0; r < R; ++r) {
        EXPECT_EQ(amax[size_t(r)], first(r, true)) << "argmax row " << r;
        EXPECT_EQ(amin[size_t(r)], first(r, false)) << "argmin row " << r;
      }
      EXPECT_EQ(amax[0], 7);
      EXPECT_EQ(amax[1], 30001);
      EXPECT_EQ(amin[1], 30001);
      EXPECT_EQ(amax[2], 0);
      EXPECT_EQ(amax[3], 500);
      EXPECT_EQ(amax[4], C - 1);
      EXPECT_EQ(amin[0], 100);
    }
  }
}

// A sampler-sized argmax reads its indices from a constant (no buffer of
// 32000 indices allocated and written per call), and its index pass keeps
// AVX2's comparison masks in vector registers: no packing of two 8-lane masks
// to bytes and back per step (the old "both NaN" test did that). Numbers
// against std::max_element; NaN and tie cases are the test above's.
TEST(ReduceMore, ArgmaxReadsConstantIndicesAndKeepsMasksInVectors) {
  const int64_t C = 32000;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("radix-argmax-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  CompileFnOptions o;
  o.compile.diagnostics.dump = {"bufferize", "asm"};
  o.compile.diagnostics.dump_dir = dir.string();
  const Shape s(DType::kF32, {1, C});
  auto exe = must(compile_fn(cpu(), o, [](Tensor t) { return argmax(t, 1, DType::kI32); }, s));
  const std::string ir = testing::stage_dump(dir, "bufferize.mlir"), asm_text = testing::stage_dump(dir, "asm.s");
  std::filesystem::remove_all(dir);
  EXPECT_NE(ir.find("memref.get_global"), std::string::npos) << ir;
  EXPECT_EQ(testing::lines_with(ir, "memref.alloc", "32000xi32"), std::vector<std::string>{});
  ASSERT_FALSE(asm_text.empty());
  for (const char* op : {"vpacksswb", "vpackssdw", "vpunpckhbw"})
    EXPECT_EQ(asm_text.find(op), std::string::npos) << op << " in\n" << asm_text;
  const std::vector<float> x = testing::random_vec<float>(size_t(C), -3, 3, 42);
  const int32_t got = must(must(exe.call(must(cpu().buffer(s, x)))).to_host<int32_t>())[0];
  EXPECT_EQ(got, std::max_element(x.begin(), x.end()) - x.begin());
}

}  // namespace
}  // namespace radix
