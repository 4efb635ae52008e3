// The random ops: the Philox 4x32-10 stream against the Random123 known
// answers and a plain C++ reference written here, the distributions against
// references built from that stream and against their moments, stream
// identity across schedules, and the shape-inference errors.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

// ---------------------------------------------------------------- reference

using Words = std::array<uint32_t, 4>;

// Philox 4x32-10 as in the Random123 paper: ten rounds of two 32x32->64
// multiplies, the key bumped by the Weyl constants between rounds.
Words ref_philox(Words c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k1, uint32_t(p0)};
  }
  return c;
}

// The block of element i of a draw from `state` (the layout in ops_random.h).
Words ref_block(const Words& state, uint64_t i) {
  const uint64_t c = ((uint64_t{state[3]} << 32) | state[2]) + i;
  return ref_philox({uint32_t(c), uint32_t(c >> 32), 0, 0}, state[0], state[1]);
}
uint64_t join(uint32_t lo, uint32_t hi) { return (uint64_t{hi} << 32) | lo; }

// k * 2^-m from the top m bits (+ 2^-(m+1) for the open interval).
double ref_unit32(uint32_t w, int m, bool open) {
  return std::ldexp(double(w >> (32 - m)), -m) + (open ? std::ldexp(1.0, -(m + 1)) : 0.0);
}
double ref_unit64(uint32_t lo, uint32_t hi, bool open) {
  return std::ldexp(double(join(lo, hi) >> 12), -52) + (open ? 0x1p-53 : 0.0);
}

Vals state_vals(const Words& s) { return Vals(s.begin(), s.end()); }
const Shape kState = rng_state_shape();
constexpr DType kFloats[] = {DType::kF16, DType::kBF16, DType::kF32, DType::kF64};

// The compile configurations whose streams must agree: the host schedule,
// plain loops, and the three schedule ISAs.
struct Config {
  const char* name;
  bool vectorize;
  VectorIsa isa;
};
const Config kConfigs[] = {{"host", true, {}},
                           {"scalar loops", false, {}},
                           {"sse", true, {4, 16}},
                           {"avx2", true, {8, 16}},
                           {"avx512", true, {16, 32}}};
struct UseConfig {
  explicit UseConfig(const Config& c) {
    g_opts.compile.codegen.cpu.vectorize = c.vectorize;
    g_opts.compile.codegen.cpu.schedule_isa = c.isa;
  }
  ~UseConfig() {
    g_opts.compile.codegen.cpu.vectorize = true;
    g_opts.compile.codegen.cpu.schedule_isa = {};
  }
};

// Runs fn(state) and returns its outputs' values.
template <class Fn>
std::vector<Vals> draw_run(Fn fn, const Words& state) {
  return run(fn, {state_vals(state)}, kState).values;
}

double mean_of(const Vals& v) {
  long double s = 0;
  for (Val x : v) s += x;
  return double(s / v.size());
}
double var_of(const Vals& v) {
  const double m = mean_of(v);
  long double s = 0;
  for (Val x : v) s += (x - m) * (x - m);
  return double(s / (v.size() - 1));
}

// ---------------------------------------------------------------- Philox

TEST(Philox, ReferenceMatchesKnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  EXPECT_EQ(ref_philox({0, 0, 0, 0}, 0, 0), (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(ref_philox({~0u, ~0u, ~0u, ~0u}, ~0u, ~0u), (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(ref_philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, TracedBlockFunctionMatchesOnEverySchedule) {
  struct Kat {
    Words ctr;
    uint32_t k0, k1;
    Words want;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, 0, 0, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{~0u, ~0u, ~0u, ~0u}, ~0u, ~0u, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0,
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  // Plus 32 seeded random counters under one key per case: u32[8, 4, 4].
  const Shape cs(DType::kU32, {8, 4, 4}), ks(DType::kU32, {2});
  std::mt19937 rng(7);
  Vals ctr(static_cast<size_t>(cs.count()));
  for (Val& v : ctr) v = rng();
  for (const Config& c : kConfigs) {
    SCOPED_TRACE(c.name);
    UseConfig use(c);
    for (const Kat& k : kats) {
      Outs o = run([](Tensor c, Tensor k) { return philox4x32(c, k); }, {state_vals(k.ctr), {Val(k.k0), Val(k.k1)}},
                   Shape(DType::kU32, {1, 4}), ks);
      EXPECT_EQ(o.values[0], state_vals(k.want));  // exact
    }
    const uint32_t k0 = 0xdeadbeef, k1 = 0x01234567;
    Outs o = run([](Tensor c, Tensor k) { return philox4x32(c, k); }, {ctr, {Val(k0), Val(k1)}}, cs, ks);
    ASSERT_EQ(o.shapes[0], cs);
    for (size_t row = 0; row < ctr.size() / 4; ++row) {
      Words w;
      for (size_t j = 0; j < 4; ++j) w[j] = uint32_t(ctr[4 * row + j]);
      const Words want = ref_philox(w, k0, k1);
      for (size_t j = 0; j < 4; ++j) ASSERT_EQ(o.values[0][4 * row + j], want[j]) << "row " << row;  // exact
    }
  }
}

// ---------------------------------------------------------------- state and raw bits

TEST(RandomBits, MatchReferenceStreamAndAdvanceTheCounter) {
  // A counter just below 2^32 so the draw carries into counter_hi.
  const Words state = {0x12345678, 0x9abcdef0, 0xfffffff0u, 7};
  const Shape s32(DType::kU32, {8, 16}), s64(DType::kU64, {3, 5}), s8(DType::kU8, {2, 7}), s16(DType::kI16, {9});
  std::vector<Vals> o = draw_run([&](Tensor s) {
    RandomResult<> a = random_bits(s, s32), b = random_bits(a.state, s64), c = random_bits(b.state, s8),
                   d = random_bits(c.state, s16);
    return std::vector<Tensor>{a.samples, b.samples, c.samples, d.samples, a.state, d.state};
  }, state);
  uint64_t offset = 0;
  auto check = [&](const Vals& got, int64_t n, auto want_of) {
    ASSERT_EQ(got.size(), size_t(n));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[size_t(i)], want_of(ref_block(state, offset + i))) << i;  // exact
    offset += uint64_t(n);
  };
  check(o[0], s32.count(), [](const Words& x) { return Val(x[0]); });
  check(o[1], s64.count(), [](const Words& x) { return Val(join(x[0], x[1])); });
  check(o[2], s8.count(), [](const Words& x) { return Val(uint8_t(x[0])); });
  check(o[3], s16.count(), [](const Words& x) { return Val(int16_t(x[0])); });
  const uint64_t c0 = join(state[2], state[3]);
  EXPECT_EQ(o[4], (Vals{Val(state[0]), Val(state[1]), Val(uint32_t(c0 + 128)), Val(uint32_t((c0 + 128) >> 32))}));
  EXPECT_EQ(o[5], (Vals{Val(state[0]), Val(state[1]), Val(uint32_t(c0 + offset)), Val(uint32_t((c0 + offset) >> 32))}));
}

TEST(RandomBits, EmptyAndScalarDraws) {
  // An empty draw leaves the counter alone; a rank-0 draw takes one block.
  const Words state = rng_state_from_seed(4);
  std::vector<Vals> o = draw_run([](Tensor s) {
    RandomResult<> e = random_bits(s, Shape(DType::kU32, {0, 3}));
    RandomResult<> one = uniform(e.state, Shape(DType::kF32));
    return std::vector<Tensor>{e.samples, e.state, one.samples, one.state};
  }, state);
  EXPECT_TRUE(o[0].empty());
  EXPECT_EQ(o[1], state_vals(state));
  ASSERT_EQ(o[2].size(), 1u);
  EXPECT_EQ(double(o[2][0]), ref_unit32(ref_block(state, 0)[0], 23, false));  // exact
  EXPECT_EQ(o[3], (Vals{4, 0, 1, 0}));
}

TEST(RandomState, SeedsAndAdvancing) {
  EXPECT_EQ(rng_state_from_seed(0x0123456789abcdefull), (Words{0x89abcdef, 0x01234567, 0, 0}));
  const Shape s(DType::kU32, {64});
  auto bits = [&](const Words& st) { return draw_run([&](Tensor t) { return random_bits(t, s).samples; }, st)[0]; };
  const Vals a = bits(rng_state_from_seed(1)), a2 = bits(rng_state_from_seed(1)), b = bits(rng_state_from_seed(2));
  EXPECT_EQ(a, a2);  // same seed, same stream
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LE(same, 1);  // different seeds: P(any of 64 u32 pairs equal) ~ 1.5e-8

  // Threading the state gives fresh numbers: the second draw is the stream at
  // offset 64, and shares no value with the first.
  std::vector<Vals> o = draw_run([&](Tensor t) {
    RandomResult<> first = random_bits(t, s);
    return std::vector<Tensor>{first.samples, random_bits(first.state, s).samples};
  }, rng_state_from_seed(1));
  EXPECT_EQ(o[0], a);
  for (size_t i = 0; i < o[1].size(); ++i) {
    EXPECT_EQ(o[1][i], ref_block(rng_state_from_seed(1), 64 + i)[0]);
    EXPECT_EQ(std::count(a.begin(), a.end(), o[1][i]), 0);
  }

  // Traced seeding, from a constant and from a run-time u64 / i32 seed.
  const uint64_t seed = 0xfedcba9876543210ull;
  Outs t = run([&](Tensor s64, Tensor s32) {
    return std::vector<Tensor>{rng_from_seed(seed), rng_from_seed(s64), rng_from_seed(s32)};
  }, {{Val(seed)}, {-5}}, Shape(DType::kU64), Shape(DType::kI32));
  EXPECT_EQ(t.values[0], state_vals(rng_state_from_seed(seed)));
  EXPECT_EQ(t.values[1], state_vals(rng_state_from_seed(seed)));
  EXPECT_EQ(t.values[2], state_vals(rng_state_from_seed(uint64_t(int64_t{-5}))));  // sign-extended
  EXPECT_EQ(t.shapes[0], kState);
}

TEST(RandomState, CompiledFunctionReturnsTheDrawStruct) {
  const Shape s(DType::kF32, {4, 8});
  auto exe = must(compile_fn(cpu(), [&](Tensor st) { return uniform(st, s); }, kState));
  RandomResult<Buffer> r = must(exe.call(must(cpu().buffer(kState, rng_state_from_seed(3)))));
  EXPECT_EQ(r.samples.shape(), s);
  EXPECT_EQ(must(r.state.to_host<uint32_t>()), (std::vector<uint32_t>{3, 0, 32, 0}));
}

// ---------------------------------------------------------------- schedules

TEST(RandomSchedules, StreamsAreIdenticalOnEverySchedule) {
  auto draws = [](Tensor s) {
    std::vector<Tensor> out;
    auto take = [&](RandomResult<> r) {
      out.push_back(r.samples);
      s = r.state;
    };
    const std::vector<int64_t> dims = {4, 64};
    auto sh = [&](DType d) { return shape_of(d, dims); };
    take(random_bits(s, sh(DType::kU32)));
    take(random_bits(s, sh(DType::kU64)));
    take(uniform(s, sh(DType::kF32), -2, 3));
    take(uniform(s, sh(DType::kF64)));
    take(uniform(s, sh(DType::kF16)));
    take(uniform(s, sh(DType::kBF16), -1, 1));
    take(uniform_int(s, sh(DType::kI32), -7, 100));
    take(uniform_int(s, sh(DType::kU64), 0, std::numeric_limits<int64_t>::max()));
    take(uniform_int(s, sh(DType::kU8), 0, 256));
    take(normal(s, sh(DType::kF32)));
    take(normal(s, sh(DType::kF64), 1, 2));
    take(gumbel(s, sh(DType::kF32)));
    take(bernoulli(s, 0.25, sh(DType::kBool)));
    Tensor logits = broadcast_to(convert(iota(16, DType::kI32), DType::kF32) * 0.25, Shape(DType::kF32, {32, 16}));
    take(categorical(s, logits, 1));
    out.push_back(s);
    return out;
  };
  std::vector<Vals> want;
  for (const Config& c : kConfigs) {
    SCOPED_TRACE(c.name);
    UseConfig use(c);
    std::vector<Vals> got = draw_run(draws, rng_state_from_seed(11));
    if (want.empty()) want = got;
    else
      for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(got[k], want[k]) << "output " << k;  // bit-exact
  }
}

TEST(RandomSchedules, DrawsAreVectorized) {
  // A draw is one all-parallel linalg.generic, so the schedule vectorizes it:
  // the scheduled module computes log / cos on vectors.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "radix_ops_random_dump";
  std::filesystem::remove_all(dir);
  CompileFnOptions o;
  o.compile.diagnostics.dump = {"schedule"};
  o.compile.diagnostics.dump_dir = dir.string();
  auto exe = must(compile_fn(cpu(), o, [](Tensor s) { return normal(s, Shape(DType::kF32, {8, 64})).samples; }, kState));
  EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
  std::string text;
  text = testing::all_stage_dumps(dir);
  std::filesystem::remove_all(dir);
  bool log_vec = false, cos_vec = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    log_vec |= line.find("math.log") != std::string::npos && line.find(": vector<") != std::string::npos;
    cos_vec |= line.find("math.cos") != std::string::npos && line.find(": vector<") != std::string::npos;
  }
  EXPECT_TRUE(log_vec && cos_vec) << text.substr(0, 4000);
}

TEST(RandomSchedules, DrawsFusedIntoReductions) {
  // A draw feeding a reduction is fused into it; its per-element counters
  // must survive the reduction's tiling. Row sums (innermost reduction) and
  // column maxima of U[0, 1) f32[16, 64] against the reference stream.
  const Words state = rng_state_from_seed(31);
  const Shape s(DType::kF32, {16, 64});
  std::vector<double> row_sum(16), col_max(64);
  for (size_t i = 0; i < 16 * 64; ++i) {
    const double u = ref_unit32(ref_block(state, i)[0], 23, false);
    row_sum[i / 64] += u;
    col_max[i % 64] = std::max(col_max[i % 64], u);
  }
  for (const Config& c : kConfigs) {
    SCOPED_TRACE(c.name);
    UseConfig use(c);
    std::vector<Vals> o = draw_run([&](Tensor t) {
      Tensor u = uniform(t, s).samples;
      return std::vector<Tensor>{reduce_sum(u, {1}), reduce_max(u, {0})};
    }, state);
    // Sums: 64 terms < 1 reassociated in f32, error < 64 * 64 * 2^-24 < 3e-4.
    // Maxima: exact.
    for (size_t r = 0; r < 16; ++r) EXPECT_NEAR(double(o[0][r]), row_sum[r], 3e-4) << r;
    for (size_t k = 0; k < 64; ++k) EXPECT_EQ(double(o[1][k]), col_max[k]) << k;
  }
}

// ---------------------------------------------------------------- uniform floats

// The largest value of float dtype d below v (v > 0 here).
double ref_below(DType d, double v) {
  if (d == DType::kF64) return std::nextafter(v, 0.0);
  if (d == DType::kF32) return std::nextafter(float(v), 0.0f);
  if (d == DType::kF16) return f16_to_float(uint16_t(float_to_f16(float(v)) - 1));
  return bf16_to_float(uint16_t(float_to_bf16(float(v)) - 1));
}

TEST(Uniform, MatchesReferenceAndStaysInRange) {
  const Words state = rng_state_from_seed(21);
  const Shape s32(DType::kF32, {16, 32});
  const std::pair<double, double> ranges[] = {{0, 1}, {-2, 3}, {0.1, 0.7}, {100, 104}};
  for (DType d : kFloats)
    for (auto [lo, hi] : ranges) {
      const Shape s = s32.with_dtype(d);
      SCOPED_TRACE(s.to_string() + " [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
      const Vals got = draw_run([&](Tensor t) { return uniform(t, s, lo, hi).samples; }, state)[0];
      const double lo_d = double(quantize(d, lo)), hi_d = double(quantize(d, hi));
      const int m = d == DType::kF16 ? 10 : d == DType::kBF16 ? 7 : 23;
      for (size_t i = 0; i < got.size(); ++i) {
        const Words x = ref_block(state, i);
        double v;
        if (d == DType::kF64) {
          v = lo_d + (hi_d - lo_d) * ref_unit64(x[0], x[1], false);
        } else {  // f32 arithmetic, then one rounding to the dtype
          v = double(quantize(d, float(lo_d) + float(hi_d - lo_d) * float(ref_unit32(x[0], m, false))));
        }
        v = std::min(std::max(v, lo_d), ref_below(d, hi_d));
        ASSERT_EQ(double(got[i]), v) << i;  // exact: the same operations on the same bits
        ASSERT_TRUE(got[i] >= lo_d && got[i] < hi_d) << got[i];
      }
    }
}

TEST(Uniform, Moments) {
  // 2^16 samples of U[0, 1): mean 1/2 with standard error sqrt(1/12 / n) =
  // 1.13e-3; variance 1/12 with standard error sqrt((1/80 - 1/144) / n) =
  // 2.9e-4. Bounds: 5 standard errors.
  for (DType d : {DType::kF32, DType::kF64}) {
    const Vals v = draw_run([&](Tensor t) { return uniform(t, Shape(d, {256, 256})).samples; },
                            rng_state_from_seed(5))[0];
    EXPECT_NEAR(mean_of(v), 0.5, 5 * 1.13e-3) << dtype_name(d);
    EXPECT_NEAR(var_of(v), 1.0 / 12, 5 * 2.9e-4) << dtype_name(d);
  }
}

// ---------------------------------------------------------------- uniform integers

TEST(UniformInt, MatchesReferenceOverWholeRanges) {
  const Words state = rng_state_from_seed(77);
  struct Case {
    DType d;
    int64_t lo, hi;
  };
  const int64_t i64_max = std::numeric_limits<int64_t>::max(), i64_min = std::numeric_limits<int64_t>::min();
  const Case cases[] = {{DType::kI8, -128, 128},     {DType::kU8, 3, 10},        {DType::kI16, -1000, 1000},
                        {DType::kI32, -7, 100},      {DType::kI32, INT32_MIN, INT32_MAX}, {DType::kU32, 0, 4294967296},
                        {DType::kI64, -5, 5},        {DType::kI64, i64_min, i64_max}, {DType::kU64, 1, i64_max}};
  for (const Case& c : cases) {
    const Shape s(c.d, {8, 32});
    SCOPED_TRACE(s.to_string() + " [" + std::to_string(c.lo) + ", " + std::to_string(c.hi) + ")");
    const Vals got = draw_run([&](Tensor t) { return uniform_int(t, s, c.lo, c.hi).samples; }, state)[0];
    const unsigned __int128 span = static_cast<unsigned __int128>(uint64_t(c.hi) - uint64_t(c.lo));
    for (size_t i = 0; i < got.size(); ++i) {
      const Words x = ref_block(state, i);
      uint64_t off;
      if (dtype_bits(c.d) <= 32) {
        off = uint64_t((static_cast<unsigned __int128>(join(x[0], x[1])) * span) >> 64);  // floor(x * span / 2^64)
      } else {
        // floor((xh * 2^64 + xl) * span / 2^128), exact with 128-bit pieces.
        const unsigned __int128 low = (static_cast<unsigned __int128>(join(x[0], x[1])) * span) >> 64;
        off = uint64_t((static_cast<unsigned __int128>(join(x[2], x[3])) * span + low) >> 64);
      }
      const Val want = wrap(c.d, Val(static_cast<__int128>(c.lo) + off));
      ASSERT_EQ(got[i], want) << i;  // exact
      ASSERT_TRUE(got[i] >= c.lo && got[i] < Val(c.hi));
    }
  }
}

TEST(UniformInt, ChiSquare) {
  // 2^16 draws in [lo, lo + 10) for a 32-bit and a 64-bit dtype (the two
  // methods): Pearson's chi-square against uniform counts, 9 degrees of
  // freedom, must stay below 27.88 (the 0.999 quantile).
  for (auto [d, lo] : {std::pair{DType::kI32, int64_t{-3}}, std::pair{DType::kU64, int64_t{1} << 40}}) {
    const Vals v = draw_run([&](Tensor t) { return uniform_int(t, Shape(d, {256, 256}), lo, lo + 10).samples; },
                            rng_state_from_seed(9))[0];
    std::vector<double> counts(10);
    for (Val x : v) counts.at(size_t(x - lo)) += 1;
    const double e = v.size() / 10.0;
    double chi2 = 0;
    for (double c : counts) chi2 += (c - e) * (c - e) / e;
    EXPECT_LT(chi2, 27.88) << dtype_name(d);
  }
}

// ---------------------------------------------------------------- normal and gumbel

TEST(Normal, MatchesBoxMullerReference) {
  const Words state = rng_state_from_seed(13);
  for (DType d : {DType::kF32, DType::kF64}) {
    const Shape s(d, {16, 32});
    const Vals got = draw_run([&](Tensor t) { return normal(t, s, 0.5, 3).samples; }, state)[0];
    for (size_t i = 0; i < got.size(); ++i) {
      const Words x = ref_block(state, i);
      double z;
      if (d == DType::kF64) {
        z = std::sqrt(-2 * std::log(ref_unit64(x[0], x[1], true))) * std::cos(2 * M_PI * ref_unit64(x[2], x[3], false));
      } else {  // the angle as the f32 product the op computes
        const float theta = float(2 * M_PI) * float(ref_unit32(x[1], 23, false));
        z = std::sqrt(-2 * std::log(ref_unit32(x[0], 23, true))) * std::cos(double(theta));
      }
      // Tolerance: f32 within 3e-5 (~4 ulp of the largest |3z + 0.5| ~ 18;
      // the op uses a <= 2 ulp log polynomial and f32 libm cos); f64 1e-12.
      ASSERT_NEAR(double(got[i]), 0.5 + 3 * z, d == DType::kF64 ? 1e-12 : 3e-5) << i;
    }
  }
}

TEST(Normal, Moments) {
  // 2^16 samples of N(0, 1): the mean's standard error is 1/256 = 3.9e-3, the
  // variance's sqrt(2 / n) = 5.5e-3; bounds: 5 standard errors. The half
  // dtypes (computed in f32, rounded once) are held to the same bounds.
  for (DType d : kFloats) {
    const Vals v = draw_run([&](Tensor t) { return normal(t, Shape(d, {256, 256})).samples; },
                            rng_state_from_seed(6))[0];
    EXPECT_NEAR(mean_of(v), 0.0, 5 * 3.9e-3) << dtype_name(d);
    EXPECT_NEAR(var_of(v), 1.0, 5 * 5.5e-3) << dtype_name(d);
  }
}

TEST(Gumbel, MatchesReferenceAndMoments) {
  const Words state = rng_state_from_seed(17);
  for (DType d : {DType::kF32, DType::kF64}) {
    const Vals got = draw_run([&](Tensor t) { return gumbel(t, Shape(d, {256, 256})).samples; }, state)[0];
    for (size_t i = 0; i < 4096; ++i) {
      const Words x = ref_block(state, i);
      const double u = d == DType::kF64 ? ref_unit64(x[0], x[1], true) : ref_unit32(x[0], 23, true);
      // Tolerance: f32 1e-5 (|g| < 17; two <= 2 ulp logs), f64 1e-12 (libm).
      ASSERT_NEAR(double(got[i]), -std::log(-std::log(u)), d == DType::kF64 ? 1e-12 : 1e-5) << i;
    }
    // Gumbel(0, 1): mean = Euler's gamma, variance pi^2 / 6 = 1.645. Standard
    // errors over 2^16: mean 1.28 / 256 = 5.0e-3; variance
    // sqrt(var^2 (kurtosis - 1) / n) = sqrt(2.706 * 4.4 / 65536) = 1.35e-2.
    // Bounds: 5 standard errors.
    EXPECT_NEAR(mean_of(got), 0.5772156649, 5 * 5.0e-3) << dtype_name(d);
    EXPECT_NEAR(var_of(got), M_PI * M_PI / 6, 5 * 1.35e-2) << dtype_name(d);
  }
}

// ---------------------------------------------------------------- bernoulli

TEST(Bernoulli, MatchesReferenceAndFrequency) {
  const Words state = rng_state_from_seed(19);
  const Shape s(DType::kBool, {256, 256});
  for (double p : {0.0, 0.3, 1.0}) {
    SCOPED_TRACE(p);
    const Vals got = draw_run([&](Tensor t) { return bernoulli(t, p, s).samples; }, state)[0];
    const uint64_t threshold = uint64_t(std::llround(std::ldexp(p, 32)));
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], ref_block(state, i)[0] < threshold ? 1 : 0);  // exact
    // Frequency: standard error sqrt(p (1 - p) / 2^16) <= 1.8e-3; bound 5 of them.
    EXPECT_NEAR(mean_of(got), p, 5 * std::sqrt(p * (1 - p) / 65536.0));
  }
}

// ---------------------------------------------------------------- categorical

TEST(Categorical, FrequenciesFollowSoftmax) {
  const std::vector<double> logit = {0, 1, 2, -1, 0.5, -3, -INFINITY};
  const size_t k = logit.size();
  const int64_t n = 16384;
  double z = 0;
  for (double l : logit) z += std::exp(l);
  // Categories along axis 1 (tagged), and along axis 0 of the transpose.
  for (int along : {1, 0}) {
    SCOPED_TRACE("axis " + std::to_string(along));
    const Shape ls = along == 1 ? Shape(DType::kF32, {n, int64_t(k)}, {"b", "c"}) : Shape(DType::kF32, {int64_t(k), n});
    Vals lv(size_t(n) * k);
    for (size_t r = 0; r < size_t(n); ++r)
      for (size_t j = 0; j < k; ++j) lv[along == 1 ? r * k + j : j * size_t(n) + r] = logit[j];
    const Words state = rng_state_from_seed(23);
    Outs o = run([&](Tensor st, Tensor l) {
      RandomResult<> r = along == 1 ? categorical(st, l, "c") : categorical(st, l, 0);
      return std::vector<Tensor>{r.samples, r.state};
    }, {state_vals(state), lv}, kState, ls);
    EXPECT_EQ(o.shapes[0], along == 1 ? Shape(DType::kI32, {n}, {"b"}) : Shape(DType::kI32, {n}));
    EXPECT_EQ(o.values[1], (Vals{Val(state[0]), Val(state[1]), Val(n * int64_t(k)), 0}));
    std::vector<double> counts(k);
    int64_t disagree = 0;
    for (size_t r = 0; r < size_t(n); ++r) {
      const size_t got = size_t(o.values[0][r]);
      ASSERT_LT(got, k - 1);  // never the -inf category
      counts[got] += 1;
      // Reference: argmax of logit + gumbel noise from the same blocks.
      size_t best = 0;
      double best_v = -INFINITY;
      for (size_t j = 0; j < k; ++j) {
        const size_t flat = along == 1 ? r * k + j : j * size_t(n) + r;
        const double u = ref_unit32(ref_block(state, flat)[0], 23, true);
        const double v = logit[j] - std::log(-std::log(u));
        if (v > best_v) best_v = v, best = j;
      }
      disagree += best != got;
    }
    // Only near-ties within the f32 noise error (~1e-5) may disagree: at most 0.1%.
    EXPECT_LE(disagree, n / 1000);
    // Pearson's chi-square over the 6 possible categories (5 degrees of
    // freedom) must stay below 20.52, the 0.999 quantile.
    double chi2 = 0;
    for (size_t j = 0; j + 1 < k; ++j) {
      const double e = n * std::exp(logit[j]) / z;
      chi2 += (counts[j] - e) * (counts[j] - e) / e;
    }
    EXPECT_LT(chi2, 20.52);
  }
}

TEST(Categorical, FirstIndexOnTiesAndHalfLogits) {
  // Equal logits in bf16: every category equally likely; one category with a
  // logit 60 above the rest always wins (gumbel noise spans < 20).
  const Shape ls(DType::kBF16, {4096, 4});
  Vals lv(size_t(ls.count()), 0.0);
  for (size_t r = 0; r < 4096; r += 2) lv[r * 4 + 2] = 60;
  Outs o = run([](Tensor st, Tensor l) { return categorical(st, l, -1).samples; },
               {state_vals(rng_state_from_seed(1)), lv}, kState, ls);
  std::vector<double> counts(4);
  for (size_t r = 0; r < 4096; ++r) {
    if (r % 2 == 0) ASSERT_EQ(o.values[0][r], 2) << r;
    else counts[size_t(o.values[0][r])] += 1;
  }
  // 2048 uniform draws over 4: chi-square, 3 degrees of freedom, < 16.27 (0.999 quantile).
  double chi2 = 0;
  for (double c : counts) chi2 += (c - 512) * (c - 512) / 512;
  EXPECT_LT(chi2, 16.27);
}

// ---------------------------------------------------------------- shape inference

// Expects f() to throw a TraceError whose message contains every needle.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "no TraceError";
  } catch (const TraceError& e) {
    for (const std::string& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(RandomInfer, ResultShapes) {
  const Shape f(DType::kF32, {2, 3}, {"b", "d"});
  EXPECT_EQ(infer::uniform(kState, f, -1, 1), f);
  EXPECT_EQ(infer::normal(kState, f.with_dtype(DType::kF64), 0, 2), f.with_dtype(DType::kF64));
  EXPECT_EQ(infer::gumbel(kState, f.with_dtype(DType::kBF16)), f.with_dtype(DType::kBF16));
  EXPECT_EQ(infer::uniform_int(kState, f.with_dtype(DType::kU8), 0, 256), f.with_dtype(DType::kU8));
  EXPECT_EQ(infer::uniform_int(kState, f.with_dtype(DType::kI64), std::numeric_limits<int64_t>::min(), 0),
            f.with_dtype(DType::kI64));
  EXPECT_EQ(infer::random_bits(kState, Shape(DType::kU64)), Shape(DType::kU64));
  EXPECT_EQ(infer::bernoulli(kState, 1.0, f.with_dtype(DType::kBool)), f.with_dtype(DType::kBool));
  EXPECT_EQ(infer::categorical(kState, f, "d"), Shape(DType::kI32, {2}, {"b"}));
  EXPECT_EQ(infer::categorical(kState, f, 0), Shape(DType::kI32, {3}, {"d"}));
  EXPECT_EQ(infer::categorical(kState, f, -1), Shape(DType::kI32, {2}, {"b"}));
  EXPECT_EQ(infer::philox4x32(Shape(DType::kU32, {5, 4}), Shape(DType::kU32, {2})), Shape(DType::kU32, {5, 4}));
  EXPECT_EQ(infer::rng_from_seed(Shape(DType::kI32)), kState);
}

TEST(RandomInfer, BadInputNamesTheOpAndShapes) {
  const Shape f(DType::kF32, {2, 3}), i(DType::kI32, {2, 3});
  const Shape bad_state(DType::kU32, {3}), u64_state(DType::kU64, {2});
  expect_error([&] { infer::uniform(bad_state, f, 0, 1); }, {"uniform(u32[3], f32[2,3], lo=0, hi=1)", "u32[4]"});
  expect_error([&] { infer::random_bits(u64_state, i); }, {"random_bits(u64[2], i32[2,3])", "u32[4]"});
  expect_error([&] { infer::uniform(kState, f, 1, 0); }, {"uniform(u32[4], f32[2,3], lo=1, hi=0)", "below"});
  expect_error([&] { infer::uniform(kState, f, 0, INFINITY); }, {"uniform(", "finite"});
  expect_error([&] { infer::uniform(kState, i, 0, 1); }, {"uniform(u32[4], i32[2,3]", "float"});
  expect_error([&] { infer::uniform(kState, f.with_dtype(DType::kF16), 1, 1.0001); },
               {"uniform(u32[4], f16[2,3]", "same f16 value"});
  expect_error([&] { infer::uniform(kState, f, -3e38, 3e38); }, {"uniform(", "overflows f32"});
  expect_error([&] { infer::normal(kState, i, 0, 1); }, {"normal(u32[4], i32[2,3]", "float"});
  expect_error([&] { infer::normal(kState, f, 0, 0); }, {"normal(u32[4], f32[2,3], mean=0, stddev=0)", "positive"});
  expect_error([&] { infer::gumbel(kState, i.with_dtype(DType::kU8)); }, {"gumbel(u32[4], u8[2,3])", "float"});
  expect_error([&] { infer::uniform_int(kState, f, 0, 5); }, {"uniform_int(u32[4], f32[2,3], lo=0, hi=5)", "integer"});
  expect_error([&] { infer::uniform_int(kState, i, 5, 5); }, {"uniform_int(u32[4], i32[2,3], lo=5, hi=5)", "below"});
  expect_error([&] { infer::uniform_int(kState, i.with_dtype(DType::kU8), 0, 257); },
               {"uniform_int(u32[4], u8[2,3], lo=0, hi=257)", "range of u8"});
  expect_error([&] { infer::uniform_int(kState, i.with_dtype(DType::kU64), -1, 3); }, {"range of u64"});
  expect_error([&] { infer::random_bits(kState, f); }, {"random_bits(u32[4], f32[2,3])", "integer"});
  expect_error([&] { infer::bernoulli(kState, 1.5, f.with_dtype(DType::kBool)); },
               {"bernoulli(u32[4], bool[2,3], p=1.5)", "[0, 1]"});
  expect_error([&] { infer::bernoulli(kState, NAN, f.with_dtype(DType::kBool)); }, {"bernoulli(", "p=nan"});
  expect_error([&] { infer::bernoulli(kState, 0.5, f); }, {"bernoulli(u32[4], f32[2,3], p=0.5)", "bool"});
  const Shape tagged(DType::kF32, {2, 3}, {"b", "c"});
  expect_error([&] { infer::categorical(kState, tagged, "z"); },
               {"categorical(u32[4], f32[b=2,c=3], axis=", "does not exist"});
  expect_error([&] { infer::categorical(kState, tagged, 2); }, {"categorical(u32[4], f32[b=2,c=3]", "does not exist"});
  expect_error([&] { infer::categorical(kState, i, 1); }, {"categorical(u32[4], i32[2,3]", "floats"});
  expect_error([&] { infer::categorical(kState, Shape(DType::kF32, {2, 0}), 1); }, {"f32[2,0]", "empty"});
  expect_error([&] { infer::categorical(bad_state, f, 1); }, {"categorical(u32[3], f32[2,3]", "u32[4]"});
  expect_error([&] { infer::philox4x32(Shape(DType::kU32, {5, 3}), Shape(DType::kU32, {2})); },
               {"philox4x32(u32[5,3], u32[2])", "u32[..., 4]"});
  expect_error([&] { infer::philox4x32(Shape(DType::kU32, {4}), Shape(DType::kI32, {2})); },
               {"philox4x32(u32[4], i32[2])", "key"});
  expect_error([&] { infer::rng_from_seed(Shape(DType::kF32)); }, {"rng_from_seed(f32[])", "integer"});
  expect_error([&] { infer::rng_from_seed(Shape(DType::kU64, {2})); }, {"rng_from_seed(u64[2])"});
}

TEST(RandomInfer, TracedOpsReportTheSameErrors) {
  auto bad = compile_fn(cpu(), [](Tensor s) { return uniform(s, Shape(DType::kI32, {4})).samples; },
                        Shape(DType::kU32, {2}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("uniform(u32[2], i32[4], lo=0, hi=1)"), std::string::npos)
      << bad.status().message();
  auto bad2 = compile_fn(cpu(), [](Tensor s, Tensor l) { return categorical(s, l, "q").samples; }, kState,
                         Shape(DType::kF32, {2, 5}, {"b", "c"}));
  ASSERT_FALSE(bad2.ok());
  EXPECT_NE(bad2.status().message().find("categorical(u32[4], f32[b=2,c=5], axis="), std::string::npos)
      << bad2.status().message();
  // A placeholder-free misuse outside any trace is refused too.
  EXPECT_THROW(rng_from_seed(1), TraceError);
}

}  // namespace
}  // namespace radix
