// The f32 math approximations (CompileOptions::approximate_math, on by
// default) against the double-precision libm, in ulp of the f32 result, over
// the whole normal range of each function; and the libm path for comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

// Distance in units in the last place of the correctly rounded f32 result.
double ulp_error(float got, double want) {
  float w = static_cast<float>(want);
  if (std::isnan(w)) return std::isnan(got) ? 0 : 1e9;
  if (std::isinf(w) || std::isinf(got)) return got == w ? 0 : 1e9;
  float ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

struct Sweep {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*ref)(double);
  std::vector<float> xs;
};

std::vector<float> linspace(double lo, double hi, int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<float>(lo + (hi - lo) * i / (n - 1)));
  return v;
}
std::vector<float> logspace(double lo_exp, double hi_exp, int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<float>(std::pow(10.0, lo_exp + (hi_exp - lo_exp) * i / (n - 1))));
  return v;
}

// `target_cpu`: "host", or a CPU this host can run.
double max_ulp(const Sweep& s, bool approximate, const std::string& target_cpu = "host") {
  CompileFnOptions o;
  o.compile.codegen.cpu.approximate_math = approximate;
  o.compile.codegen.target_cpu = target_cpu;
  Shape shape(DType::kF32, {static_cast<int64_t>(s.xs.size())});
  auto exe = must(compile_fn(cpu(), o, [op = s.op](Tensor x) { return op(x); }, shape));
  std::vector<float> got = must(must(exe.call(must(cpu().buffer(shape, s.xs)))).to_host<float>());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, ulp_error(got[i], s.ref(s.xs[i])));
  return worst;
}

std::vector<Sweep> sweeps() {
  return {
      // exp: results from the smallest normal f32 (x ~ -87.3) to near overflow.
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); }, linspace(-87, 88.7, 64000)},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, logspace(-37.9, 38.5, 64000)},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, linspace(-12, 12, 64000)},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); },
       linspace(-80, 80, 64000)},
  };
}

TEST(MathApproximation, ApproximationsStayWithinAFewUlp) {
  // Bounds: the maxima measured on these sweeps (exp 3.83 with MLIR's
  // polynomial (targets without FMA), 1.42 with FloorExp (AVX2), 0.97 with
  // vscalefps (AVX-512); log 0.77, tanh 3.78,
  // sigmoid 1.96 / 2.14 ulp) plus about one ulp of margin.
  const std::map<std::string, double> bound = {{"exp", 5}, {"log", 2}, {"tanh", 5}, {"sigmoid", 3}};
  for (const Sweep& s : sweeps()) {
    double u = max_ulp(s, true);
    RecordProperty(std::string(s.name) + "_max_ulp", std::to_string(u));
    EXPECT_LE(u, bound.at(s.name)) << s.name;
  }
}

bool host_has_avx512() { return __builtin_cpu_supports("avx512f"); }

// The unary `op` over `shape` compiled with `o`, its LLVM IR dumped into a
// folder of this process's own: *ir gets the IR, and the folder is removed.
auto compile_with_ir(CompileFnOptions o, Tensor (*op)(Tensor), const Shape& shape, std::string* ir) {
  o.compile.diagnostics.dump = {"llvm-ir"};
  o.compile.diagnostics.dump_dir =
      (std::filesystem::temp_directory_path() / ("radix-math-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(o.compile.diagnostics.dump_dir);
  auto exe = must(compile_fn(cpu(), o, op, shape));
  *ir = testing::all_stage_dumps(o.compile.diagnostics.dump_dir);
  std::filesystem::remove_all(o.compile.diagnostics.dump_dir);
  return exe;
}

// exp over `xs` padded with 0.5 to `n` values (64: four 16-lane vectors, 8:
// one 8-lane vector; no scalar tail) compiled for `target_cpu`, and the LLVM
// IR it was compiled from.
std::vector<float> exp_of(const std::vector<float>& xs, const std::string& target_cpu, std::string* ir,
                          int64_t n = 64) {
  CompileFnOptions o;
  o.compile.codegen.target_cpu = target_cpu;
  std::vector<float> in(static_cast<size_t>(n), 0.5f);
  std::copy(xs.begin(), xs.end(), in.begin());
  Shape shape(DType::kF32, {n});
  auto exe = compile_with_ir(o, [](Tensor x) { return exp(x); }, shape, ir);
  std::vector<float> got = must(must(exe.call(must(cpu().buffer(shape, in)))).to_host<float>());
  got.resize(xs.size());
  return got;
}

// Infinities, NaN, zero and the ends of the range, on every exp path;
// `top_ulp` bounds exp(88.72), just under FLT_MAX.
void expect_exp_edges(const std::string& target_cpu, double top_ulp) {
  const float inf = INFINITY;
  const std::vector<float> xs = {-inf, inf, NAN, 0.0f, -0.0f, 88.72f, 88.8f, 100.0f, -1e-8f, 1e-8f, -110.0f, 1e30f, -1e30f};
  std::string ir;
  std::vector<float> got = exp_of(xs, target_cpu, &ir);
  SCOPED_TRACE("target_cpu='" + target_cpu + "'");
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[1], inf);
  EXPECT_TRUE(std::isnan(got[2]));
  EXPECT_EQ(got[3], 1.0f);
  EXPECT_EQ(got[4], 1.0f);
  EXPECT_LE(ulp_error(got[5], std::exp(static_cast<double>(xs[5]))), top_ulp) << got[5];
  EXPECT_EQ(got[6], inf);                                        // just over it
  EXPECT_EQ(got[7], inf);
  EXPECT_LE(ulp_error(got[8], std::exp(static_cast<double>(xs[8]))), 1.0);
  EXPECT_LE(ulp_error(got[9], std::exp(static_cast<double>(xs[9]))), 1.0);
  EXPECT_EQ(got[10], 0.0f);
  EXPECT_EQ(got[11], inf);
  EXPECT_EQ(got[12], 0.0f);
}

// AVX-512 targets take exp of 16-lane vectors through vscalefps (Radix's
// ScalefExp): within 1 ulp (measured 0.97 on the sweep) where MLIR's form
// is within 4, with gradual underflow (subnormal results within one
// subnormal step; MLIR's form gives 0 below about -87.7).
TEST(MathApproximation, Avx512ExpScalesByVscalefWithinAnUlp) {
  if (!host_has_avx512()) GTEST_SKIP() << "the host has no AVX-512F: exp stays on MLIR's polynomial here";
  std::string ir;
  exp_of({1.0f}, "host", &ir);
  EXPECT_NE(ir.find("llvm.x86.avx512.mask.scalef.ps.512"), std::string::npos);
  const Sweep s = sweeps()[0];
  ASSERT_STREQ(s.name, "exp");
  const double u = max_ulp(s, true);
  RecordProperty("exp_avx512_max_ulp", std::to_string(u));
  EXPECT_LE(u, 1.25);
  expect_exp_edges("host", 1.0);
  const std::vector<float> tiny = {-88.0f, -95.0f, -100.0f, -103.0f};
  std::vector<float> got = exp_of(tiny, "host", &ir);
  for (size_t i = 0; i < tiny.size(); ++i) {
    const float want = static_cast<float>(std::exp(static_cast<double>(tiny[i])));
    EXPECT_GT(got[i], 0.0f) << tiny[i];
    EXPECT_LE(std::fabs(got[i] - want), std::max(std::nextafter(want, INFINITY) - want, 1.5e-45f)) << tiny[i];
  }
}

// Targets with FMA take exp of f32 vectors other than AVX-512's 16 lanes
// through Radix's FloorExp (k = floor(x log2 e), 2^k from k's bits): within
// 1.6 ulp (measured 1.42 on the sweep; MLIR's form, which it replaced, 3.83),
// the same edge cases, and results under the smallest normal f32 (x under
// about -87.34) flushed to 0.
void expect_floor_exp(const std::string& target_cpu, int64_t sweep_len) {
  SCOPED_TRACE("target_cpu='" + target_cpu + "', " + std::to_string(sweep_len) + " values");
  Sweep s = sweeps()[0];
  ASSERT_STREQ(s.name, "exp");
  s.xs.resize(static_cast<size_t>(sweep_len), 0.5f);
  const double u = max_ulp(s, true, target_cpu);
  ::testing::Test::RecordProperty("exp_floor_max_ulp_" + std::to_string(sweep_len), std::to_string(u));
  EXPECT_LE(u, 1.6);
  const std::vector<float> low = {-87.3f, -87.2f, -87.5f, -88.0f, -95.0f};
  std::string ir;
  std::vector<float> got = exp_of(low, target_cpu, &ir, sweep_len % 16 == 0 ? 64 : 8);
  // 2^k from k's bits by an add and a shift: no conversion to integer
  // (MLIR's form has one), no vscalefps.
  EXPECT_NE(ir.find("llvm.floor"), std::string::npos);
  EXPECT_EQ(ir.find("fptosi"), std::string::npos);
  EXPECT_EQ(ir.find("scalef"), std::string::npos);
  for (size_t i = 0; i < 2; ++i) EXPECT_LE(ulp_error(got[i], std::exp(static_cast<double>(low[i]))), 1.6) << low[i];
  for (size_t i = 2; i < low.size(); ++i) EXPECT_EQ(got[i], 0.0f) << low[i];
}

// An AVX2 target (x86-64-v3: AVX2 + FMA, which every host here runs).
TEST(MathApproximation, Avx2ExpFloorsKWithinTwoUlp) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "the host has no AVX2 + FMA";
  expect_floor_exp("x86-64-v3", 64000);
  expect_exp_edges("x86-64-v3", 1.6);
}

// On AVX-512, vectors of 8 lanes (a length 16 does not divide) take FloorExp.
TEST(MathApproximation, Avx512EightLaneExpFloorsK) {
  if (!host_has_avx512()) GTEST_SKIP() << "the host has no AVX-512F";
  expect_floor_exp("host", 64008);
}

TEST(MathApproximation, LibmPathIsNearlyCorrectlyRounded) {
  for (const Sweep& s : sweeps()) EXPECT_LE(max_ulp(s, false), 3.0) << s.name;
}

TEST(MathApproximation, CanBeTurnedOffAndIsOnByDefault) {
  EXPECT_TRUE(CompileOptions{}.codegen.cpu.approximate_math);
  for (bool approximate : {false, true}) {
    CompileFnOptions o;
    o.compile.codegen.cpu.approximate_math = approximate;
    std::string ir;
    compile_with_ir(o, [](Tensor x) { return tanh(x); }, Shape(DType::kF32, {64}), &ir);
    EXPECT_EQ(ir.find("tanh") != std::string::npos, !approximate) << "approximate_math=" << approximate;
  }
}

}  // namespace
}  // namespace radix
