// Donation: one KV-cache step (a [layers, 1, heads, dim] token slice written
// by dynamic_update_slice into a [layers, seq, heads, dim] f32 cache) for
// growing seq, with the cache moved into the call (donated: updated in
// place) against lent (the call copies the cache first, as any non-donating
// runtime must). Donated time should stay flat as the cache grows; the lent
// one grows with it. Checked against a host update before timing.
//
//   ./build/bench/radix_bench_donation
#include <cstring>
#include <map>
#include <memory>

#include "bench_util.h"

using namespace radix;
using radix::bench::must;

namespace {

constexpr int64_t kLayers = 4, kHeads = 8, kDim = 64;
const int64_t kSeqs[] = {256, 1024, 4096};

Platform& cpu() {
  static Platform p = Platform::cpu();
  return p;
}

using Step = ExeWithWeights<NoModel, Tensor(Tensor, Tensor, Tensor, Tensor)>;

struct Case {
  std::unique_ptr<Step> exe;
  Buffer cache, upd, layer, pos;
};
std::map<int64_t, Case>* g_cases = nullptr;

Case make_case(int64_t seq) {
  Shape cache_s(DType::kF32, {kLayers, seq, kHeads, kDim}), upd_s(DType::kF32, {1, 1, kHeads, kDim}),
      idx(DType::kI32);
  auto step = [](Tensor cache, Tensor upd, Tensor layer, Tensor pos) {
    return dynamic_update_slice(cache, upd, {{0, layer}, {1, pos}}).reuse_buffer(cache);
  };
  Case c;
  c.exe = std::make_unique<Step>(must(compile_fn(cpu(), step, cache_s, upd_s, idx, idx), "compile"));
  std::vector<float> host(static_cast<size_t>(cache_s.count()), 0.5f);
  std::vector<float> u = bench::random_floats(static_cast<size_t>(upd_s.count()), -1, 1, 7);
  c.cache = must(cpu().buffer(cache_s, host), "cache");
  c.upd = must(cpu().buffer(upd_s, u), "update");
  c.layer = must(cpu().scalar<int32_t>(2), "layer");
  c.pos = must(cpu().scalar<int32_t>(static_cast<int32_t>(seq / 2)), "pos");
  // Check once: the slice lands where the host loop puts it, nothing else moves.
  c.cache = must(c.exe->call(std::move(c.cache), c.upd, c.layer, c.pos), "check call");
  std::vector<float> got = must(c.cache.to_host<float>(), "check read");
  for (int64_t j = 0; j < kHeads * kDim; ++j)
    host[static_cast<size_t>((2 * seq + seq / 2) * kHeads * kDim + j)] = u[static_cast<size_t>(j)];
  if (got != host) bench::fail("donated KV step gave a wrong cache");
  return c;
}

void BM_KvStepDonated(benchmark::State& st) {
  Case& c = g_cases->at(st.range(0));
  for (auto _ : st) c.cache = must(c.exe->call(std::move(c.cache), c.upd, c.layer, c.pos), "call");
  st.counters["us"] = benchmark::Counter(1e-6, benchmark::Counter::kIsIterationInvariantRate |
                                                   benchmark::Counter::kInvert);
}

void BM_KvStepLent(benchmark::State& st) {
  Case& c = g_cases->at(st.range(0));
  for (auto _ : st) {
    Buffer out = must(c.exe->call(c.cache, c.upd, c.layer, c.pos), "call");
    benchmark::DoNotOptimize(out.device_ptr());
  }
  st.counters["us"] = benchmark::Counter(1e-6, benchmark::Counter::kIsIterationInvariantRate |
                                                   benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(BM_KvStepDonated)->Arg(256)->Arg(1024)->Arg(4096)->UseRealTime();
BENCHMARK(BM_KvStepLent)->Arg(256)->Arg(1024)->Arg(4096)->UseRealTime();

int main(int argc, char** argv) {
  bench::keep_large_allocations_warm();
  std::map<int64_t, Case> cases;
  for (int64_t s : kSeqs) cases.emplace(s, make_case(s));
  g_cases = &cases;
  bench::CollectingReporter reporter;
  bench::run_benchmarks(argc, argv, reporter);
  std::printf("\nKV-cache step, median us per call (cache %lld x seq x %lld x %lld f32):\n", (long long)kLayers,
              (long long)kHeads, (long long)kDim);
  for (int64_t s : kSeqs) {
    std::string arg = "/";
    arg += std::to_string(s);
    double d = reporter.median("BM_KvStepDonated" + arg, "us");
    double l = reporter.median("BM_KvStepLent" + arg, "us");
    std::printf("  seq %5lld (%6.1f MiB): donated %8.2f us, lent %8.2f us, lent / donated %.1f\n", (long long)s,
                double(kLayers * s * kHeads * kDim * 4) / (1 << 20), d, l, d > 0 ? l / d : 0.0);
  }
  return 0;
}
