// A fused elementwise chain over 16M f32: y = relu(a * b + c) * 0.5 - a.
// The "fuse" stage turns the chain into one linalg.generic (checked at
// startup), the schedule vectorizes it 16 lanes wide. Reported as GB/s of
// bytes read + written (3 inputs + 1 output, 256 MiB per call) next to a
// memcpy moving the same traffic in the same run (copying 128 MiB: 128 read
// + 128 written), and the ratio.
//
//   ./build-bench/bench/radix_bench_elementwise
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "bench_util.h"

using namespace radix;
using radix::bench::must;

namespace {

constexpr int64_t kElems = int64_t{1} << 24;                                  // 16M f32
constexpr double kTrafficBytes = 4.0 * kElems * sizeof(float);                // 3 reads + 1 write
constexpr size_t kCopyBytes = static_cast<size_t>(kTrafficBytes / 2);         // memcpy: read + write

using ChainExe = ExeWithWeights<NoModel, Tensor(Tensor, Tensor, Tensor)>;

Tensor chain(Tensor a, Tensor b, Tensor c) { return relu(a * b + c) * 0.5 - a; }

float chain_ref(float a, float b, float c) { return std::max(a * b + c, 0.f) * 0.5f - a; }

Platform& cpu() {
  static Platform p = Platform::cpu();
  return p;
}

struct State {
  std::unique_ptr<ChainExe> exe;
  std::vector<float> a, b, c;
  Buffer a_buf, b_buf, c_buf;
  std::vector<char> src, dst;
};

// Deleted at the end of main: executables must not outlive main (LLVM's own
// statics are gone by the time static destructors run).
State* g_state = nullptr;

State& state() {
  if (!g_state) {
    auto* st = new State;
    const Shape shape(DType::kF32, {kElems});
    st->exe = std::make_unique<ChainExe>(must(compile_fn(cpu(), chain, shape, shape, shape), "compile_fn(chain)"));
    st->a = bench::random_floats(kElems, -1.f, 1.f, 1);
    st->b = bench::random_floats(kElems, -1.f, 1.f, 2);
    st->c = bench::random_floats(kElems, -1.f, 1.f, 3);
    st->a_buf = must(cpu().buffer(shape, st->a), "buffer a");
    st->b_buf = must(cpu().buffer(shape, st->b), "buffer b");
    st->c_buf = must(cpu().buffer(shape, st->c), "buffer c");
    st->src.assign(kCopyBytes, 1);
    st->dst.assign(kCopyBytes, 0);
    g_state = st;
  }
  return *g_state;
}

// Compiles the chain once more with the "fuse" stage dumped to a temporary
// folder and counts the linalg ops left: the chain must be one loop nest.
void check_fusion() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("radix_bench_fuse_" + std::to_string(::getpid()));
  CompileFnOptions opts;
  opts.compile.diagnostics.dump = {"fuse"};
  opts.compile.diagnostics.dump_dir = dir.string();
  const Shape shape(DType::kF32, {kElems});
  (void)must(compile_fn(cpu(), opts, chain, shape, shape, shape), "compile_fn(chain, dump fuse)");
  std::string text;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().filename() == "module.mlir") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    text += ss.str();
  }
  std::filesystem::remove_all(dir);
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
    return n;
  };
  // Ops with results ("%x = linalg.<op>"), so linalg.yield does not count.
  const int generics = count("= linalg.generic"), others = count("= linalg.") - generics;
  std::printf("fuse stage: %d linalg.generic, %d other linalg ops\n", generics, others);
  if (generics != 1 || others != 0) bench::fail("the elementwise chain did not fuse into one loop nest");
}

void check_result() {
  State& s = state();
  std::vector<float> got = must(must(s.exe->call(s.a_buf, s.b_buf, s.c_buf), "radix chain").to_host<float>(), "to_host");
  double err = 0;
  for (size_t i = 0; i < got.size(); ++i)
    err = std::max(err, static_cast<double>(std::fabs(got[i] - chain_ref(s.a[i], s.b[i], s.c[i]))));
  std::printf("check chain vs host loop: max_abs_err %.3g %s\n", err, err < 1e-6 ? "OK" : "FAIL");
  if (!(err < 1e-6)) bench::fail("Radix elementwise result does not match the host loop");
}

void set_bandwidth(benchmark::State& st) {
  st.counters["GB"] =  // shown as GB/s
      benchmark::Counter(kTrafficBytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_RadixChain(benchmark::State& st) {
  State& s = state();
  for (auto _ : st) {
    Result<Buffer> out = s.exe->call(s.a_buf, s.b_buf, s.c_buf);
    benchmark::DoNotOptimize(out);
    if (!out.ok()) st.SkipWithError(out.status().to_string().c_str());
  }
  set_bandwidth(st);
}

void BM_Memcpy(benchmark::State& st) {
  State& s = state();
  for (auto _ : st) {
    std::memcpy(s.dst.data(), s.src.data(), kCopyBytes);
    benchmark::ClobberMemory();
  }
  set_bandwidth(st);
}

BENCHMARK(BM_RadixChain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  bench::keep_large_allocations_warm();
  check_fusion();
  check_result();
  std::printf("radix compile: %.1f ms\n", state().exe->executable().stats().total_ms);
  std::fflush(stdout);

  bench::CollectingReporter reporter;
  bench::run_benchmarks(argc, argv, reporter);

  const double r = reporter.median("BM_RadixChain", "GB");
  const double m = reporter.median("BM_Memcpy", "GB");
  if (r > 0 && m > 0)
    std::printf("\nelementwise relu(a*b+c)*0.5-a, 16M f32: radix %.1f GB/s, memcpy %.1f GB/s, ratio %.2f  "
                "(bytes read+written per second; medians of %zu runs)\n",
                r, m, r / m, reporter.count("BM_RadixChain", "GB"));
  delete g_state;
  return 0;
}
