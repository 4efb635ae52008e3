// Numerics of ops_math.h against plain C++ references written from each op's
// definition, table-driven: every op over shapes with size-1 and
// non-multiple-of-vector-width dims, every dtype it takes, on the SSE / AVX2 /
// AVX-512 tilings and as plain loops. Tolerances are stated per op.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

const std::vector<std::vector<int64_t>> kShapes = {{1}, {7}, {3, 17}, {2, 1, 33}, {64}};

// Applies f elementwise (host reference), rounding the result to d.
Vals map1(const Vals& x, DType d, const std::function<Val(Val)>& f) {
  Vals r;
  for (Val v : x) r.push_back(wrap(d, f(v)));
  return r;
}

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<Val(Val)> ref;
  std::vector<DType> dtypes;
  double lo, hi;     // input range
  double rtol_ulps;  // relative tolerance in units of eps(dtype); 0 = exact
  DType out = DType::kBool;  // kBool here means "same as the input"
};

TEST(MathOps, UnaryAgainstLibm) {
  const std::vector<DType> floats = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16};
  // Tolerances: rounding ops are exact; libm-backed ops one rounding of the
  // dtype (f16 / bf16 compute in f32 and round once: 1 eps); f32 sin / cos /
  // tan / erf / expm1 / log1p go through polynomial approximations: 8 eps
  // (4 ulp either way) against the double reference.
  const std::vector<UnaryCase> cases = {
      {"floor", [](const Tensor& x) { return floor(x); }, [](Val v) { return std::floor(v); }, floats, -50, 50, 0},
      {"ceil", [](const Tensor& x) { return ceil(x); }, [](Val v) { return std::ceil(v); }, floats, -50, 50, 0},
      {"round", [](const Tensor& x) { return round(x); }, [](Val v) { return std::round(v); }, floats, -50, 50, 0},
      {"round_even", [](const Tensor& x) { return round(x, RoundMode::kHalfToEven); },
       [](Val v) { return std::nearbyint(v); }, floats, -50, 50, 0},
      {"sin", [](const Tensor& x) { return sin(x); }, [](Val v) { return std::sin(v); }, floats, -6, 6, 8},
      {"cos", [](const Tensor& x) { return cos(x); }, [](Val v) { return std::cos(v); }, floats, -6, 6, 8},
      {"tan", [](const Tensor& x) { return tan(x); }, [](Val v) { return std::tan(v); }, floats, -1.2, 1.2, 8},
      {"exp2", [](const Tensor& x) { return exp2(x); }, [](Val v) { return std::exp2(v); }, floats, -10, 10, 8},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](Val v) { return std::expm1(v); }, floats, -3, 3, 8},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](Val v) { return std::log1p(v); }, floats, -0.9, 5, 8},
      {"erf", [](const Tensor& x) { return erf(x); }, [](Val v) { return std::erf(v); }, floats, -3, 3, 8},
      {"sign", [](const Tensor& x) { return sign(x); }, [](Val v) { return Val(v > 0 ? 1 : v < 0 ? -1 : 0); },
       {DType::kF32, DType::kI32, DType::kI8, DType::kU16, DType::kF16}, -5, 5, 0},
  };
  on_every_schedule([&] {
    for (const UnaryCase& c : cases)
      for (DType d : c.dtypes)
        for (const auto& dims : kShapes) {
          SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(d)) + " " + shape_of(d, dims).to_string());
          const Shape s = shape_of(d, dims);
          Vals x = rand_vals(static_cast<size_t>(s.count()), is_unsigned_int(d) ? 0 : c.lo, c.hi, 7);
          if (!is_float(d))
            for (Val& v : x) v = std::trunc(v);
          x = quantize(d, x);
          if (std::string(c.name).rfind("round", 0) == 0 && x.size() > 3) x[0] = 2.5, x[1] = -2.5, x[2] = 3.5;
          Outs o = run([&](Tensor t) { return c.op(t); }, {x}, s);
          EXPECT_EQ(o.shapes[0], s);
          EXPECT_TRUE(close(o.values[0], map1(x, d, c.ref), d, c.rtol_ulps * eps(d), c.rtol_ulps * eps(d)));
        }
  });
}

TEST(MathOps, PowForEveryDtypePair) {
  on_every_schedule([] {
    // float ^ float: one pow, 4 eps; float ^ int: exponent converted, same.
    const Shape f(DType::kF32, {3, 5}), i(DType::kI32, {3, 5});
    Vals base = rand_vals(15, 0.1, 3, 1), ef = rand_vals(15, -3, 3, 2), ei;
    for (int k = 0; k < 15; ++k) ei.push_back(k % 7 - 3);
    Outs o = run([](Tensor a, Tensor b, Tensor c) { return std::vector<Tensor>{pow(a, b), pow(a, c)}; },
                 {quantize(DType::kF32, base), quantize(DType::kF32, ef), ei}, f, f, i);
    Vals w1, w2;
    for (int k = 0; k < 15; ++k) {
      w1.push_back(std::pow(quantize(DType::kF32, base[k]), quantize(DType::kF32, ef[k])));
      w2.push_back(std::pow(quantize(DType::kF32, base[k]), ei[k]));
    }
    EXPECT_TRUE(close(o.values[0], w1, DType::kF32, 4 * eps(DType::kF32)));
    EXPECT_TRUE(close(o.values[1], w2, DType::kF32, 4 * eps(DType::kF32)));
    // int ^ int: exact with wrapping; negative exponents by XLA's rule.
    const Shape s(DType::kI32, {10});
    const Vals b = {2, -3, 7, 1, -1, -1, 5, 0, 3, 2}, e = {10, 3, 0, -4, -3, -2, -1, 5, 21, 31};
    Outs p = run([](Tensor a, Tensor b) { return pow(a, b); }, {b, e}, s, s);
    Vals w;
    for (int k = 0; k < 10; ++k) {
      if (e[k] < 0) {
        w.push_back(b[k] == 1 ? 1 : b[k] == -1 ? (static_cast<int>(e[k]) % 2 ? -1 : 1) : 0);
        continue;
      }
      uint32_t r = 1;
      for (int j = 0; j < static_cast<int>(e[k]); ++j) r *= static_cast<uint32_t>(static_cast<int32_t>(b[k]));
      w.push_back(static_cast<int32_t>(r));
    }
    EXPECT_TRUE(close(p.values[0], w, DType::kI32));
  });
}

TEST(MathOps, FmodRemainderAndClamp) {
  on_every_schedule([] {
    const Shape fs(DType::kF32, {2, 9}), is(DType::kI32, {2, 9});
    Vals a = quantize(DType::kF32, rand_vals(18, -20, 20, 3)), b = quantize(DType::kF32, rand_vals(18, -6, 6, 4));
    Outs o = run([](Tensor a, Tensor b) { return std::vector<Tensor>{fmod(a, b), remainder(a, b), clamp(a, -3.0, 4.5)}; },
                 {a, b}, fs, fs);
    Vals wf, wr, wc;
    for (size_t k = 0; k < a.size(); ++k) {
      double f = std::fmod(double(a[k]), double(b[k]));
      wf.push_back(f);
      wr.push_back(f != 0 && ((f < 0) != (b[k] < 0)) ? f + double(b[k]) : f);
      wc.push_back(std::min<Val>(std::max<Val>(a[k], -3), 4.5));
    }
    // fmod is exact in binary floating point; the remainder's fix-up adds b once (one rounding).
    EXPECT_TRUE(close(o.values[0], wf, DType::kF32));
    EXPECT_TRUE(close(o.values[1], quantize(DType::kF32, wr), DType::kF32, eps(DType::kF32), 1e-6));
    EXPECT_TRUE(close(o.values[2], wc, DType::kF32));
    // Integers, exact, with the edge cases x % 0 = x and INT_MIN % -1 = 0.
    const Vals ia = {7, -7, 7, -7, 5, -2147483648.0, 9, 0, 13, -13, 6, 6, 1, 2, 3, 4, 5, 6};
    const Vals ib = {3, 3, -3, -3, 0, -1, 4, 5, 1, -5, 4, -4, 7, 7, 7, 7, 7, 7};
    Outs p = run([](Tensor a, Tensor b) { return std::vector<Tensor>{fmod(a, b), remainder(a, b)}; }, {ia, ib}, is, is);
    Vals pf, pr;
    for (size_t k = 0; k < ia.size(); ++k) {
      int64_t x = static_cast<int64_t>(ia[k]), y = static_cast<int64_t>(ib[k]);
      int64_t f = y == 0 ? x : (y == -1 ? 0 : x % y);
      pf.push_back(f);
      pr.push_back(f != 0 && ((f < 0) != (y < 0)) ? f + y : f);
    }
    EXPECT_TRUE(close(p.values[0], pf, DType::kI32));
    EXPECT_TRUE(close(p.values[1], pr, DType::kI32));
  });
}

TEST(MathOps, PredicatesBitwiseShiftsAndLogical) {
  on_every_schedule([] {
    const Shape fs(DType::kF32, {6});
    const Vals fx = {1.5, INFINITY, -INFINITY, NAN, 0, -3};
    Outs o = run([](Tensor x) { return std::vector<Tensor>{is_finite(x), is_nan(x), is_inf(x)}; }, {fx}, fs);
    EXPECT_TRUE(close(o.values[0], {1, 0, 0, 0, 1, 1}, DType::kBool));
    EXPECT_TRUE(close(o.values[1], {0, 0, 0, 1, 0, 0}, DType::kBool));
    EXPECT_TRUE(close(o.values[2], {0, 1, 1, 0, 0, 0}, DType::kBool));

    const Shape s(DType::kI32, {9});
    const Vals a = {12, -1, 255, 1, -8, 1 << 30, 7, -2147483648.0, 0};
    const Vals b = {10, 3, 4, 31, 1, 2, 32, 31, -1};
    Outs p = run([](Tensor a, Tensor b) {
      return std::vector<Tensor>{bitwise_and(a, b), bitwise_or(a, b), bitwise_xor(a, b), bitwise_not(a),
                                 shift_left(a, b), shift_right_logical(a, b), shift_right_arithmetic(a, b),
                                 popcount(a), count_leading_zeros(a)};
    }, {a, b}, s, s);
    std::vector<Vals> w(9);
    for (size_t k = 0; k < a.size(); ++k) {
      const int32_t x = static_cast<int32_t>(a[k]), y = static_cast<int32_t>(b[k]);
      const uint32_t ux = static_cast<uint32_t>(x);
      const bool out = y < 0 || y >= 32;
      w[0].push_back(x & y);
      w[1].push_back(x | y);
      w[2].push_back(x ^ y);
      w[3].push_back(~x);
      w[4].push_back(out ? 0 : static_cast<int32_t>(ux << y));
      w[5].push_back(out ? 0 : static_cast<int32_t>(ux >> y));
      w[6].push_back(out ? (x < 0 ? -1 : 0) : (x >> y));
      w[7].push_back(std::popcount(ux));
      w[8].push_back(std::countl_zero(ux));
    }
    for (size_t k = 0; k < w.size(); ++k) EXPECT_TRUE(close(p.values[k], w[k], DType::kI32)) << "output " << k;

    const Shape bs(DType::kBool, {4});
    Outs q = run([](Tensor a, Tensor b) {
      return std::vector<Tensor>{logical_and(a, b), logical_or(a, b), logical_not(a), bitwise_xor(a, b)};
    }, {{0, 0, 1, 1}, {0, 1, 0, 1}}, bs, bs);
    EXPECT_TRUE(close(q.values[0], {0, 0, 0, 1}, DType::kBool));
    EXPECT_TRUE(close(q.values[1], {0, 1, 1, 1}, DType::kBool));
    EXPECT_TRUE(close(q.values[2], {1, 1, 0, 0}, DType::kBool));
    EXPECT_TRUE(close(q.values[3], {0, 1, 1, 0}, DType::kBool));

    // bitcast f32 <-> i32 against memcpy.
    const Vals bits = {1.0, -2.5, 0.15625, 1e-40};
    Outs r = run([](Tensor x) { return bitcast(x, DType::kI32); }, {quantize(DType::kF32, bits)}, Shape(DType::kF32, {4}));
    Vals wb;
    for (Val v : bits) {
      float f = static_cast<float>(v);
      int32_t i;
      std::memcpy(&i, &f, 4);
      wb.push_back(i);
    }
    EXPECT_TRUE(close(r.values[0], wb, DType::kI32));
  });
}

TEST(MathOps, BadInputNamesTheOpAndShapes) {
  auto expect_error = [](auto fn, std::vector<Shape> shapes, std::initializer_list<const char*> needles) {
    Result<TracedModule> m = trace(TraceOptions{}, shapes, std::vector<std::string>(shapes.size()), 0,
                                   [&](std::span<const Tensor> in) { return std::vector<Tensor>{fn(in)}; });
    ASSERT_FALSE(m.ok());
    for (const char* n : needles)
      EXPECT_NE(m.status().message().find(n), std::string::npos) << "missing '" << n << "' in " << m.status().message();
  };
  using In = std::span<const Tensor>;
  const Shape f(DType::kF32, {3}), i(DType::kI32, {3}), b(DType::kBool, {3}), h(DType::kF16, {3});
  expect_error([](In x) { return sin(x[0]); }, {i}, {"sin(i32[3])", "floating-point"});
  expect_error([](In x) { return pow(x[0], x[1]); }, {f, h}, {"pow(f32[3], f16[3])", "share one dtype"});
  expect_error([](In x) { return pow(x[0], x[1]); }, {i, f}, {"pow(i32[3], f32[3])", "same dtype"});
  expect_error([](In x) { return bitwise_and(x[0], x[1]); }, {f, f}, {"bitwise_and(f32[3])", "integer or bool"});
  expect_error([](In x) { return shift_left(x[0], x[1]); }, {b, b}, {"shift_left(bool[3])", "integer"});
  expect_error([](In x) { return logical_or(x[0], x[1]); }, {i, i}, {"logical_or(i32[3], i32[3])", "bool"});
  expect_error([](In x) { return bitcast(x[0], DType::kF16); }, {f}, {"bitcast(f32[3]) to f16", "same bit width"});
  expect_error([](In x) { return fmod(x[0], x[1]); }, {f, Shape(DType::kF32, {4})}, {"fmod", "f32[3]", "f32[4]"});
  expect_error([](In x) { return clamp(x[0], 2.0, 1.0); }, {f}, {"clamp(f32[3])", "above"});
}

}  // namespace
}  // namespace radix
