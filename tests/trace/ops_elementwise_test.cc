// Numerics of the elementwise ops (binary / unary / comparisons / select /
// convert / constants / scalar operators) and of broadcasting, against naive
// references computed here in long double from the same (dtype-rounded) inputs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "radix/core/half.h"
#include "trace/op_test_helpers.h"

namespace radix {
namespace {


constexpr DType kFloats[] = {DType::kF16, DType::kBF16, DType::kF32, DType::kF64};
constexpr DType kInts[] = {DType::kI8, DType::kI16, DType::kI32, DType::kI64,
                           DType::kU8, DType::kU16, DType::kU32, DType::kU64};

// Two shapes per case: an odd inner dim (scalar loops) and a multiple of 16
// (the tiled + vectorized elementwise path).
const std::vector<int64_t> kShapes[] = {{3, 5}, {2, 16}};

// ------------------------------------------------------------ float binary

TEST(ElementwiseFloat, BinaryOps) {
  for (DType d : kFloats)
    for (const auto& dims : kShapes) {
      SCOPED_TRACE(shape_of(d, dims).to_string());
      const Shape s = shape_of(d, dims);
      const size_t n = static_cast<size_t>(s.count());
      Vals a = quantize(d, rand_vals(n, -4, 4, 1));
      Vals b = quantize(d, rand_vals(n, 0.25, 4, 2));
      for (size_t i = 0; i < n; i += 2) b[i] = -b[i];
      Vals p = quantize(d, rand_vals(n, 0.1, 3, 3));
      Vals q = quantize(d, rand_vals(n, -2, 2, 4));
      Outs o = run([](Tensor a, Tensor b, Tensor p, Tensor q) {
        return std::vector<Tensor>{add(a, b), sub(a, b), mul(a, b), div(a, b), maximum(a, b), minimum(a, b), pow(p, q)};
      }, {a, b, p, q}, s, s, s, s);
      std::vector<Vals> want(7, Vals(n));
      for (size_t i = 0; i < n; ++i) {
        want[0][i] = quantize(d, a[i] + b[i]);
        want[1][i] = quantize(d, a[i] - b[i]);
        want[2][i] = quantize(d, a[i] * b[i]);
        want[3][i] = quantize(d, a[i] / b[i]);
        want[4][i] = std::max(a[i], b[i]);
        want[5][i] = std::min(a[i], b[i]);
        want[6][i] = quantize(d, std::pow(p[i], q[i]));
      }
      // Tolerance: + - * / max min are correctly rounded (f16 / bf16 via f32,
      // still one rounding): rtol = eps(dtype). pow: rtol = 4 eps(dtype).
      const char* names[] = {"add", "sub", "mul", "div", "maximum", "minimum", "pow"};
      for (int k = 0; k < 7; ++k) {
        EXPECT_EQ(o.shapes[k], s) << names[k];
        EXPECT_TRUE(close(o.values[k], want[k], d, (k == 6 ? 4 : 1) * eps(d))) << names[k];
      }
    }
}

// ------------------------------------------------------------ float unary

TEST(ElementwiseFloat, UnaryOps) {
  for (DType d : kFloats)
    for (const auto& dims : kShapes) {
      SCOPED_TRACE(shape_of(d, dims).to_string());
      const Shape s = shape_of(d, dims);
      const size_t n = static_cast<size_t>(s.count());
      Vals x = quantize(d, rand_vals(n, -3, 3, 5));
      Vals y = quantize(d, rand_vals(n, 0.05, 5, 6));
      Outs o = run([](Tensor x, Tensor y) {
        return std::vector<Tensor>{neg(x), abs(x), exp(x), log(y), sqrt(y), rsqrt(y), tanh(x), sigmoid(x), relu(x)};
      }, {x, y}, s, s);
      std::vector<Vals> want(9, Vals(n));
      for (size_t i = 0; i < n; ++i) {
        want[0][i] = -x[i];
        want[1][i] = std::fabs(x[i]);
        want[2][i] = quantize(d, std::exp(x[i]));
        want[3][i] = quantize(d, std::log(y[i]));
        want[4][i] = quantize(d, std::sqrt(y[i]));
        want[5][i] = quantize(d, 1 / std::sqrt(y[i]));
        want[6][i] = quantize(d, std::tanh(x[i]));
        want[7][i] = quantize(d, 1 / (1 + std::exp(-x[i])));
        want[8][i] = std::max<Val>(x[i], 0);
      }
      // Tolerance: neg / abs / relu exact; math functions rtol = 8 eps(dtype)
      // (f16 / bf16 are computed in f32 and rounded once: ~1 ulp).
      const char* names[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu"};
      for (int k = 0; k < 9; ++k) {
        EXPECT_EQ(o.shapes[k], s) << names[k];
        const bool exact = k == 0 || k == 1 || k == 8;
        EXPECT_TRUE(close(o.values[k], want[k], d, exact ? 0 : 8 * eps(d), exact ? 0 : 1e-30)) << names[k];
      }
    }
}

TEST(ElementwiseFloat, SpecialValues) {
  // Tolerance: exact (infinities, signed zeros' values, NaN == NaN), except
  // sigmoid's tails, which must saturate to 0 / 1 within atol 1e-30. With
  // libm math (approximate_math off) exp(-100) is the exact subnormal; the
  // default approximations may flush subnormal results to zero (atol: the
  // smallest normal f32).
  for (bool approximate : {false, true}) {
  SCOPED_TRACE(approximate ? "approximate_math" : "libm math");
  g_opts.compile.codegen.cpu.approximate_math = approximate;
  const Val inf = std::numeric_limits<Val>::infinity(), nan = std::numeric_limits<Val>::quiet_NaN();
  const Vals x = {-100, 100, -0.0, 0, inf, -inf, 1000, -1000};
  const Vals y = {0, inf, 1, 4, 0.25, nan, 16, 1};
  const Shape s(DType::kF32, {8});
  Outs o = run([](Tensor x, Tensor y) {
    return std::vector<Tensor>{exp(x), tanh(x), sigmoid(x), relu(x), abs(x), neg(x), log(y), sqrt(y), rsqrt(y)};
  }, {x, y}, s, s);
  std::vector<Vals> want(9);
  for (size_t i = 0; i < x.size(); ++i) {
    want[0].push_back(quantize(DType::kF32, std::exp(x[i])));
    want[1].push_back(std::tanh(x[i]));
    want[2].push_back(x[i] > 0 ? 1.0L : 0.0L);
    want[3].push_back(std::max<Val>(x[i], 0));
    want[4].push_back(std::fabs(x[i]));
    want[5].push_back(-x[i]);
    want[6].push_back(std::log(y[i]));
    want[7].push_back(std::sqrt(y[i]));
    want[8].push_back(quantize(DType::kF32, 1 / std::sqrt(y[i])));
  }
  want[2][2] = want[2][3] = 0.5;  // sigmoid(+-0)
  const double flush = approximate ? std::numeric_limits<float>::min() : 0;
  for (int k = 0; k < 9; ++k)
    EXPECT_TRUE(close(o.values[k], quantize(DType::kF32, want[k]), DType::kF32, 0,
                      k == 2 ? 1e-30 : k == 0 ? flush : 0)) << k;
  }
  g_opts.compile.codegen.cpu.approximate_math = true;
}

// ------------------------------------------------------------ integers

// Interesting values of an integer dtype: extremes, around zero, around the
// signed limits of narrower types, plus seeded random bit patterns.
Vals int_values(DType d, size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Vals v = {0, 1, 2, 7, 100, 127, 128, 200, 255};
  with_host_type(d, [&]<class T>() {
    v.push_back(std::numeric_limits<T>::max());
    v.push_back(std::numeric_limits<T>::min());
    if (std::is_signed_v<T>) for (Val x : {-1, -2, -7, -100, -128}) v.push_back(x);
    while (v.size() < n) v.push_back(static_cast<T>(rng()));
    return 0;
  });
  v.resize(n);
  for (Val& x : v) x = wrap(d, x);
  return v;
}

// Two's-complement bit pattern of an integer value.
uint64_t bits64(Val v) { return v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v); }
// C++ integer division (truncating), done in 64-bit integers.
Val int_div(DType d, Val a, Val b) {
  if (is_signed_int(d)) return static_cast<Val>(static_cast<int64_t>(a) / static_cast<int64_t>(b));
  return static_cast<Val>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
}

TEST(ElementwiseInt, BinaryAndUnaryOps) {
  for (DType d : kInts)
    for (const auto& dims : kShapes) {
      const Shape s = shape_of(d, dims);
      SCOPED_TRACE(s.to_string());
      const size_t n = static_cast<size_t>(s.count());
      Vals a = int_values(d, n, 7);
      Vals b = int_values(d, n, 8);
      std::reverse(b.begin(), b.end());
      // Divisors: nonzero, many small ones of both signs (truncation toward zero).
      Vals c = b;
      for (size_t i = 0; i < n; ++i) {
        if (i % 2 == 0) c[i] = wrap(d, static_cast<Val>(static_cast<int>(i % 7) + 1) * (is_signed_int(d) && i % 4 == 0 ? -1 : 1));
        if (c[i] == 0 || (c[i] == -1 && is_signed_int(d))) c[i] = 3;
      }
      Outs o = run([](Tensor a, Tensor b, Tensor c) {
        return std::vector<Tensor>{a + b, a - b, a * b, a / c, maximum(a, b), minimum(a, b), -a, abs(a), relu(a)};
      }, {a, b, c}, s, s, s);
      std::vector<Vals> want(9, Vals(n));
      for (size_t i = 0; i < n; ++i) {
        want[0][i] = wrap(d, static_cast<Val>(bits64(a[i]) + bits64(b[i])));
        want[1][i] = wrap(d, static_cast<Val>(bits64(a[i]) - bits64(b[i])));
        // The exact product may not fit in 64 bits: multiply modulo 2^64.
        want[2][i] = wrap(d, static_cast<Val>(bits64(a[i]) * bits64(b[i])));
        want[3][i] = int_div(d, a[i], c[i]);
        want[4][i] = std::max(a[i], b[i]);
        want[5][i] = std::min(a[i], b[i]);
        want[6][i] = wrap(d, static_cast<Val>(0 - bits64(a[i])));
        want[7][i] = a[i] < 0 ? wrap(d, static_cast<Val>(0 - bits64(a[i]))) : a[i];  // abs(min) wraps to min
        want[8][i] = std::max<Val>(a[i], 0);
      }
      // Tolerance: exact (wrap-around modulo 2^bits, division truncates).
      const char* names[] = {"add", "sub", "mul", "div", "maximum", "minimum", "neg", "abs", "relu"};
      for (int k = 0; k < 9; ++k) {
        EXPECT_EQ(o.shapes[k], s) << names[k];
        EXPECT_TRUE(close(o.values[k], want[k], d)) << names[k];
      }
    }
}

TEST(ElementwiseInt, U8WrapAroundAndSignedDivision) {
  // Tolerance: exact. Hand-picked operands on top of the random ones above.
  for (DType d : {DType::kU8, DType::kI8, DType::kI32}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const Vals a = is_signed_int(d) ? Vals{7, -7, 7, -7, -1, 0, 127, -128} : Vals{250, 10, 0, 128, 255, 3, 200, 1};
    const Vals b = is_signed_int(d) ? Vals{2, 2, -2, -2, 3, -5, 2, 3} : Vals{10, 250, 1, 2, 255, 7, 100, 2};
    const Shape s(d, {8});
    Outs o = run([](Tensor a, Tensor b) { return std::vector<Tensor>{a + b, a - b, a * b, a / b}; }, {a, b}, s, s);
    std::vector<Vals> want(4);
    for (size_t i = 0; i < a.size(); ++i) {
      want[0].push_back(wrap(d, a[i] + b[i]));
      want[1].push_back(wrap(d, a[i] - b[i]));
      want[2].push_back(wrap(d, a[i] * b[i]));
      want[3].push_back(int_div(d, a[i], b[i]));
    }
    for (int k = 0; k < 4; ++k) EXPECT_TRUE(close(o.values[k], want[k], d)) << k;
  }
}

// ------------------------------------------------------------ comparisons

// 8 values per dtype (some repeated) so that [8,1] x [1,8] covers every pair.
Vals compare_values(DType d) {
  const Val inf = std::numeric_limits<Val>::infinity();
  switch (d) {
    case DType::kBool: return {0, 1, 0, 1, 1, 0, 0, 1};
    case DType::kI8: return {-128, -1, 0, 1, 127, 5, -5, 1};
    case DType::kI16: return {-32768, -1, 0, 1, 32767, 300, -300, 0};
    case DType::kI32: return {-2147483648.0L, -1, 0, 1, 2147483647, 65536, -65536, 1};
    case DType::kI64: return {-0x1p63L, -1, 0, 1, 0x1p63L - 1, 0x1p40L, -0x1p40L, 1};
    case DType::kU8: return {0, 1, 127, 128, 200, 255, 100, 1};
    case DType::kU16: return {0, 1, 32767, 32768, 40000, 65535, 100, 1};
    case DType::kU32: return {0, 1, 2147483647, 2147483648.0L, 3000000000.0L, 4294967295.0L, 100, 1};
    case DType::kU64: return {0, 1, 0x1p63L - 1, 0x1p63L, 0x1p64L - 1, 0x1p32L, 100, 1};
    default: return {-inf, -1.5, -0.0, 0, 1.5, inf, std::numeric_limits<Val>::quiet_NaN(), 1.5};
  }
}

// Bool (i1) tensors are one byte per element in memory; a vector<Nxi1> would
// be bit-packed, so the schedule keeps ops touching bools scalar.
// BoolVectorized checks shapes that would otherwise take the vector path.

TEST(Elementwise, Comparisons) {
  for (DType d : kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const Vals v = compare_values(d);
    const Shape sa(d, {8, 1}), sb(d, {1, 8});
    Outs o = run([](Tensor a, Tensor b) {
      return std::vector<Tensor>{eq(a, b), ne(a, b), lt(a, b), le(a, b), gt(a, b), ge(a, b)};
    }, {v, v}, sa, sb);
    std::vector<Vals> want(6);
    for (Val x : v)
      for (Val y : v) {
        want[0].push_back(x == y);
        want[1].push_back(x != y);
        want[2].push_back(x < y);
        want[3].push_back(x <= y);
        want[4].push_back(x > y);
        want[5].push_back(x >= y);
      }
    // Tolerance: exact (bool results; NaN compares unordered: only ne is true).
    const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    for (int k = 0; k < 6; ++k) {
      EXPECT_EQ(o.shapes[k], Shape(DType::kBool, {8, 8})) << names[k];
      EXPECT_TRUE(close(o.values[k], want[k], DType::kBool)) << names[k];
    }
  }
}

// ------------------------------------------------------------ select

TEST(Elementwise, SelectBroadcasts) {
  for (DType d : {DType::kF32, DType::kI64, DType::kU8, DType::kBool, DType::kF16, DType::kF64}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const Vals cond = {1, 0, 1};
    const Vals a = {wrap(d, 1), wrap(d, 2), wrap(d, 3), wrap(d, 4)};
    const Vals b = {wrap(d, 9)};
    Outs o = run([](Tensor c, Tensor a, Tensor b) { return select(c, a, b); }, {cond, a, b},
                 Shape(DType::kBool, {3, 1}), Shape(d, {1, 4}), Shape(d));
    Vals want;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) want.push_back(cond[i] != 0 ? a[j] : b[0]);
    EXPECT_EQ(o.shapes[0], Shape(d, {3, 4}));
    EXPECT_TRUE(close(o.values[0], want, d));  // exact

    // Same shapes, vectorized inner dim.
    const Shape s(d, {2, 16});
    Vals c2(32), x(32), y(32);
    for (int i = 0; i < 32; ++i) {
      c2[i] = (i * 7) % 3 == 0;
      x[i] = wrap(d, i % 5);
      y[i] = wrap(d, 10 + i % 3);
    }
    Outs p = run([](Tensor c, Tensor a, Tensor b) { return select(c, a, b); }, {c2, x, y},
                 Shape(DType::kBool, {2, 16}), s, s);
    Vals want2(32);
    for (int i = 0; i < 32; ++i) want2[i] = c2[i] != 0 ? x[i] : y[i];
    EXPECT_TRUE(close(p.values[0], want2, d));  // exact
  }
}

// ------------------------------------------------------------ convert

// Reference conversion of an exactly-held value v from `from` to `to`.
Val convert_ref(DType from, DType to, Val v) {
  if (is_bool(to)) return v != 0;  // NaN != 0
  if (is_float(to)) return quantize(to, v);
  if (is_float(from)) return std::trunc(v);  // callers keep it in range
  return wrap(to, v);                         // integers: modulo 2^bits
}

// Source values for which every conversion is defined (float -> int needs the
// truncated value in range of the target: [0, 127] fits every integer dtype).
Vals convert_sources(DType d) {
  switch (d) {
    case DType::kBool: return {0, 1, 1, 0, 1, 0, 0, 1};
    case DType::kI8: return {0, 1, -1, 127, -128, 100, -100, 42};
    case DType::kI16: return {0, 1, -1, 255, 256, -129, 32767, -32768};
    case DType::kI32: return {0, -1, 300, 65535, -32769, 100000, 2147483647, -2147483648.0L};
    case DType::kI64: return {0, -1, 300, 0x1p40L + 1, -0x1p40L, 0x1p63L - 1, -0x1p63L, 4294967297.0L};
    case DType::kU8: return {0, 1, 127, 128, 200, 255, 64, 3};
    case DType::kU16: return {0, 1, 255, 256, 32768, 65535, 1000, 2048};
    case DType::kU32: return {0, 1, 65535, 65536, 2147483648.0L, 4294967295.0L, 16777217, 300};
    case DType::kU64: return {0, 1, 256, 4294967296.0L, 0x1p63L, 0x1p64L - 1, 0x1p64L - 2048, 70000};
    default: return quantize(d, {0, -0.0, 0.25, 1, 1.5, 2.5, 7.75, 100.5, 126.9, 127, 3.1, 64.5});
  }
}

void check_convert_from(DType from, bool vectorize) {
  SCOPED_TRACE("from " + std::string(dtype_name(from)) + (vectorize ? ", vectorized" : ", plain loops"));
  const Vals v = convert_sources(from);
  const Shape s(from, {static_cast<int64_t>(v.size())});
  Outs o = run([](Tensor x) {
    std::vector<Tensor> r;
    for (DType to : kAllDTypes) r.push_back(convert(x, to));
    return r;
  }, {v}, s);
  for (size_t k = 0; k < std::size(kAllDTypes); ++k) {
    const DType to = kAllDTypes[k];
    Vals want;
    for (Val x : v) want.push_back(convert_ref(from, to, x));
    EXPECT_EQ(o.shapes[k], s.with_dtype(to));
    // Tolerance: exact (one rounding to nearest into the target).
    EXPECT_TRUE(close(o.values[k], want, to)) << dtype_name(from) << " -> " << dtype_name(to);
  }
}

TEST(Elementwise, ConvertAllPairs) {
  for (DType from : kAllDTypes) {
    check_convert_from(from, true);
    ScalarLoops scalar_loops;
    check_convert_from(from, false);
  }
}

TEST(Elementwise, BoolVectorized) {
  // The same checks as above with the vectorizing schedule on ([8] / [8,8] / [2,16] shapes).
  const Vals v = compare_values(DType::kI32);
  Outs o = run([](Tensor a, Tensor b) { return std::vector<Tensor>{lt(a, b), eq(a, b)}; }, {v, v},
               Shape(DType::kI32, {8, 1}), Shape(DType::kI32, {1, 8}));
  Vals lt_want, eq_want;
  for (Val x : v)
    for (Val y : v) {
      lt_want.push_back(x < y);
      eq_want.push_back(x == y);
    }
  EXPECT_TRUE(close(o.values[0], lt_want, DType::kBool));
  EXPECT_TRUE(close(o.values[1], eq_want, DType::kBool));
  Vals c(32), x(32), y(32), sel;
  for (int i = 0; i < 32; ++i) {
    c[i] = i % 3 == 0;
    x[i] = i;
    y[i] = -i;
    sel.push_back(c[i] != 0 ? x[i] : y[i]);
  }
  const Shape s(DType::kF32, {2, 16});
  Outs p = run([](Tensor c, Tensor a, Tensor b) { return select(c, a, b); }, {c, x, y},
               Shape(DType::kBool, {2, 16}), s, s);
  EXPECT_TRUE(close(p.values[0], sel, DType::kF32));
  for (DType from : kAllDTypes) {
    const Vals w = convert_sources(from);
    Outs q = run([](Tensor x) { return convert(x, DType::kBool); }, {w},
                 Shape(from, {static_cast<int64_t>(w.size())}));
    Vals want;
    for (Val e : w) want.push_back(e != 0);
    EXPECT_TRUE(close(q.values[0], want, DType::kBool)) << dtype_name(from) << " -> bool";
  }
  Outs r = run([](Tensor x) { return convert(x, DType::kF32); }, {c}, Shape(DType::kBool, {32}));
  EXPECT_TRUE(close(r.values[0], c, DType::kF32));
}

TEST(Elementwise, ConvertFloatToSignedAndSpecials) {
  const Val inf = std::numeric_limits<Val>::infinity(), nan = std::numeric_limits<Val>::quiet_NaN();
  // Negative floats truncate toward zero into signed integers. Tolerance: exact.
  for (DType from : kFloats) {
    SCOPED_TRACE(std::string(dtype_name(from)));
    const Vals v = quantize(from, {-0.5, -1.5, -2.75, -100.25, -128, 5.5, -7.0, -0.0});
    Outs o = run([](Tensor x) {
      return std::vector<Tensor>{convert(x, DType::kI8), convert(x, DType::kI16), convert(x, DType::kI32),
                                 convert(x, DType::kI64)};
    }, {v}, Shape(from, {8}));
    Vals want;
    for (Val x : v) want.push_back(std::trunc(x) == 0 ? 0 : std::trunc(x));
    for (int k = 0; k < 4; ++k) EXPECT_TRUE(close(o.values[k], want, DType::kI32)) << k;
  }
  // Rounding, overflow to inf, underflow, NaN between floats; NaN -> bool is true.
  const Vals w = {0.1, 1.0 / 3, 1e300, -1e300, 1e-50, nan, inf, 65520, 3.4e38};
  Outs o = run([](Tensor x) {
    return std::vector<Tensor>{convert(x, DType::kF32), convert(x, DType::kBool),
                               convert(convert(x, DType::kF32), DType::kF16),
                               convert(convert(x, DType::kF32), DType::kBF16)};
  }, {w}, Shape(DType::kF64, {9}));
  Vals f32, b, f16, bf16;
  for (Val x : w) {
    f32.push_back(quantize(DType::kF32, x));
    b.push_back(x != 0);
    f16.push_back(quantize(DType::kF16, quantize(DType::kF32, x)));
    bf16.push_back(quantize(DType::kBF16, quantize(DType::kF32, x)));
  }
  EXPECT_TRUE(close(o.values[0], f32, DType::kF32));
  EXPECT_TRUE(close(o.values[1], b, DType::kBool));
  EXPECT_TRUE(close(o.values[2], f16, DType::kF16));
  EXPECT_TRUE(close(o.values[3], bf16, DType::kBF16));
}

// ------------------------------------------------------------ constants

TEST(Elementwise, Constants) {
  const double c1[] = {1, 2, 3, 4.5, -5, 6};
  const double c2[] = {-1, 0x1p40, 5};
  const double c3[] = {0.1, 65504};
  const double c4[] = {0, 1, 1};
  Outs o = run([&]() {
    return std::vector<Tensor>{
        scalar(2.5, DType::kF32),                        // 0
        scalar(-3, DType::kI8),                          // 1
        scalar(0.1, DType::kF16),                        // 2
        scalar(1e10, DType::kU64),                       // 3
        scalar(1, DType::kBool),                         // 4
        full(Shape(DType::kI32, {2, 3}), 7),             // 5
        full(Shape(DType::kU8, {4}), 255),               // 6
        full(Shape(DType::kBF16, {2, 2}), 0.1),          // 7
        full(Shape(DType::kF64, {3}, {"x"}), -1.25),     // 8
        constant(Shape(DType::kF32, {2, 3}), c1),        // 9
        constant(Shape(DType::kI64, {3}), c2),           // 10
        constant(Shape(DType::kF16, {2}), c3),           // 11
        constant(Shape(DType::kBool, {3}), c4),          // 12
        iota(5, DType::kI32),                            // 13
        iota(6, DType::kF16, "n"),                       // 14
        iota(300, DType::kBF16),                         // 15
        iota(20, DType::kU8),                            // 16
        iota(3, DType::kF64),                            // 17
    };
  }, {});
  const std::vector<Shape> shapes = {
      Shape(DType::kF32), Shape(DType::kI8), Shape(DType::kF16), Shape(DType::kU64), Shape(DType::kBool),
      Shape(DType::kI32, {2, 3}), Shape(DType::kU8, {4}), Shape(DType::kBF16, {2, 2}), Shape(DType::kF64, {3}, {"x"}),
      Shape(DType::kF32, {2, 3}), Shape(DType::kI64, {3}), Shape(DType::kF16, {2}), Shape(DType::kBool, {3}),
      Shape(DType::kI32, {5}), Shape(DType::kF16, {6}, {"n"}), Shape(DType::kBF16, {300}), Shape(DType::kU8, {20}),
      Shape(DType::kF64, {3})};
  auto iota_ref = [](int n, DType d) {
    Vals v;
    for (int i = 0; i < n; ++i) v.push_back(quantize(d, i));
    return v;
  };
  const std::vector<Vals> want = {
      {2.5}, {-3}, {quantize(DType::kF16, 0.1)}, {1e10}, {1},
      Vals(6, 7), Vals(4, 255), Vals(4, quantize(DType::kBF16, 0.1)), Vals(3, -1.25),
      Vals(c1, c1 + 6), Vals(c2, c2 + 3), {quantize(DType::kF16, 0.1), 65504}, {0, 1, 1},
      iota_ref(5, DType::kI32), iota_ref(6, DType::kF16), iota_ref(300, DType::kBF16), iota_ref(20, DType::kU8),
      iota_ref(3, DType::kF64)};
  ASSERT_EQ(o.values.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(o.shapes[k], shapes[k]) << k;
    EXPECT_TRUE(close(o.values[k], want[k], shapes[k].dtype())) << k;  // exact (values rounded to dtype once)
  }
}

// ------------------------------------------------------------ scalar operators

// Regression: a float scalar on an integer tensor silently took the integer
// dtype (x * 0.5 -> 0, x / 2.5 divided by 2, x + 1e10 wrapped).
TEST(Elementwise, ScalarsThatDoNotFitTheDtypeAreRefused) {
  struct Case {
    DType d;
    std::function<Tensor(Tensor)> f;
    std::vector<const char*> needles;
  };
  const std::vector<Case> cases = {
      {DType::kI32, [](Tensor x) { return x * 0.5; }, {"mul(i32[4])", "0.5", "not an integer"}},
      {DType::kI32, [](Tensor x) { return x / 2.5; }, {"div(i32[4])", "2.5", "not an integer"}},
      {DType::kI32, [](Tensor x) { return x + 1e10; }, {"add(i32[4])", "10000000000", "outside the range of i32"}},
      {DType::kU8, [](Tensor x) { return x + -1.0; }, {"add(u8[4])", "-1", "outside the range of u8"}},
      {DType::kU8, [](Tensor x) { return 256.0 - x; }, {"sub(u8[4])", "256", "outside the range"}},
      {DType::kI64, [](Tensor x) { return x * 0.25; }, {"mul(i64[4])", "not an integer"}},
      {DType::kF16, [](Tensor x) { return x * 1e5; }, {"mul(f16[4])", "overflows f16 to infinity"}},
      {DType::kBF16, [](Tensor x) { return x + 1e39; }, {"add(bf16[4])", "overflows bf16"}},
      {DType::kF32, [](Tensor x) { return x + 1e39; }, {"add(f32[4])", "overflows f32"}},
      {DType::kI32, [](Tensor x) { return x + scalar(0.5, DType::kI32); }, {"scalar(0.5, i32)", "not an integer"}},
      {DType::kBool, [](Tensor x) { return select(x, full(Shape(DType::kI8, {4}), 300), full(Shape(DType::kI8, {4}), 0)); },
       {"full(i8[4], 300)", "outside the range of i8"}},
      {DType::kBool, [](Tensor x) { return select(x, x, scalar(2, DType::kBool)); }, {"scalar(2, bool)", "0 or 1"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.needles[0]);
    auto exe = compile_fn(cpu(), c.f, Shape(c.d, {4}));
    ASSERT_FALSE(exe.ok());
    EXPECT_EQ(exe.status().code(), ErrorCode::kTraceError);
    for (const char* n : c.needles)
      EXPECT_NE(exe.status().message().find(n), std::string::npos) << "missing '" << n << "' in "
                                                                    << exe.status().message();
  }
  // Values that fit are accepted: integral scalars on integers, any finite
  // value that rounds into range on floats, infinities and NaN as given.
  for (auto [d, v] : std::vector<std::pair<DType, double>>{{DType::kI32, -2147483648.0}, {DType::kU8, 255},
                                                          {DType::kF16, 65504}, {DType::kF32, 0.1},
                                                          {DType::kF32, INFINITY}, {DType::kF16, NAN}}) {
    EXPECT_TRUE(compile_fn(cpu(), [v](Tensor x) { return x + v; }, Shape(d, {4})).ok())
        << dtype_name(d) << " + " << v;
  }
}

TEST(Elementwise, ScalarOperators) {
  for (DType d : {DType::kF32, DType::kF16, DType::kF64, DType::kI32, DType::kU8}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const Shape s(d, {12});
    Vals x = is_float(d) ? quantize(d, rand_vals(12, 0.5, 6, 9))
                         : Vals{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, is_unsigned_int(d) ? 250.0L : -9};
    if (is_float(d))
      for (size_t i = 0; i < x.size(); i += 3) x[i] = -x[i];
    // Scalars take the tensor's dtype: 2.5 and 0.1 for floats (0.1 rounds to
    // the dtype), integral values for integers (others are refused, below).
    const double s25 = is_float(d) ? 2.5 : 2.0, s01 = is_float(d) ? 0.1 : 0.0;
    Outs o = run([&](Tensor x) {
      return std::vector<Tensor>{x + s25, x - s25, x * 3, x / 2, s25 + x, 7 - x, 3 * x, 7 / x, x * s01, -x, x + 200};
    }, {x}, s);
    const Val c25 = quantize(d, s25), c01 = quantize(d, s01);
    auto op = [&](Val v) { return is_float(d) ? quantize(d, v) : wrap(d, v); };
    auto idiv = [&](Val a, Val b) { return is_float(d) ? quantize(d, a / b) : std::trunc(a / b); };
    std::vector<Vals> want(11);
    for (Val v : x) {
      want[0].push_back(op(v + c25));
      want[1].push_back(op(v - c25));
      want[2].push_back(op(v * 3));
      want[3].push_back(idiv(v, 2));
      want[4].push_back(op(c25 + v));
      want[5].push_back(op(7 - v));
      want[6].push_back(op(3 * v));
      want[7].push_back(idiv(7, v));
      want[8].push_back(op(v * c01));
      want[9].push_back(op(-v));
      want[10].push_back(op(v + 200));
    }
    // Tolerance: rtol = eps(dtype) for floats (one rounding), exact for integers.
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ(o.shapes[k], s) << k;
      EXPECT_TRUE(close(o.values[k], want[k], d, is_float(d) ? eps(d) : 0)) << k;
    }
  }
}

// ------------------------------------------------------------ broadcasting

struct BroadcastCase {
  Shape a, b;
  Shape out;                      // expected result shape (dims + tags)
  std::vector<int> amap, bmap;    // operand axis -> result axis
};

// out[i] = op(a[...], b[...]) through the axis maps; size-1 operand axes read index 0.
template <class Op>
Vals broadcast_ref(const BroadcastCase& c, const Vals& a, const Vals& b, Op op) {
  std::vector<int64_t> od(c.out.dims().begin(), c.out.dims().end());
  auto index = [&](const Shape& s, const std::vector<int>& map, const std::vector<int64_t>& oi) {
    int64_t lin = 0;
    for (int i = 0; i < s.rank(); ++i) lin = lin * s.dim(i) + (s.dim(i) == 1 ? 0 : oi[map[i]]);
    return lin;
  };
  Vals r;
  for (int64_t l = 0; l < count_of(od); ++l) {
    auto oi = unravel(l, od);
    r.push_back(op(a[index(c.a, c.amap, oi)], b[index(c.b, c.bmap, oi)]));
  }
  return r;
}

TEST(Elementwise, Broadcasting) {
  const DType f = DType::kF32;
  const std::vector<BroadcastCase> cases = {
      // rank-0 on either side
      {Shape(f, {2, 3}), Shape(f), Shape(f, {2, 3}), {0, 1}, {}},
      {Shape(f), Shape(f, {2, 3}), Shape(f, {2, 3}), {}, {0, 1}},
      {Shape(f), Shape(f), Shape(f), {}, {}},
      // size-1 axes on either side
      {Shape(f, {3, 1}), Shape(f, {1, 4}), Shape(f, {3, 4}), {0, 1}, {0, 1}},
      {Shape(f, {1}), Shape(f, {5}), Shape(f, {5}), {0}, {0}},
      {Shape(f, {2, 16}), Shape(f, {2, 1}), Shape(f, {2, 16}), {0, 1}, {0, 1}},
      // right-aligned NumPy broadcasting of different ranks
      {Shape(f, {2, 1, 4}), Shape(f, {3, 1}), Shape(f, {2, 3, 4}), {0, 1, 2}, {1, 2}},
      {Shape(f, {4}), Shape(f, {2, 3, 4}), Shape(f, {2, 3, 4}), {2}, {0, 1, 2}},
      {Shape(f, {5, 1, 1, 3}), Shape(f, {1, 2, 1}), Shape(f, {5, 1, 2, 3}), {0, 1, 2, 3}, {1, 2, 3}},
      // partially tagged: right-aligned, tags carried over
      {Shape(f, {2, 3}, {"b", Tag()}), Shape(f, {3}), Shape(f, {2, 3}, {"b", Tag()}), {0, 1}, {1}},
      {Shape(f, {2, 3}), Shape(f, {3}, {"d"}), Shape(f, {2, 3}, {Tag(), "d"}), {0, 1}, {1}},
      // fully tagged, one operand's tags a subset of the other's: the larger
      // operand's axis order, whichever side it is on
      {Shape(f, {2, 3}, {"b", "d"}), Shape(f, {3}, {"d"}), Shape(f, {2, 3}, {"b", "d"}), {0, 1}, {1}},
      {Shape(f, {3}, {"d"}), Shape(f, {2, 3}, {"b", "d"}), Shape(f, {2, 3}, {"b", "d"}), {1}, {0, 1}},
      {Shape(f, {2, 1}, {"b", "d"}), Shape(f, {3}, {"d"}), Shape(f, {2, 3}, {"b", "d"}), {0, 1}, {1}},
      {Shape(f, {4, 2}, {"c", "a"}), Shape(f, {2, 3, 4}, {"a", "b", "c"}), Shape(f, {2, 3, 4}, {"a", "b", "c"}),
       {2, 0}, {0, 1, 2}},
      {Shape(f, {3, 2}, {"d", "b"}), Shape(f, {2, 3}, {"b", "d"}), Shape(f, {3, 2}, {"d", "b"}), {0, 1}, {1, 0}},
      // neither a subset: lhs axes, then the rhs-only axes
      {Shape(f, {2}, {"a"}), Shape(f, {3}, {"b"}), Shape(f, {2, 3}, {"a", "b"}), {0}, {1}},
      {Shape(f, {2, 3}, {"b", "s"}), Shape(f, {3, 4}, {"s", "d"}), Shape(f, {2, 3, 4}, {"b", "s", "d"}), {0, 1},
       {1, 2}},
      {Shape(f, {2}, {"a"}), Shape(f), Shape(f, {2}, {"a"}), {0}, {}},
  };
  for (const BroadcastCase& c : cases) {
    SCOPED_TRACE(c.a.to_string() + " - " + c.b.to_string());
    Vals a = quantize(f, rand_vals(static_cast<size_t>(c.a.count()), -5, 5, 11));
    Vals b = quantize(f, rand_vals(static_cast<size_t>(c.b.count()), -5, 5, 12));
    Outs o = run([](Tensor a, Tensor b) { return a - b; }, {a, b}, c.a, c.b);
    EXPECT_EQ(o.shapes[0], c.out);
    EXPECT_TRUE(close(o.values[0], quantize(f, broadcast_ref(c, a, b, std::minus<Val>())), f, eps(f)));  // rtol eps(f32)
  }
}

TEST(Elementwise, BroadcastingInts) {
  // Tolerance: exact. u8 (wrapping) with a rank-0 operand and size-1 axes; i64 by tag.
  const DType u = DType::kU8, i = DType::kI64;
  const BroadcastCase c1{Shape(u, {3, 2}), Shape(u), Shape(u, {3, 2}), {0, 1}, {}};
  const BroadcastCase c2{Shape(u, {3, 2}), Shape(u, {1, 2}), Shape(u, {3, 2}), {0, 1}, {0, 1}};
  const BroadcastCase c3{Shape(i, {2}, {"a"}), Shape(i, {3}, {"b"}), Shape(i, {2, 3}, {"a", "b"}), {0}, {1}};
  const Vals a = {250, 1, 2, 3, 4, 128}, b = {10}, c = {2, 3};
  Outs o = run([](Tensor a, Tensor b, Tensor c) { return std::vector<Tensor>{a + b, a * c}; }, {a, b, c}, c1.a, c1.b,
               c2.b);
  EXPECT_EQ(o.shapes[0], c1.out);
  EXPECT_EQ(o.shapes[1], c2.out);
  EXPECT_TRUE(close(o.values[0], broadcast_ref(c1, a, b, [&](Val x, Val y) { return wrap(u, x + y); }), u));
  EXPECT_TRUE(close(o.values[1], broadcast_ref(c2, a, c, [&](Val x, Val y) { return wrap(u, x * y); }), u));
  const Vals x = {-5, 7}, y = {1, -9, 3};
  Outs p = run([](Tensor a, Tensor b) { return maximum(a, b); }, {x, y}, c3.a, c3.b);
  EXPECT_EQ(p.shapes[0], c3.out);
  EXPECT_TRUE(close(p.values[0], broadcast_ref(c3, x, y, [](Val x, Val y) { return std::max(x, y); }), i));
}

}  // namespace
}  // namespace radix

namespace radix {
namespace {

// f64 -> bf16 must round once: 1 + 2^-8 + 2^-30 lies just above the midpoint
// of bf16 neighbours 1 and 1 + 2^-7, so it rounds up; rounding through f32
// first would land exactly on the midpoint and round to even (down).
// The README's promise: a fused chain of f16 / bf16 elementwise ops computes
// in f32 and rounds once. a * b - 1 with a = 1 + u, b = 1 + 3u (u = 2^-10 for
// f16, 2^-7 for bf16): rounding a * b to the dtype first loses the 3u^2 term.
TEST(Elementwise, HalfChainsRoundOnce) {
  for (DType d : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const Val u = d == DType::kF16 ? 1.0L / 1024 : 1.0L / 128;
    const Shape s(d, {16});
    Outs o = run([](Tensor a, Tensor b) { return a * b - 1.0; }, {Vals(16, 1 + u), Vals(16, 1 + 3 * u)}, s, s);
    const Val once = quantize(d, (1 + u) * (1 + 3 * u) - 1);          // f32 (exact here) then one rounding
    const Val per_op = quantize(d, quantize(d, (1 + u) * (1 + 3 * u)) - 1);
    ASSERT_NE(once, per_op);  // the case tells the two apart
    EXPECT_TRUE(close(o.values[0], Vals(16, once), d, 0));  // exact
  }
}

TEST(Elementwise, ConvertF64ToBF16RoundsOnce) {
  const double above_tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  const double below_tie = 1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -30);
  for (bool vec : {false, true}) {
    CompileFnOptions o;
    o.compile.codegen.cpu.vectorize = vec;
    Shape s(DType::kF64, {4});
    auto exe = testing::must(compile_fn(testing::cpu(), o, [](Tensor x) { return convert(x, DType::kBF16); }, s));
    Buffer in = testing::must(testing::cpu().buffer(s, std::vector<double>{above_tie, below_tie, -above_tie, 3.0}));
    std::vector<uint16_t> got = testing::must(testing::must(exe.call(in)).to_host<uint16_t>());
    // Reference: the nearest bf16 values, 1 + 2^-7 = 0x3F81 and 1 = 0x3F80.
    EXPECT_EQ(got[0], 0x3F81) << "vectorize=" << vec;
    EXPECT_EQ(got[1], 0x3F80) << "vectorize=" << vec;
    EXPECT_EQ(got[2], 0xBF81) << "vectorize=" << vec;
    EXPECT_EQ(bf16_to_float(got[3]), 3.0f);
  }
}

}  // namespace
}  // namespace radix

namespace radix {
namespace {

// Integer division by zero and INT_MIN / -1 trap on x86 if emitted naively;
// Radix defines them (XLA's rule): x / 0 = all bits set, INT_MIN / -1 = INT_MIN.
template <class T>
void check_int_div_edge_cases(DType d) {
  SCOPED_TRACE(std::string(dtype_name(d)));
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  std::vector<T> x, y;
  for (T a : {T(7), T(0), lo, hi, T(lo + 1)})
    for (T b : {T(0), T(3), T(-1), T(1), hi}) {
      x.push_back(a);
      y.push_back(b);
    }
  std::vector<T> want;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] == 0) want.push_back(static_cast<T>(~T(0)));
    else if (std::is_signed_v<T> && x[i] == lo && y[i] == T(-1)) want.push_back(lo);
    else want.push_back(static_cast<T>(x[i] / y[i]));
  }
  for (bool vec : {false, true}) {
    CompileFnOptions o;
    o.compile.codegen.cpu.vectorize = vec;
    Shape s(d, {static_cast<int64_t>(x.size())});
    auto exe = testing::must(compile_fn(testing::cpu(), o, [](Tensor a, Tensor b) { return a / b; }, s, s));
    Buffer out = testing::must(exe.call(testing::must(testing::cpu().buffer(s, x)), testing::must(testing::cpu().buffer(s, y))));
    // Tolerance: exact.
    EXPECT_EQ(testing::must(out.to_host<T>()), want) << "vectorize=" << vec;
  }
}

TEST(Elementwise, IntegerDivisionNeverTraps) {
  check_int_div_edge_cases<int8_t>(DType::kI8);
  check_int_div_edge_cases<int32_t>(DType::kI32);
  check_int_div_edge_cases<int64_t>(DType::kI64);
  check_int_div_edge_cases<uint16_t>(DType::kU16);
  check_int_div_edge_cases<uint64_t>(DType::kU64);
}

}  // namespace
}  // namespace radix

namespace radix {
namespace {

// Float -> int saturates: NaN -> 0, beyond the range -> min / max.
template <class T>
T saturate_ref(double x) {
  if (std::isnan(x)) return 0;
  if (x <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (x >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(x);  // in range: truncation toward zero
}

template <class T>
void check_saturation(const std::vector<float>& xs) {
  SCOPED_TRACE(std::string(dtype_name(dtype_v<T>)));
  std::vector<T> want;
  for (float x : xs) want.push_back(saturate_ref<T>(x));
  for (bool vec : {false, true}) {
    CompileFnOptions o;
    o.compile.codegen.cpu.vectorize = vec;
    Shape s(DType::kF32, {static_cast<int64_t>(xs.size())});
    auto exe = testing::must(compile_fn(testing::cpu(), o, [](Tensor x) { return convert(x, dtype_v<T>); }, s));
    Buffer out = testing::must(exe.call(testing::must(testing::cpu().buffer(s, xs))));
    // Tolerance: exact.
    EXPECT_EQ(testing::must(out.to_host<T>()), want) << "vectorize=" << vec;
  }
}

TEST(Elementwise, FloatToIntSaturates) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs = {3.7f, -3.7f, 1e10f, -1e10f, NAN, inf, -inf, 300.f, -129.f, 255.9f,
                                 -0.5f, 2147483520.f, -2147483648.f, 9.3e18f, -9.3e18f, 0.f};
  check_saturation<int8_t>(xs);
  check_saturation<uint8_t>(xs);
  check_saturation<int32_t>(xs);
  check_saturation<uint32_t>(xs);
  check_saturation<int64_t>(xs);
  check_saturation<uint64_t>(xs);
}

}  // namespace
}  // namespace radix
