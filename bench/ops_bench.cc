// Two op rows of the performance table, each as a ratio against a peer
// measured in the same run:
//  * embedding lookup: 512 rows of a [32000, 1024] f32 table by id, as GB/s
//    of row bytes read + written, against memcpy of the same rows;
//  * row softmax over [4096, 4096] f32, as GB/s of input + output bytes,
//    against a hand-written three-pass loop compiled -O3 (std::exp).
// Both results are checked against host loops before timing.
//
//   ./build/bench/radix_bench_ops
#include <cmath>
#include <cstring>
#include <memory>

#include "bench_util.h"

using namespace radix;
using radix::bench::must;

namespace {

constexpr int64_t kVocab = 32000, kDim = 1024, kIds = 512;
constexpr int64_t kRows = 4096, kCols = 4096;

Platform& cpu() {
  static Platform p = Platform::cpu();
  return p;
}

using Fn2 = ExeWithWeights<NoModel, Tensor(Tensor, Tensor)>;
using Fn1 = ExeWithWeights<NoModel, Tensor(Tensor)>;

struct State {
  std::unique_ptr<Fn2> embed;
  std::unique_ptr<Fn1> softmax_exe;
  std::vector<float> table, x, host_out;
  std::vector<int32_t> ids;
  Buffer table_buf, ids_buf, x_buf;
};
State* g_state = nullptr;

void host_softmax(const float* x, float* y) {
  for (int64_t r = 0; r < kRows; ++r) {
    const float* in = x + r * kCols;
    float* out = y + r * kCols;
    float m = -INFINITY;
    for (int64_t c = 0; c < kCols; ++c) m = std::max(m, in[c]);
    float s = 0;
    for (int64_t c = 0; c < kCols; ++c) {
      out[c] = std::exp(in[c] - m);
      s += out[c];
    }
    const float inv = 1.f / s;
    for (int64_t c = 0; c < kCols; ++c) out[c] *= inv;
  }
}

State& state() {
  if (g_state) return *g_state;
  auto* st = new State;
  const Shape ts(DType::kF32, {kVocab, kDim}, {"v", "d"}), is(DType::kI32, {kIds}, {"s"});
  const Shape xs(DType::kF32, {kRows, kCols}, {"r", "c"});
  st->embed = std::make_unique<Fn2>(must(compile_fn(cpu(), [](Tensor t, Tensor i) { return embedding(t, i); }, ts, is),
                                         "compile embedding"));
  st->softmax_exe = std::make_unique<Fn1>(must(compile_fn(cpu(), [](Tensor x) { return softmax(x, "c"); }, xs),
                                               "compile softmax"));
  st->table = bench::random_floats(static_cast<size_t>(kVocab * kDim), -1, 1, 1);
  std::mt19937 rng(2);
  for (int64_t i = 0; i < kIds; ++i) st->ids.push_back(static_cast<int32_t>(rng() % kVocab));
  st->x = bench::random_floats(static_cast<size_t>(kRows * kCols), -8, 8, 3);
  st->host_out.resize(st->x.size());
  st->table_buf = must(cpu().buffer(ts, st->table), "table");
  st->ids_buf = must(cpu().buffer(is, st->ids), "ids");
  st->x_buf = must(cpu().buffer(xs, st->x), "x");
  g_state = st;
  return *st;
}

void check() {
  State& s = state();
  std::vector<float> e = must(must(s.embed->call(s.table_buf, s.ids_buf), "embed").to_host<float>(), "to_host");
  for (int64_t i = 0; i < kIds; ++i)
    if (std::memcmp(&e[static_cast<size_t>(i * kDim)], &s.table[static_cast<size_t>(s.ids[static_cast<size_t>(i)] * kDim)],
                    kDim * sizeof(float)) != 0)
      bench::fail("embedding row " + std::to_string(i) + " differs from the table");
  std::vector<float> y = must(must(s.softmax_exe->call(s.x_buf), "softmax").to_host<float>(), "to_host");
  host_softmax(s.x.data(), s.host_out.data());
  double err = 0;
  for (size_t i = 0; i < y.size(); ++i) err = std::max(err, std::fabs(double(y[i]) - s.host_out[i]) / (s.host_out[i] + 1e-30));
  std::printf("check: embedding rows exact; softmax max relative error %.3g %s\n", err, err < 1e-5 ? "OK" : "FAIL");
  if (!(err < 1e-5)) bench::fail("softmax differs from the host loop");
}

void bytes(benchmark::State& st, double b) {
  st.counters["GB"] = benchmark::Counter(b / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
constexpr double kEmbedBytes = 2.0 * kIds * kDim * sizeof(float);
constexpr double kSoftmaxBytes = 2.0 * kRows * kCols * sizeof(float);

void BM_RadixEmbedding(benchmark::State& st) {
  State& s = state();
  for (auto _ : st) {
    Result<Buffer> out = s.embed->call(s.table_buf, s.ids_buf);
    benchmark::DoNotOptimize(out);
  }
  bytes(st, kEmbedBytes);
}
void BM_MemcpyRows(benchmark::State& st) {
  State& s = state();
  std::vector<float> out(static_cast<size_t>(kIds * kDim));
  for (auto _ : st) {
    for (int64_t i = 0; i < kIds; ++i)
      std::memcpy(&out[static_cast<size_t>(i * kDim)], &s.table[static_cast<size_t>(s.ids[static_cast<size_t>(i)] * kDim)],
                  kDim * sizeof(float));
    benchmark::ClobberMemory();
  }
  bytes(st, kEmbedBytes);
}
void BM_RadixSoftmax(benchmark::State& st) {
  State& s = state();
  for (auto _ : st) {
    Result<Buffer> out = s.softmax_exe->call(s.x_buf);
    benchmark::DoNotOptimize(out);
  }
  bytes(st, kSoftmaxBytes);
}
void BM_HostSoftmaxO3(benchmark::State& st) {
  State& s = state();
  for (auto _ : st) {
    host_softmax(s.x.data(), s.host_out.data());
    benchmark::ClobberMemory();
  }
  bytes(st, kSoftmaxBytes);
}

BENCHMARK(BM_RadixEmbedding)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MemcpyRows)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RadixSoftmax)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HostSoftmaxO3)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  bench::keep_large_allocations_warm();
  check();
  std::fflush(stdout);
  bench::CollectingReporter reporter;
  bench::run_benchmarks(argc, argv, reporter);
  auto row = [&](const char* what, const char* a, const char* b, const char* peer) {
    const double x = reporter.median(a, "GB"), y = reporter.median(b, "GB");
    if (x > 0 && y > 0) std::printf("%s: radix %.2f GB/s, %s %.2f GB/s, ratio %.2f\n", what, x, peer, y, x / y);
  };
  std::printf("\n");
  row("embedding lookup 512 rows of [32000,1024] f32", "BM_RadixEmbedding", "BM_MemcpyRows", "memcpy of the rows");
  row("row softmax [4096,4096] f32", "BM_RadixSoftmax", "BM_HostSoftmaxO3", "hand-written -O3 loop");
  delete g_state;
  return 0;
}
