// f32 conv2d: 3x3, stride 1, "same" padding, 1x56x56x64 NHWC input, 64
// output channels (HWIO kernel), one thread. Radix (compile_fn + the CPU
// backend's convolution schedule) vs oneDNN's convolution_forward in the same
// run, plus a naive -O3 loop nest for scale.
//
//   ./build-bench/bench/radix_bench_conv
//
// oneDNN (Debian libdnnl-dev) takes the same NHWC source / destination; its
// weights are reordered once, before timing, into the layout it prefers (as
// an inference engine does with constant weights). Radix reads HWIO weights
// as given on every call. Built without oneDNN (RADIX_HAVE_DNNL unset), only
// the naive loop is compared, and the output says so.
// Before timing, Radix is checked against the naive loop (and oneDNN against
// it too); a mismatch aborts with exit code 1.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"

#ifdef RADIX_HAVE_DNNL
#include <dlfcn.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

using namespace radix;
using radix::bench::must;

namespace {

constexpr int64_t N = 1, H = 56, W = 56, C = 64, O = 64, K = 3;
constexpr double kFlop = 2.0 * N * H * W * O * C * K * K;

using ConvExe = ExeWithWeights<NoModel, Tensor(Tensor, Tensor)>;

Platform& cpu() {
  static Platform p = Platform::cpu();
  return p;
}

struct Data {
  std::vector<float> x = bench::random_floats(static_cast<size_t>(N * H * W * C), -1.f, 1.f, 1);  // NHWC
  std::vector<float> w = bench::random_floats(static_cast<size_t>(K * K * C * O), -1.f, 1.f, 2);  // HWIO
  std::vector<float> y = std::vector<float>(static_cast<size_t>(N * H * W * O));                  // NHWC
};

// Cleared at the end of main: executables must not outlive main (LLVM's
// statics are gone by the time static destructors run).
struct RadixCase {
  std::unique_ptr<ConvExe> exe;
  Buffer x, w;
  double compile_ms = 0;
};
std::unique_ptr<Data> g_data;
std::unique_ptr<RadixCase> g_radix;

Data& data() {
  if (!g_data) g_data = std::make_unique<Data>();
  return *g_data;
}

RadixCase& radix_case() {
  if (!g_radix) {
    g_radix = std::make_unique<RadixCase>();
    const Shape sx(DType::kF32, {N, H, W, C}), sw(DType::kF32, {K, K, C, O});
    ConvOptions o;
    o.padding = Padding::same();
    auto exe = must(compile_fn(cpu(), [o](Tensor x, Tensor w) { return conv2d(x, w, o); }, sx, sw), "compile conv2d");
    if (exe.executable().stats().schedule_fell_back) bench::fail("the conv2d schedule fell back to plain loops");
    g_radix->compile_ms = exe.executable().stats().total_ms;
    g_radix->exe = std::make_unique<ConvExe>(std::move(exe));
    g_radix->x = must(cpu().buffer(sx, data().x), "buffer x");
    g_radix->w = must(cpu().buffer(sw, data().w), "buffer w");
  }
  return *g_radix;
}

// The definition, loop by loop (compiled -O3 like the rest of the bench).
void naive_conv(const float* x, const float* w, float* y) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < H; ++oh)
      for (int64_t ow = 0; ow < W; ++ow) {
        float* out = y + ((n * H + oh) * W + ow) * O;
        for (int64_t o = 0; o < O; ++o) out[o] = 0.f;
        for (int64_t kh = 0; kh < K; ++kh) {
          const int64_t ih = oh + kh - 1;
          if (ih < 0 || ih >= H) continue;
          for (int64_t kw = 0; kw < K; ++kw) {
            const int64_t iw = ow + kw - 1;
            if (iw < 0 || iw >= W) continue;
            const float* in = x + ((n * H + ih) * W + iw) * C;
            const float* wk = w + (kh * K + kw) * C * O;
            for (int64_t c = 0; c < C; ++c)
              for (int64_t o = 0; o < O; ++o) out[o] += in[c] * wk[c * O + o];
          }
        }
      }
}

#ifdef RADIX_HAVE_DNNL
struct Dnnl {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::convolution_forward conv;
  dnnl::memory src, wts, dst;
  std::string impl;

  Dnnl() {
    using md = dnnl::memory::desc;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::dims sd = {N, C, H, W}, wd = {O, C, K, K}, dd = {N, O, H, W};
    md src_md(sd, dt::f32, tag::nhwc), dst_md(dd, dt::f32, tag::nhwc), user_w_md(wd, dt::f32, tag::hwio);
    md any_w_md(wd, dt::f32, tag::any);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
                                      any_w_md, dst_md, {1, 1}, {1, 1}, {1, 1});
    dnnl::convolution_forward::primitive_desc pd(d, eng);
    impl = pd.impl_info_str();
    conv = dnnl::convolution_forward(pd);
    src = dnnl::memory(src_md, eng, data().x.data());
    dst = dnnl::memory(dst_md, eng, data().y.data());
    dnnl::memory user_w(user_w_md, eng, data().w.data());
    wts = dnnl::memory(pd.weights_desc(), eng);
    dnnl::reorder(user_w, wts).execute(strm, user_w, wts);
    strm.wait();
  }
  void run() {
    conv.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, dst}});
    strm.wait();
  }
};
std::unique_ptr<Dnnl> g_dnnl;
Dnnl& dnnl_case() {
  if (!g_dnnl) g_dnnl = std::make_unique<Dnnl>();
  return *g_dnnl;
}
#endif

double max_rel_err(const std::vector<float>& x, const std::vector<float>& ref) {
  if (x.size() != ref.size()) return INFINITY;
  double e = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::fabs(double(x[i]) - ref[i]) / std::max(std::fabs(double(ref[i])), 1.0);
    if (!(d <= e)) e = d;
  }
  return e;
}

void check(const std::string& what, double err) {
  // 576-term f32 sums of products of values in [-1, 1) in different orders.
  std::printf("check %-24s max_rel_err %.3g %s\n", what.c_str(), err, err < 1e-4 ? "OK" : "FAIL");
  if (!(err < 1e-4)) bench::fail("conv2d result mismatch: " + what);
}

void set_flops(benchmark::State& state) {
  state.counters["GFLOP"] = benchmark::Counter(kFlop / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_RadixConv2d(benchmark::State& state) {
  RadixCase& rc = radix_case();
  for (auto _ : state) {
    Result<Buffer> out = rc.exe->call(rc.x, rc.w);
    benchmark::DoNotOptimize(out);
    if (!out.ok()) state.SkipWithError(out.status().to_string().c_str());
  }
  set_flops(state);
}

void BM_NaiveConv2d(benchmark::State& state) {
  Data& d = data();
  for (auto _ : state) {
    naive_conv(d.x.data(), d.w.data(), d.y.data());
    benchmark::ClobberMemory();
  }
  set_flops(state);
}

BENCHMARK(BM_RadixConv2d)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NaiveConv2d)->Unit(benchmark::kMillisecond)->UseRealTime();

#ifdef RADIX_HAVE_DNNL
void BM_OneDnnConv2d(benchmark::State& state) {
  Dnnl& dn = dnnl_case();
  for (auto _ : state) {
    dn.run();
    benchmark::ClobberMemory();
  }
  set_flops(state);
}
BENCHMARK(BM_OneDnnConv2d)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace

int main(int argc, char** argv) {
  bench::keep_large_allocations_warm();
#ifdef RADIX_HAVE_DNNL
  // One thread, as Radix: Debian's oneDNN runs on OpenMP (libgomp, loaded with
  // it), which read OMP_NUM_THREADS before main; set the count through its API.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) set(1);
  else std::printf("note: omp_set_num_threads not found: oneDNN may use several threads\n");
#endif

  Data& d = data();
  std::vector<float> ref(d.y.size());
  naive_conv(d.x.data(), d.w.data(), ref.data());
  RadixCase& rc = radix_case();
  check("radix vs naive", max_rel_err(must(must(rc.exe->call(rc.x, rc.w), "radix conv").to_host<float>(), "to_host"), ref));
#ifdef RADIX_HAVE_DNNL
  const dnnl_version_t* v = dnnl_version();
  Dnnl& dn = dnnl_case();
  dn.run();
  check("onednn vs naive", max_rel_err(d.y, ref));
  std::printf("oneDNN %d.%d.%d, implementation: %s\n", v->major, v->minor, v->patch, dn.impl.c_str());
#else
  std::printf("note: built without oneDNN (libdnnl-dev): comparing against the naive -O3 loop only\n");
#endif
  std::printf("radix compile: %.1f ms\n", rc.compile_ms);
  std::fflush(stdout);

  bench::CollectingReporter reporter;
  bench::run_benchmarks(argc, argv, reporter);

  const double r = reporter.median("BM_RadixConv2d", "GFLOP");
  const double nv = reporter.median("BM_NaiveConv2d", "GFLOP");
  std::printf("\nconv2d 3x3 same, 1x56x56x64 -> 64, f32, 1 thread (medians of %zu runs):\n",
              reporter.count("BM_RadixConv2d", "GFLOP"));
  if (r > 0 && nv > 0) std::printf("  radix %.1f GFLOP/s, naive -O3 loop %.1f GFLOP/s, ratio %.2f\n", r, nv, r / nv);
#ifdef RADIX_HAVE_DNNL
  const double dnn = reporter.median("BM_OneDnnConv2d", "GFLOP");
  if (r > 0 && dnn > 0) std::printf("  radix %.1f GFLOP/s, oneDNN %.1f GFLOP/s, ratio %.2f\n", r, dnn, r / dnn);
  g_dnnl.reset();
#endif
  g_radix.reset();
  return 0;
}
