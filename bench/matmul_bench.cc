// f32 matmul: Radix (compile_fn + the CPU backend's transform schedule) vs
// OpenBLAS cblas_sgemm on one thread, same data, same run.
//
//   OPENBLAS_CORETYPE=SkylakeX ./build-bench/bench/radix_bench_matmul
//
// (set the core type on the command line only: OpenBLAS 0.3.21's DYNAMIC_ARCH
// picks its Haswell kernel on Zen 5, half the speed of the AVX-512 one.)
// Before timing, checks Radix against sgemm at the benchmark sizes and against
// a naive loop for odd shapes; any mismatch aborts with exit code 1.
#include <cblas.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"

using namespace radix;
using radix::bench::must;

namespace {

using MatmulExe = ExeWithWeights<NoModel, Tensor(Tensor, Tensor)>;

Platform& cpu() {
  static Platform p = Platform::cpu();
  return p;
}

std::unique_ptr<MatmulExe> compile_matmul(int64_t m, int64_t n, int64_t k, double* compile_ms = nullptr) {
  auto exe = must(compile_fn(cpu(), [](Tensor a, Tensor b) { return matmul(a, b); },
                             Shape(DType::kF32, {m, k}), Shape(DType::kF32, {k, n})),
                  "compile_fn(matmul)");
  if (compile_ms) *compile_ms = exe.executable().stats().total_ms;
  return std::make_unique<MatmulExe>(std::move(exe));
}

// One benchmark size: compiled executable, host data, device buffers.
struct Case {
  int64_t n = 0;
  double compile_ms = 0;
  std::unique_ptr<MatmulExe> exe;
  std::vector<float> a, b, c;
  Buffer a_buf, b_buf;
};

// Cleared at the end of main: executables must not outlive main (LLVM's own
// statics are gone by the time static destructors run).
std::map<int64_t, std::unique_ptr<Case>> g_cases;

Case& get_case(int64_t n) {
  auto& slot = g_cases[n];
  if (!slot) {
    slot = std::make_unique<Case>();
    Case& cs = *slot;
    cs.n = n;
    cs.exe = compile_matmul(n, n, n, &cs.compile_ms);
    cs.a = bench::random_floats(static_cast<size_t>(n * n), -1.f, 1.f, 1);
    cs.b = bench::random_floats(static_cast<size_t>(n * n), -1.f, 1.f, 2);
    cs.c.assign(static_cast<size_t>(n * n), 0.f);
    cs.a_buf = must(cpu().buffer(Shape(DType::kF32, {n, n}), cs.a), "buffer a");
    cs.b_buf = must(cpu().buffer(Shape(DType::kF32, {n, n}), cs.b), "buffer b");
  }
  return *slot;
}

void sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.f, a, static_cast<int>(k), b, static_cast<int>(n), 0.f, c, static_cast<int>(n));
}

// max_i |x_i - ref_i| / max(|ref_i|, 1): relative where the reference is not
// tiny, absolute near zero (sums of products of values in [-1, 1) cancel).
double max_rel_err(const std::vector<float>& x, const std::vector<float>& ref) {
  if (x.size() != ref.size()) return INFINITY;
  double e = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::fabs(static_cast<double>(x[i]) - ref[i]) / std::max(std::fabs(static_cast<double>(ref[i])), 1.0);
    if (!(d <= e)) e = d;  // NaN-propagating max
  }
  return e;
}

constexpr double kTolerance = 1e-4;

void check_or_die(const std::string& what, double err) {
  std::printf("check %-32s max_rel_err %.3g %s\n", what.c_str(), err, err < kTolerance ? "OK" : "FAIL");
  if (!(err < kTolerance)) bench::fail("Radix matmul result does not match the reference: " + what);
}

// Radix vs sgemm at the benchmark sizes; Radix vs a naive double-accumulating
// loop for shapes that exercise the other tile choices.
void check_correctness(bool odd_shapes) {
  for (int64_t n : {256, 1024}) {
    Case& cs = get_case(n);
    Buffer out = must(cs.exe->call(cs.a_buf, cs.b_buf), "radix matmul");
    std::vector<float> got = must(out.to_host<float>(), "to_host");
    std::vector<float> ref(static_cast<size_t>(n * n));
    sgemm(n, n, n, cs.a.data(), cs.b.data(), ref.data());
    check_or_die("radix vs sgemm " + std::to_string(n) + "^3", max_rel_err(got, ref));
  }
  if (!odd_shapes) return;
  struct Mnk { int64_t m, n, k; };
  for (Mnk s : {Mnk{7, 13, 5}, Mnk{64, 96, 128}, Mnk{33, 64, 17}, Mnk{128, 512, 256}, Mnk{256, 256, 256},
                Mnk{1024, 1024, 1024}}) {
    auto exe = compile_matmul(s.m, s.n, s.k);
    auto a = bench::random_floats(static_cast<size_t>(s.m * s.k), -1.f, 1.f, 3);
    auto b = bench::random_floats(static_cast<size_t>(s.k * s.n), -1.f, 1.f, 4);
    Buffer ab = must(cpu().buffer(Shape(DType::kF32, {s.m, s.k}), a), "buffer");
    Buffer bb = must(cpu().buffer(Shape(DType::kF32, {s.k, s.n}), b), "buffer");
    std::vector<float> got = must(must(exe->call(ab, bb), "radix matmul").to_host<float>(), "to_host");
    std::vector<double> acc(static_cast<size_t>(s.m * s.n), 0.0);
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t p = 0; p < s.k; ++p) {
        const double av = a[static_cast<size_t>(i * s.k + p)];
        for (int64_t j = 0; j < s.n; ++j) acc[static_cast<size_t>(i * s.n + j)] += av * b[static_cast<size_t>(p * s.n + j)];
      }
    std::vector<float> ref(acc.begin(), acc.end());
    check_or_die("radix vs naive " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k),
                 max_rel_err(got, ref));
  }
}

void set_flops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP"] =  // shown as GFLOP/s
      benchmark::Counter(2.0 * static_cast<double>(n) * n * n / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_RadixMatmul(benchmark::State& state) {
  Case& cs = get_case(state.range(0));
  for (auto _ : state) {
    Result<Buffer> out = cs.exe->call(cs.a_buf, cs.b_buf);
    benchmark::DoNotOptimize(out);
    if (!out.ok()) state.SkipWithError(out.status().to_string().c_str());
  }
  set_flops(state, cs.n);
}

void BM_OpenBlasSgemm(benchmark::State& state) {
  Case& cs = get_case(state.range(0));
  for (auto _ : state) {
    sgemm(cs.n, cs.n, cs.n, cs.a.data(), cs.b.data(), cs.c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, cs.n);
}

BENCHMARK(BM_RadixMatmul)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpenBlasSgemm)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  bench::keep_large_allocations_warm();
  openblas_set_num_threads(1);
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  std::printf("OpenBLAS: %s (core %s; OPENBLAS_CORETYPE=%s), 1 thread\n", openblas_get_config(),
              openblas_get_corename(), core ? core : "(unset)");
  if (!core && __builtin_cpu_supports("avx512f"))
    std::printf("note: run with OPENBLAS_CORETYPE=SkylakeX for the AVX-512 sgemm (see bench/run.sh)\n");
  if (!__builtin_cpu_supports("avx512f"))
    std::printf("note: this CPU has no AVX-512: comparing against OpenBLAS's %s kernel\n", openblas_get_corename());

  // --skip_shape_check: only the sgemm comparison at the benchmark sizes.
  bool odd_shapes = true;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--skip_shape_check") == 0) odd_shapes = false;
    else args.push_back(argv[i]);
  }
  check_correctness(odd_shapes);
  for (int64_t n : {256, 1024}) std::printf("radix compile %lld^3: %.1f ms\n", static_cast<long long>(n), get_case(n).compile_ms);
  std::fflush(stdout);

  bench::CollectingReporter reporter;
  bench::run_benchmarks(static_cast<int>(args.size()), args.data(), reporter);

  std::printf("\n");
  for (int64_t n : {256, 1024}) {
    char arg[32];
    std::snprintf(arg, sizeof(arg), "/%lld", static_cast<long long>(n));
    const double r = reporter.median(std::string("BM_RadixMatmul") + arg, "GFLOP");
    const double o = reporter.median(std::string("BM_OpenBlasSgemm") + arg, "GFLOP");
    if (r == 0 || o == 0) continue;
    std::printf("matmul %lld^3 f32: radix %.1f GFLOP/s, openblas %.1f GFLOP/s, ratio %.2f  (medians of %zu runs)\n",
                static_cast<long long>(n), r, o, r / o, reporter.count(std::string("BM_RadixMatmul") + arg, "GFLOP"));
  }
  g_cases.clear();
  return 0;
}
