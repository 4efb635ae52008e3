// Sorting: Radix top_k (k = 40 of 32000 f32 logits, values + indices) and a
// full sort of 32000 f32, each against the C++ standard library on the same
// data in the same run: std::partial_sort / std::sort (-O3) on a copy of the
// values (values only: a stricter baseline than Radix's values + indices).
//
//   ./build-bench/bench/radix_bench_topk
//
// Before timing, checks both Radix results against the standard library; a
// mismatch aborts with exit code 1.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "bench_util.h"

using namespace radix;
using radix::bench::must;

namespace {

constexpr int64_t kN = 32000;
constexpr int64_t kK = 40;

Platform& cpu() {
  static Platform p = Platform::cpu();
  return p;
}

struct State {
  std::vector<float> x, scratch;
  Buffer x_buf;
  std::unique_ptr<ExeWithWeights<NoModel, TopK(Tensor)>> top;
  std::unique_ptr<ExeWithWeights<NoModel, Tensor(Tensor)>> sorted;
};
State* g_state = nullptr;  // deleted at the end of main: executables must not outlive LLVM's statics

State& state() {
  if (!g_state) {
    g_state = new State;
    State& s = *g_state;
    const Shape shape(DType::kF32, {kN});
    s.x = bench::random_floats(kN, -20.f, 20.f, 42);
    s.scratch = s.x;
    s.x_buf = must(cpu().buffer(shape, s.x), "buffer x");
    s.top = std::make_unique<ExeWithWeights<NoModel, TopK(Tensor)>>(
        must(compile_fn(cpu(), [](Tensor x) { return top_k(x, kK); }, shape), "compile_fn(top_k)"));
    s.sorted = std::make_unique<ExeWithWeights<NoModel, Tensor(Tensor)>>(
        must(compile_fn(cpu(), [](Tensor x) { return sort(x); }, shape), "compile_fn(sort)"));
  }
  return *g_state;
}

void check_results() {
  State& s = state();
  auto [vals, ids] = must(s.top->call(s.x_buf), "radix top_k");
  std::vector<float> v = must(vals.to_host<float>(), "to_host values");
  std::vector<int32_t> i = must(ids.to_host<int32_t>(), "to_host indices");
  std::vector<float> want = s.x;
  std::partial_sort(want.begin(), want.begin() + kK, want.end(), std::greater<float>());
  bool ok = true;
  for (int64_t j = 0; j < kK; ++j) ok = ok && v[j] == want[j] && s.x[static_cast<size_t>(i[j])] == v[j];
  std::vector<float> sorted = must(must(s.sorted->call(s.x_buf), "radix sort").to_host<float>(), "to_host sort");
  std::vector<float> ref = s.x;
  std::sort(ref.begin(), ref.end());
  const bool sort_ok = sorted == ref;
  std::printf("check top_k vs std::partial_sort: %s; sort vs std::sort: %s\n", ok ? "OK" : "FAIL",
              sort_ok ? "OK" : "FAIL");
  if (!ok || !sort_ok) bench::fail("Radix sorting results do not match the standard library");
}

void set_rate(benchmark::State& st) {
  st.counters["Melem"] = benchmark::Counter(kN / 1e6, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_RadixTopK(benchmark::State& st) {
  State& s = state();
  for (auto _ : st) {
    auto out = s.top->call(s.x_buf);
    benchmark::DoNotOptimize(out);
    if (!out.ok()) st.SkipWithError(out.status().to_string().c_str());
  }
  set_rate(st);
}

void BM_StdPartialSort(benchmark::State& st) {
  State& s = state();
  for (auto _ : st) {
    std::copy(s.x.begin(), s.x.end(), s.scratch.begin());
    std::partial_sort(s.scratch.begin(), s.scratch.begin() + kK, s.scratch.end(), std::greater<float>());
    benchmark::DoNotOptimize(s.scratch.data());
    benchmark::ClobberMemory();
  }
  set_rate(st);
}

void BM_RadixSort(benchmark::State& st) {
  State& s = state();
  for (auto _ : st) {
    auto out = s.sorted->call(s.x_buf);
    benchmark::DoNotOptimize(out);
    if (!out.ok()) st.SkipWithError(out.status().to_string().c_str());
  }
  set_rate(st);
}

void BM_StdSort(benchmark::State& st) {
  State& s = state();
  for (auto _ : st) {
    std::copy(s.x.begin(), s.x.end(), s.scratch.begin());
    std::sort(s.scratch.begin(), s.scratch.end());
    benchmark::DoNotOptimize(s.scratch.data());
    benchmark::ClobberMemory();
  }
  set_rate(st);
}

BENCHMARK(BM_RadixTopK)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_StdPartialSort)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RadixSort)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_StdSort)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  bench::keep_large_allocations_warm();
  check_results();
  std::fflush(stdout);

  bench::CollectingReporter reporter;
  bench::run_benchmarks(argc, argv, reporter);

  auto report = [&](const char* what, const char* radix, const char* ref, const char* ref_name) {
    const double r = reporter.median(radix, "Melem"), s = reporter.median(ref, "Melem");
    if (r > 0 && s > 0)
      std::printf("%s: radix %.0f us, %s %.0f us, speed ratio radix/%s %.2f (medians of %zu runs)\n", what,
                  kN / r, ref_name, kN / s, ref_name, r / s, reporter.count(radix, "Melem"));
  };
  std::printf("\n");
  report("top_k k=40 of 32000 f32", "BM_RadixTopK", "BM_StdPartialSort", "std::partial_sort");
  report("sort of 32000 f32", "BM_RadixSort", "BM_StdSort", "std::sort");
  delete g_state;
  return 0;
}
