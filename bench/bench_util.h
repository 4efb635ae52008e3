// Shared helpers for the Radix benchmarks: unwrap Results loudly, seeded data,
// and a console reporter that also keeps each benchmark's per-repetition
// counters so main() can print medians and ratios at the end.
#pragma once

#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "radix/radix.h"

namespace radix::bench {

template <class T>
T must(Result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "FATAL: %s: %s\n", what, r.status().to_string().c_str());
    std::exit(2);
  }
  return std::move(r).value();
}

[[noreturn]] inline void fail(const std::string& msg) {
  std::fprintf(stderr, "FATAL: %s\n", msg.c_str());
  std::exit(1);
}

inline std::vector<float> random_floats(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Executable::call allocates its outputs per call. Keep large blocks on the
// heap (no mmap/munmap per call), so repeated calls reuse warm pages instead of
// page-faulting fresh ones: the benchmark measures the compiled code, not page faults.
inline void keep_large_allocations_warm() {
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// Console output as usual, plus: counter values of every iteration run, by
// benchmark name (without the "/repeats:N" suffix).
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  CollectingReporter() : ConsoleReporter(isatty(fileno(stdout)) ? OO_ColorTabular : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      std::string name = r.run_name.function_name;
      if (!r.run_name.args.empty()) name += "/" + r.run_name.args;
      for (const auto& [k, c] : r.counters) values_[name][k].push_back(c.value);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // Median of a counter over the repetitions; 0 when the benchmark did not run.
  double median(const std::string& bench, const std::string& counter) const {
    auto b = values_.find(bench);
    if (b == values_.end()) return 0;
    auto c = b->second.find(counter);
    if (c == b->second.end() || c->second.empty()) return 0;
    std::vector<double> v = c->second;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  size_t count(const std::string& bench, const std::string& counter) const {
    auto b = values_.find(bench);
    if (b == values_.end()) return 0;
    auto c = b->second.find(counter);
    return c == b->second.end() ? 0 : c->second.size();
  }

 private:
  std::map<std::string, std::map<std::string, std::vector<double>>> values_;
};

// Runs the registered benchmarks with defaults suited to a noisy shared
// machine (5 repetitions, interleaved, aggregates printed too) unless the
// command line sets them.
inline void run_benchmarks(int argc, char** argv, CollectingReporter& reporter) {
  std::vector<char*> args(argv, argv + argc);
  auto has = [&](const char* flag) {
    for (char* a : args)
      if (std::string(a).rfind(flag, 0) == 0) return true;
    return false;
  };
  static char reps[] = "--benchmark_repetitions=5";
  static char inter[] = "--benchmark_enable_random_interleaving=true";
  if (!has("--benchmark_repetitions")) args.push_back(reps);
  if (!has("--benchmark_enable_random_interleaving")) args.push_back(inter);
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) std::exit(1);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
}

}  // namespace radix::bench
