// Per-call overhead of a prepared executable: y = x + b over f32[4] (the
// work is a few nanoseconds, so the time is the runtime's: argument checks,
// descriptors, the output allocation, the call into JIT code), against a
// peer that does the least any allocating runtime must — a heap-allocated
// output and an indirect call of the same computation.
//
//   ./build/bench/radix_bench_call
#include <cstdlib>
#include <functional>
#include <memory>

#include "bench_util.h"

using namespace radix;
using radix::bench::must;

namespace {

using Fn = ExeWithWeights<NoModel, Tensor(Tensor, Tensor)>;
Fn* g_exe = nullptr;
Buffer* g_x = nullptr;

void BM_RadixCall(benchmark::State& st) {
  for (auto _ : st) {
    Buffer y = must(g_exe->call(*g_x, *g_x), "call");
    benchmark::DoNotOptimize(y.device_ptr());
  }
  st.counters["ns"] = benchmark::Counter(1e-9, benchmark::Counter::kIsIterationInvariantRate |
                                                   benchmark::Counter::kInvert);
}

void add4(const float* a, const float* b, float* y) {
  for (int i = 0; i < 4; ++i) y[i] = a[i] + b[i];
}

void BM_MallocAndIndirectCall(benchmark::State& st) {
  float x[4] = {1, 2, 3, 4};
  std::function<void(const float*, const float*, float*)> f = add4;
  benchmark::DoNotOptimize(f);
  for (auto _ : st) {
    auto* y = static_cast<float*>(std::aligned_alloc(64, 64));
    f(x, x, y);
    benchmark::DoNotOptimize(y);
    std::free(y);
  }
  st.counters["ns"] = benchmark::Counter(1e-9, benchmark::Counter::kIsIterationInvariantRate |
                                                   benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(BM_RadixCall)->UseRealTime();
BENCHMARK(BM_MallocAndIndirectCall)->UseRealTime();

int main(int argc, char** argv) {
  Platform cpu = Platform::cpu();
  Shape s(DType::kF32, {4});
  Fn exe = must(compile_fn(cpu, [](Tensor x, Tensor b) { return x + b; }, s, s), "compile");
  Buffer x = must(cpu.buffer(s, {1.f, 2.f, 3.f, 4.f}), "buffer");
  std::vector<float> y = must(must(exe.call(x, x), "check").to_host<float>(), "read");
  if (y != std::vector<float>{2, 4, 6, 8}) bench::fail("wrong result");
  g_exe = &exe;
  g_x = &x;
  bench::CollectingReporter reporter;
  bench::run_benchmarks(argc, argv, reporter);
  const double r = reporter.median("BM_RadixCall", "ns"), p = reporter.median("BM_MallocAndIndirectCall", "ns");
  if (r > 0 && p > 0)
    std::printf("\nper call: radix %.0f ns, malloc + indirect call %.0f ns, overhead ratio %.1f\n", r, p, r / p);
  return 0;
}
