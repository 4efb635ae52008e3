// Transcendental elementwise chain: silu(x) * tanh(x) over 16M f32, compiled
// twice in the same run — with CompileOptions::approximate_math (polynomial
// approximations, the default) and with libm — reported as elements per
// second and their ratio. Both are checked against a double-precision loop.
#include <cmath>
#include <cstdio>
#include <memory>

#include "bench_util.h"

using namespace radix;
using radix::bench::must;

namespace {

constexpr int64_t kN = int64_t{1} << 24;

using MathExe = ExeWithWeights<NoModel, Tensor(Tensor)>;
Tensor chain(Tensor x) { return x * sigmoid(x) * tanh(x); }

struct State {
  std::unique_ptr<MathExe> approx, libm;
  Buffer x;
  std::vector<float> host;
};
State* g_state = nullptr;

State& state() {
  if (!g_state) {
    g_state = new State;
    Shape s(DType::kF32, {kN});
    CompileFnOptions o;
    g_state->approx = std::make_unique<MathExe>(must(compile_fn(Platform::cpu(), o, chain, s), "compile approx"));
    o.compile.codegen.cpu.approximate_math = false;
    g_state->libm = std::make_unique<MathExe>(must(compile_fn(Platform::cpu(), o, chain, s), "compile libm"));
    g_state->host = bench::random_floats(static_cast<size_t>(kN), -12.f, 12.f, 7);
    g_state->x = must(Platform::cpu().buffer(s, g_state->host), "upload");
  }
  return *g_state;
}

void check(const MathExe& exe, const char* what) {
  State& s = state();
  std::vector<float> got = must(must(exe.call(s.x), what).to_host<float>(), what);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double x = s.host[i], want = x / (1 + std::exp(-x)) * std::tanh(x);
    worst = std::max(worst, std::fabs(got[i] - want) / std::max(1e-6, std::fabs(want)));
  }
  std::printf("check %s vs double loop: max rel err %.3g %s\n", what, worst, worst < 1e-5 ? "OK" : "FAIL");
  if (worst >= 1e-5) bench::fail(std::string(what) + " mismatch");
}

void run(benchmark::State& st, const MathExe& exe) {
  State& s = state();
  for (auto _ : st) {
    Result<Buffer> out = exe.call(s.x);
    benchmark::DoNotOptimize(out);
    if (!out.ok()) st.SkipWithError(out.status().to_string().c_str());
  }
  st.counters["Gelem"] = benchmark::Counter(kN / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Approximate(benchmark::State& st) { run(st, *state().approx); }
void BM_Libm(benchmark::State& st) { run(st, *state().libm); }
BENCHMARK(BM_Approximate)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Libm)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  bench::keep_large_allocations_warm();
  check(*state().approx, "approximate_math");
  check(*state().libm, "libm");
  std::fflush(stdout);
  bench::CollectingReporter reporter;
  bench::run_benchmarks(argc, argv, reporter);
  const double a = reporter.median("BM_Approximate", "Gelem"), l = reporter.median("BM_Libm", "Gelem");
  if (a > 0 && l > 0)
    std::printf("\nx*sigmoid(x)*tanh(x), 16M f32: approximate %.2f Gelem/s, libm %.2f Gelem/s, ratio %.2f  "
                "(medians of %zu runs)\n", a, l, a / l, reporter.count("BM_Approximate", "Gelem"));
  // Executables are destroyed before exit (LLVM's statics outlive them).
  delete g_state;
  return 0;
}
