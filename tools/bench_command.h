// `radix bench`: Radix against its peers (OpenBLAS, oneDNN, memcpy, hand-written
// loops) in one run, one table row per case and thread count.
//
// The driver (bench_command.cc) parses the options, prints the header, calls
// each row source below and prints the table. A row source (bench_kernels.cc,
// bench_llm.cc) checks each case against a reference, measures it with
// measure_interleaved() (the LLM rows: their own interleaved rounds) and
// appends a BenchRow to the BenchTable.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "radix/core/shape.h"
#include "radix/runtime/buffer.h"

namespace radix::cli {

int run_bench(int argc, char** argv);
extern const char* kBenchUsage;

namespace bench {

struct BenchOptions {
  std::vector<int> threads;  // thread counts, each case runs once per entry
  int repetitions = 5;       // timed repetitions per measurement; medians are reported
  std::string filter;        // only cases whose name contains it (empty: all)
  bool quick = false;        // smaller sizes, fewer repetitions, shorter timed loops
  double min_loop_s = 0.2;   // each timed loop runs at least this long (or one call)
  std::string write_models_dir;  // --write-models: write the LLM rows' models there, bench nothing
  // llama.cpp's llama-bench, the LLM rows' llama.cpp peer: --llama-bench, else
  // default_llama_bench_path() when that file exists; empty: no llama.cpp columns.
  std::string llama_bench;
  // The CPU Radix compiles for (CompileOptions::codegen.target_cpu; --target-cpu):
  // "host", or an LLVM CPU name whose instructions this host runs ("znver3":
  // the AVX2 schedule, measured on an AVX-512 host against AVX2 peers).
  std::string target_cpu = "host";
  // Facts about the host, filled in by run_bench.
  int cores = 1;             // cores this process may run on (sched_getaffinity)
  int64_t l3_bytes = 0;      // last-level cache size (0: unknown): rows note data that fits in it

  bool wants(const std::string& case_name) const {
    return filter.empty() || case_name.find(filter) != std::string::npos;
  }
};

// One peer's figure in a row. NaN: not measured (failed or unavailable).
struct PeerValue {
  std::string name;  // e.g. "openblas", "onednn", "memcpy", "C++ -O3"
  double value = NAN;
};

// One table row: a case at one thread count. Values are rates (higher is
// better) in `unit`; the ratio printed for each peer is radix / peer.
struct BenchRow {
  std::string name;      // case name, what --filter matches
  int threads = 1;
  std::string unit;      // "GFLOP/s", "GB/s", "tok/s"
  double radix = NAN;    // NaN: not measured (e.g. its check failed)
  std::vector<PeerValue> peers;
  std::string note;      // optional, printed in a last column
};

// Collects the rows and the checks' verdicts. Consecutive rows with the same
// unit and the same peer names share one markdown table.
class BenchTable {
 public:
  // Appends a row and prints a one-line summary of it at once (progress).
  void add(BenchRow row);
  // Records a correctness check: `errors` lists (what, max error) pairs, each
  // against `tolerance`. Prints one line; a failure prints FAIL and makes
  // run_bench exit 1. Returns whether every error is below the tolerance.
  bool check(const std::string& what, const std::vector<std::pair<std::string, double>>& errors,
             double tolerance, const std::string& metric);
  // Records a failure that is not a numeric check (an error while running).
  void fail(const std::string& what, const std::string& why);
  bool failed() const { return failed_; }
  const std::vector<BenchRow>& rows() const { return rows_; }
  // The markdown tables.
  void print(std::FILE* out) const;

 private:
  std::vector<BenchRow> rows_;
  bool failed_ = false;
};

// Something to time: `setup` (optional: set thread counts, ...) runs before
// each timed loop, `run` is one call.
struct Contender {
  std::string name;
  std::function<void()> run;
  std::function<void()> setup;
};

// Times every contender: one calibration loop each, then `repetitions`
// rounds; each round runs every contender's timed loop once (the start
// rotating round by round), so slow phases of a shared machine hit all of
// them alike. A loop repeats `run` until it lasts opts.min_loop_s (a call
// longer than that runs once). Returns the median seconds per call of each
// contender, in order.
std::vector<double> measure_interleaved(const std::vector<Contender>& contenders, const BenchOptions& opts);

// The median of v (the mean of the middle two for an even count); NaN when empty.
double median(std::vector<double> v);

// The sum of n floats, vectorized (the 'read' peer: the machine's read
// bandwidth when the data is larger than the caches).
double sum_floats(const float* p, size_t n);

// Max over i of |got[i] - ref[i]| / max(|ref[i]|, floor): relative where the
// reference is above `floor`, absolute (scaled by floor) below. NaN-safe: a
// NaN anywhere gives NaN (which fails every check).
double max_rel_err(const float* got, const float* ref, size_t n, double floor);

// Fills with reproducible values in [lo, hi) (splitmix64: fast for 100M+ values).
void fill_random(float* p, size_t n, float lo, float hi, uint64_t seed);
// A CPU buffer of `shape` (f32) holding fill_random's values; throws on failure.
Buffer upload_random(const Shape& shape, float lo, float hi, uint64_t seed);

// The read-bandwidth peer: run() reads (sums) n floats at p once, split over
// `threads` threads (the caller and threads - 1 workers, created once and
// asleep between runs). An -O3 loop with 16 partial sums, cloned for
// AVX-512 / AVX2 where the compiler supports it.
class ParallelRead {
 public:
  ParallelRead(const float* p, size_t n, int threads);
  ~ParallelRead();
  ParallelRead(const ParallelRead&) = delete;
  ParallelRead& operator=(const ParallelRead&) = delete;
  void run();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Row sources. add_*_rows appends the rows of every case that opts.wants(),
// for every thread count in opts.threads; *_case_names lists the cases at
// this run's sizes (--quick changes some) so that run_bench can refuse a
// --filter that matches nothing before it starts.
void add_kernel_rows(const BenchOptions& opts, BenchTable& table);        // bench_kernels.cc
std::vector<std::string> kernel_case_names(const BenchOptions& opts);     // bench_kernels.cc
void add_llm_rows(const BenchOptions& opts, BenchTable& table);           // bench_llm.cc
std::vector<std::string> llm_case_names(const BenchOptions& opts);        // bench_llm.cc
// --write-models: writes the random-weight models of the LLM rows into
// opts.write_models_dir; returns the process exit status.
int write_llm_models(const BenchOptions& opts);                           // bench_llm.cc
// Where scripts/build-llama-cpp.sh puts llama-bench:
// ${RADIX_LLAMA_CPP_DIR:-$HOME/.cache/radix/llama.cpp}/build/bin/llama-bench.
std::string default_llama_bench_path();                                   // bench_llm.cc
// The first line `llama-bench --version` prints ("" when it prints nothing).
std::string llama_bench_version(const std::string& path);                 // bench_llm.cc

}  // namespace bench
}  // namespace radix::cli
