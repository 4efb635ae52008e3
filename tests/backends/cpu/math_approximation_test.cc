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

double max_ulp(const Sweep& s, bool approximate) {
  CompileFnOptions o;
  o.compile.codegen.cpu.approximate_math = approximate;
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
  // Bounds: the maxima measured on these sweeps (exp 3.83, log 0.77, tanh
  // 3.78, sigmoid 1.96 ulp) plus about one ulp of margin.
  const std::map<std::string, double> bound = {{"exp", 5}, {"log", 2}, {"tanh", 5}, {"sigmoid", 3}};
  for (const Sweep& s : sweeps()) {
    double u = max_ulp(s, true);
    RecordProperty(std::string(s.name) + "_max_ulp", std::to_string(u));
    EXPECT_LE(u, bound.at(s.name)) << s.name;
  }
}

TEST(MathApproximation, LibmPathIsNearlyCorrectlyRounded) {
  for (const Sweep& s : sweeps()) EXPECT_LE(max_ulp(s, false), 3.0) << s.name;
}

TEST(MathApproximation, CanBeTurnedOffAndIsOnByDefault) {
  EXPECT_TRUE(CompileOptions{}.codegen.cpu.approximate_math);
  for (bool approximate : {false, true}) {
    CompileFnOptions o;
    o.compile.codegen.cpu.approximate_math = approximate;
    o.compile.diagnostics.dump = {"llvm-ir"};
    o.compile.diagnostics.dump_dir = (std::filesystem::temp_directory_path() / ("radix-math-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(o.compile.diagnostics.dump_dir);
    must(compile_fn(cpu(), o, [](Tensor x) { return tanh(x); }, Shape(DType::kF32, {64})));
    std::string ir;
    ir = testing::all_stage_dumps(o.compile.diagnostics.dump_dir);
    EXPECT_EQ(ir.find("tanh") != std::string::npos, !approximate) << "approximate_math=" << approximate;
    std::filesystem::remove_all(o.compile.diagnostics.dump_dir);
  }
}

}  // namespace
}  // namespace radix
