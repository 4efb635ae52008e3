// radix bench: the driver. Options, the OpenBLAS kernel choice (re-exec),
// the header (CPU, ISA, cores, OpenBLAS / oneDNN builds, date), the timing
// loop shared by every row source, and the markdown table.
#include "tools/bench_command.h"

#include "radix/backends/cpu/cpu_options.h"
#include "radix/backends/cpu/object_jit.h"
#include "radix/backends/cpu/schedule.h"
#include "radix/runtime/platform.h"

#include <cblas.h>
#include <dlfcn.h>
#include <dnnl.h>
#include <malloc.h>
#include <sched.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace radix::cli {

const char* kBenchUsage =
    "usage: radix bench [options]\n"
    "\n"
    "Measures Radix against its peers in one run and prints, for each case and thread count,\n"
    "Radix's figure, each peer's figure and the ratio radix/peer (above 1: Radix is faster),\n"
    "as markdown tables. Every case is first checked against a reference at every thread count;\n"
    "a mismatch prints FAIL and the command exits 1. Tolerances: GEMM-like cases\n"
    "max |x-ref|/max(|ref|,1) < 1e-4 * max(1, K/1024) against OpenBLAS (itself checked against\n"
    "f64 dot products on 256 sampled entries); elementwise 1e-6 and RMSNorm 1e-5 on the same\n"
    "metric, softmax 1e-5 relative, against f64 host loops.\n"
    "\n"
    "  cases (GFLOP/s): matmul 256^3 / 1024^3 / 4096^3 (f32), linear 128x768 * W[2048,768]^T and\n"
    "         128x4096 * W[11008,4096]^T, attention scores q[12,128,64] . k[12,128,64];\n"
    "         peers OpenBLAS sgemm and oneDNN sgemm\n"
    "  (GB/s of weight bytes): decode matvec x[1,4096] . W[4096,4096]^T; peers OpenBLAS sgemv and\n"
    "         sgemm, oneDNN sgemm, and 'read' (an -O3 loop summing W: the read bandwidth)\n"
    "  (Gweight/s): the same mat-vec with W kept quantized (int8 per channel, Q8_0, Q4_0, and\n"
    "         Q8_0x16 / Q4_0x16, their 16 rows interleaved (LlamaGenerator holds Q4_0 so on x86):\n"
    "         quantized_matmul, x as int8 blocks); peers the same with x kept f32 ('radix f32 x'),\n"
    "         the f32 product by Radix and by OpenBLAS sgemv, and 'read' (the quantized bytes at\n"
    "         the read bandwidth, as weights per second)\n"
    "  (GB/s of bytes read + written): elementwise chain relu(a*b+c)*0.5-a over 16M f32, row\n"
    "         softmax and RMSNorm over [4096,4096]; peers a C++ -O3 loop and memcpy of the\n"
    "         same traffic\n"
    "  (tok/s): llm stories15M / stories110M f32 / bf16 / q8_0 / q4_0 prefill 128 and decode 64:\n"
    "         Llamas of llama2.c's stories15M (dim 288, 6 layers, 6 heads, hidden 768, seq 256) and\n"
    "         stories110M (dim 768, 12 layers, 12 heads, hidden 2048, seq 1024) shapes, vocab 32000,\n"
    "         tied classifier, with\n"
    "         seeded random f32 weights (uniform +-1/sqrt(fan_in), norms 1), run by LlamaGenerator\n"
    "         with the matrices in memory as f32, then as bf16 (converted on load; activations f32),\n"
    "         then as GGUF's Q8_0 and Q4_0 blocks (quantized on load with llama.cpp's rounding and\n"
    "         kept packed, the tied classifier too, rows interleaved by 16 where the host's integer\n"
    "         kernels read them so (Q4_0 on AVX2); embedding table f32; decode steps round the\n"
    "         activations to int8 blocks and the KV cache is f16, as llama.cpp does: the\n"
    "         generator's defaults for quantized matrices; f32 and bf16 rows keep an f32 cache).\n"
    "         prefill: one 128-token forward after a reset; peer 'sgemm-rate': the tok/s at\n"
    "         OpenBLAS sgemm's GFLOP/s on [128,dim].[dim,hidden], 2 flops per matmul parameter per\n"
    "         token (the classifier once per prefill; attention not counted). decode: 64 one-token\n"
    "         forwards after the first; peer 'roofline': the tok/s of reading every weight read per\n"
    "         token (all but the embedding table) once, at the bandwidth of a t-thread -O3 read of a\n"
    "         buffer that large. Checked first: prefill logits vs as many decode steps (< 1e-3;\n"
    "         q8_0 / q4_0, whose decode steps round activations: max error < 3e-2 of the largest logit).\n"
    "         Peer 'llama.cpp' (when its llama-bench is there, see --llama-bench): llama-bench\n"
    "         -p 128 -n 64 -t t -r 1 on a GGUF of the same weights (F32; for the bf16 / q8_0 / q4_0\n"
    "         rows BF16 / Q8_0 / Q4_0 matrices, the embedding table too, and F32 norms; llama.cpp's\n"
    "         default f16 KV cache), one process per round,\n"
    "         interleaved with the others; median tok/s over the rounds. Its output is not\n"
    "         checked, only that it loaded the model's parameter count.\n"
    "         Also printed, per model and thread count: weight load time, and the compile time of\n"
    "         the decode + prefill executables (compiled side by side, LlamaGenerator::compile_steps)\n"
    "         cold (an executable-cache miss, in a temp folder)\n"
    "         and again from that cache (a hit)\n"
    "\n"
    "  --threads LIST        thread counts, comma separated (default: 1,N where N is the number\n"
    "                        of cores this process may run on; just 1 on one core). Radix is\n"
    "                        compiled with CompileOptions::codegen.cpu.threads = t, the peers\n"
    "                        are set to t threads\n"
    "  --repetitions R       timed repetitions per measurement, medians reported (default 5;\n"
    "                        3 with --quick). Radix and its peers alternate within each\n"
    "                        round, the start rotating round by round\n"
    "  --filter SUBSTR       only the cases whose name contains SUBSTR (e.g. matmul, matvec,\n"
    "                        linear, attention, elementwise, softmax, rmsnorm, llm, stories15M,\n"
    "                        decode; one that matches nothing lists the case names)\n"
    "  --quick               a smoke test: no matmul 4096^3 nor 128x4096 linear, elementwise over\n"
    "                        4M f32, softmax and RMSNorm over [1024,4096], only stories15M with\n"
    "                        prefill 32 and decode 16; 3 repetitions of timed loops >= 0.05 s\n"
    "                        (instead of 0.2 s)\n"
    "  --llama-bench PATH    llama.cpp's llama-bench, the LLM rows' llama.cpp peer (default:\n"
    "                        $RADIX_LLAMA_CPP_DIR, else ~/.cache/radix/llama.cpp, + /build/bin/\n"
    "                        llama-bench, where scripts/build-llama-cpp.sh builds it, when that\n"
    "                        file exists; otherwise the LLM rows have no llama.cpp columns);\n"
    "                        'none': no llama.cpp columns\n"
    "  --write-models DIR    measure nothing: write the LLM rows' random models (those --filter\n"
    "                        and --quick select) to DIR, each as <name>-random.safetensors (Radix's\n"
    "                        names and llama2c.* metadata: radix generate --model), .gguf (GGUF v3,\n"
    "                        F32, llama.cpp's names, a placeholder 32000-token vocabulary),\n"
    "                        -bf16.gguf (the same, BF16 matrices and F32 norms: the bf16 rows'\n"
    "                        llama.cpp model), -q8_0.gguf and -q4_0.gguf (Q8_0 / Q4_0 matrices,\n"
    "                        llama.cpp's rounding) and .bin (llama2.c checkpoint), so other engines run\n"
    "                        the same weights; every file is reopened and compared after writing.\n"
    "                        stories15M: ~60 MiB per file (safetensors ~95: it keeps the tied\n"
    "                        classifier's copy; bf16 GGUF ~30, q8_0 ~16, q4_0 ~9), stories110M\n"
    "                        ~420 MiB (~510; ~210, ~112, ~60)\n"
    "  --target-cpu NAME     the CPU Radix compiles for (CompileOptions::codegen.target_cpu; default\n"
    "                        host): an LLVM CPU name whose instructions this host runs. One without\n"
    "                        AVX-512 (znver3, haswell, x86-64-v3) on an AVX-512 host measures the\n"
    "                        AVX2 schedule against AVX2 peers: OpenBLAS's Haswell kernel (unless\n"
    "                        --openblas-core) and oneDNN held to AVX2 (DNNL_MAX_CPU_ISA=AVX2); the\n"
    "                        C++ loops, memcpy and llama.cpp run as built (RADIX_LLAMA_CPP_ISA=avx2\n"
    "                        scripts/build-llama-cpp.sh builds an AVX2 llama-bench: pass it with\n"
    "                        --llama-bench). The caches and clock stay the host's: a proxy\n"
    "  --openblas-core NAME  OpenBLAS kernel to run (OPENBLAS_CORETYPE; default SkylakeX on\n"
    "                        AVX-512 hosts, OpenBLAS's own choice elsewhere). OpenBLAS reads it\n"
    "                        when it loads, so radix bench re-executes itself once to apply it\n"
    "                        (also setting OPENBLAS_THREAD_TIMEOUT=22 unless it is set: OpenBLAS's\n"
    "                        idle threads then stop spinning after ~1 ms instead of ~100 ms, which\n"
    "                        would take cores from the Radix measurement after them)\n"
    "  --help                this text\n";

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// "95.1", "1234", "0.52": three significant digits or so, whatever the scale.
std::string fmt_value(double v) {
  if (!std::isfinite(v)) return "n/a";
  char b[32];
  if (std::fabs(v) >= 100) std::snprintf(b, sizeof b, "%.0f", v);
  else if (std::fabs(v) >= 10) std::snprintf(b, sizeof b, "%.1f", v);
  else std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

std::string fmt_ratio(double radix, double peer) {
  if (!std::isfinite(radix) || !std::isfinite(peer) || peer <= 0) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", radix / peer);
  return b;
}

}  // namespace

// ------------------------------------------------------------------ helpers

double max_rel_err(const float* got, const float* ref, size_t n, double floor) {
  double e = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = ref[i];
    const double d = std::fabs(static_cast<double>(got[i]) - r) / std::max(std::fabs(r), floor);
    if (!(d <= e)) e = d;  // NaN-propagating max
  }
  return e;
}

void fill_random(float* p, size_t n, float lo, float hi, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  const float scale = (hi - lo) / 16777216.f;  // 24 random bits -> [0, 1) * (hi - lo)
  for (size_t i = 0; i < n; ++i) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = lo + static_cast<float>(z >> 40) * scale;
  }
}

Buffer upload_random(const Shape& shape, float lo, float hi, uint64_t seed) {
  std::vector<float> host(static_cast<size_t>(shape.count()));
  fill_random(host.data(), host.size(), lo, hi, seed);
  Result<Buffer> b = Platform::cpu().buffer(shape, host);
  if (!b.ok()) throw std::runtime_error("upload " + shape.to_string() + ": " + b.status().to_string());
  return std::move(b).value();
}

std::vector<double> measure_interleaved(const std::vector<Contender>& cs, const BenchOptions& opts) {
  const size_t n = cs.size();
  // Calibration: enough calls for ~1/10 of a timed loop (at least one) give
  // the cost of one call, hence the loop length. It also warms caches / pages.
  std::vector<long> iters(n, 1);
  for (size_t i = 0; i < n; ++i) {
    if (cs[i].setup) cs[i].setup();
    const double want = opts.min_loop_s / 10;
    long calls = 0;
    const auto t0 = Clock::now();
    double el = 0;
    do {
      cs[i].run();
      ++calls;
      el = seconds_since(t0);
    } while (el < want);
    const double per_call = el / static_cast<double>(calls);
    iters[i] = per_call >= opts.min_loop_s ? 1 : std::min<long>(10'000'000, std::lround(std::ceil(opts.min_loop_s / per_call)));
  }
  std::vector<std::vector<double>> secs(n);
  for (int r = 0; r < opts.repetitions; ++r) {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (static_cast<size_t>(r) + k) % n;  // rotate who goes first
      if (cs[i].setup) cs[i].setup();
      const auto t0 = Clock::now();
      for (long it = 0; it < iters[i]; ++it) cs[i].run();
      secs[i].push_back(seconds_since(t0) / static_cast<double>(iters[i]));
    }
  }
  std::vector<double> med(n);
  for (size_t i = 0; i < n; ++i) med[i] = median(secs[i]);
  return med;
}

// ------------------------------------------------- the read-bandwidth peer

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RADIX_BENCH_READ_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RADIX_BENCH_READ_CLONES
#endif

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// 16 partial sums: -O3 vectorizes them without -ffast-math.
RADIX_BENCH_READ_CLONES double sum_floats(const float* p, size_t n) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += p[i + j];
  double s = 0;
  for (; i < n; ++i) s += p[i];
  for (float a : acc) s += a;
  return s;
}
namespace {
volatile double g_read_sink;  // keeps the sums alive
}  // namespace

// Workers wait on a generation counter (no spinning into the next
// measurement); slice i of n is [n * i / t, n * (i + 1) / t).
struct ParallelRead::State {
  const float* p;
  size_t n;
  int threads;
  std::vector<double> sums;
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable go, done;
  uint64_t generation = 0;
  int pending = 0;
  bool stop = false;
  void slice(int i) {
    const size_t lo = n * static_cast<size_t>(i) / static_cast<size_t>(threads);
    const size_t hi = n * static_cast<size_t>(i + 1) / static_cast<size_t>(threads);
    sums[static_cast<size_t>(i)] = sum_floats(p + lo, hi - lo);
  }
};

ParallelRead::ParallelRead(const float* p, size_t n, int threads) : s_(std::make_unique<State>()) {
  s_->p = p;
  s_->n = n;
  s_->threads = std::max(1, threads);
  s_->sums.assign(static_cast<size_t>(s_->threads), 0.0);
  for (int i = 1; i < s_->threads; ++i)
    s_->workers.emplace_back([st = s_.get(), i] {
      uint64_t seen = 0;
      for (;;) {
        {
          std::unique_lock<std::mutex> l(st->mu);
          st->go.wait(l, [&] { return st->stop || st->generation != seen; });
          if (st->stop) return;
          seen = st->generation;
        }
        st->slice(i);
        std::lock_guard<std::mutex> l(st->mu);
        if (--st->pending == 0) st->done.notify_one();
      }
    });
}

ParallelRead::~ParallelRead() {
  {
    std::lock_guard<std::mutex> l(s_->mu);
    s_->stop = true;
  }
  s_->go.notify_all();
  for (std::thread& w : s_->workers) w.join();
}

void ParallelRead::run() {
  State& st = *s_;
  if (st.threads > 1) {
    std::lock_guard<std::mutex> l(st.mu);
    st.pending = st.threads - 1;
    ++st.generation;
  }
  st.go.notify_all();
  st.slice(0);
  if (st.threads > 1) {
    std::unique_lock<std::mutex> l(st.mu);
    st.done.wait(l, [&] { return st.pending == 0; });
  }
  double total = 0;
  for (double v : st.sums) total += v;
  g_read_sink = total;
}

// -------------------------------------------------------------------- table

void BenchTable::add(BenchRow row) {
  std::printf("  %-36s t=%-3d radix %s %s", row.name.c_str(), row.threads, fmt_value(row.radix).c_str(),
              row.unit.c_str());
  for (const PeerValue& p : row.peers)
    std::printf(" | %s %s (%s)", p.name.c_str(), fmt_value(p.value).c_str(),
                (fmt_ratio(row.radix, p.value) + (std::isfinite(row.radix / p.value) ? "x" : "")).c_str());
  if (!row.note.empty()) std::printf("  [%s]", row.note.c_str());
  std::printf("\n");
  std::fflush(stdout);
  rows_.push_back(std::move(row));
}

bool BenchTable::check(const std::string& what, const std::vector<std::pair<std::string, double>>& errors,
                       double tolerance, const std::string& metric) {
  bool ok = true;
  std::string list;
  for (const auto& [who, err] : errors) {
    const bool good = err < tolerance;  // false for NaN
    ok = ok && good;
    char b[64];
    std::snprintf(b, sizeof b, "%.2g", err);
    list += (list.empty() ? "" : ", ") + who + " " + b + (good ? "" : " (FAIL)");
  }
  char tol[32];
  std::snprintf(tol, sizeof tol, "%.0e", tolerance);
  std::printf("  check %s: %s (%s < %s): %s\n", what.c_str(), list.c_str(), metric.c_str(), tol, ok ? "OK" : "FAIL");
  std::fflush(stdout);
  if (!ok) failed_ = true;
  return ok;
}

void BenchTable::fail(const std::string& what, const std::string& why) {
  std::printf("  FAIL %s: %s\n", what.c_str(), why.c_str());
  std::fflush(stdout);
  failed_ = true;
}

void BenchTable::print(std::FILE* out) const {
  size_t i = 0;
  while (i < rows_.size()) {
    // A group: consecutive rows with the same unit and peer names.
    auto same_kind = [](const BenchRow& a, const BenchRow& b) {
      if (a.unit != b.unit || a.peers.size() != b.peers.size()) return false;
      for (size_t k = 0; k < a.peers.size(); ++k)
        if (a.peers[k].name != b.peers[k].name) return false;
      return true;
    };
    size_t j = i + 1;
    while (j < rows_.size() && same_kind(rows_[i], rows_[j])) ++j;
    bool notes = false;
    for (size_t k = i; k < j; ++k) notes = notes || !rows_[k].note.empty();

    std::vector<std::vector<std::string>> cells;
    std::vector<std::string> head = {"case", "threads", "radix " + rows_[i].unit};
    for (const PeerValue& p : rows_[i].peers) {
      head.push_back(p.name);
      head.push_back("radix/" + p.name);
    }
    if (notes) head.push_back("note");
    cells.push_back(head);
    for (size_t k = i; k < j; ++k) {
      const BenchRow& r = rows_[k];
      std::vector<std::string> c = {r.name, std::to_string(r.threads), fmt_value(r.radix)};
      for (const PeerValue& p : r.peers) {
        c.push_back(fmt_value(p.value));
        c.push_back(fmt_ratio(r.radix, p.value));
      }
      if (notes) c.push_back(r.note);
      cells.push_back(c);
    }
    std::vector<size_t> w(head.size(), 3);
    for (const auto& row : cells)
      for (size_t c = 0; c < row.size(); ++c) w[c] = std::max(w[c], row[c].size());
    // Text columns left-aligned, numbers right-aligned (also in markdown).
    auto left = [&](size_t c) { return c == 0 || (notes && c + 1 == head.size()); };
    auto line = [&](const std::vector<std::string>& row) {
      std::string s = "|";
      for (size_t c = 0; c < row.size(); ++c) {
        const std::string pad(w[c] - row[c].size(), ' ');
        s += " " + (left(c) ? row[c] + pad : pad + row[c]) + " |";
      }
      std::fprintf(out, "%s\n", s.c_str());
    };
    std::fprintf(out, "\n");
    line(cells[0]);
    std::string rule = "|";
    for (size_t c = 0; c < head.size(); ++c)
      rule += left(c) ? " :" + std::string(w[c] - 1, '-') + " |" : " " + std::string(w[c] - 1, '-') + ": |";
    std::fprintf(out, "%s\n", rule.c_str());
    for (size_t k = 1; k < cells.size(); ++k) line(cells[k]);
    i = j;
  }
}

// ------------------------------------------------------------- the machine

namespace {

int affinity_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

// The first "model name" and "flags" lines of /proc/cpuinfo.
struct CpuInfo {
  std::string model = "unknown CPU";
  std::set<std::string> flags;
  bool has(const char* f) const { return flags.count(f) != 0; }
};

CpuInfo read_cpuinfo() {
  CpuInfo info;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  bool got_model = false, got_flags = false;
  while (std::getline(in, line) && !(got_model && got_flags)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && !got_model) {
      info.model = value;
      got_model = true;
    } else if (key == "flags" && !got_flags) {
      std::istringstream ss(value);
      for (std::string f; ss >> f;) info.flags.insert(f);
      got_flags = true;
    }
  }
  if (info.flags.empty()) {  // no /proc/cpuinfo (or no flags line): ask the compiler's runtime
    if (__builtin_cpu_supports("avx512f")) info.flags.insert("avx512f");
    if (__builtin_cpu_supports("avx2")) info.flags.insert("avx2");
  }
  return info;
}

std::string isa_name(const CpuInfo& c) {
  if (c.has("avx512f")) {
    std::string extras;
    if (c.has("avx512_bf16")) extras += "+bf16";
    if (c.has("avx512_vnni")) extras += std::string(extras.empty() ? "" : ", ") + "+vnni";
    return extras.empty() ? "AVX-512" : "AVX-512 (" + extras + ")";
  }
  if (c.has("avx2")) return c.has("fma") ? "AVX2 (+fma)" : "AVX2";
  return "SSE";
}

// The OpenBLAS kernel to ask for: --openblas-core, else SkylakeX on an
// AVX-512 host (0.3.21's DYNAMIC_ARCH picks Prescott or Haswell on some of
// them) unless Radix compiles for a CPU without AVX-512 (--target-cpu):
// then Haswell, OpenBLAS's AVX2 kernel (its Zen cores run it too); else
// none (OpenBLAS's own choice is right on AVX2 hosts).
std::string wanted_openblas_core(const std::string& flag, const CpuInfo& cpu, bool avx512_target) {
  if (!flag.empty()) return flag;
  if (!cpu.has("avx512f")) return "";
  return avx512_target ? "SkylakeX" : "Haswell";
}

// OpenBLAS reads OPENBLAS_CORETYPE and OPENBLAS_THREAD_TIMEOUT once, when it
// is loaded, i.e. before main. When they are not what this run needs, set
// them and run the whole process again (same command line, from
// /proc/self/cmdline). RADIX_BENCH_REEXEC guards against a loop.
//  * OPENBLAS_THREAD_TIMEOUT=22: OpenBLAS's idle workers spin 2^22 TSC cycles
//    (~1-2 ms) instead of its default 2^28 (~100 ms) before sleeping: with the
//    default they keep the cores busy well into the Radix measurement that
//    follows an OpenBLAS one. Back-to-back calls in a timed loop still find
//    them awake. A value the user set is left alone.
void reexec_for_openblas(const std::string& core) {
  if (std::getenv("RADIX_BENCH_REEXEC")) return;
  bool again = false;
  if (!core.empty()) {
    const char* cur = std::getenv("OPENBLAS_CORETYPE");
    if (!cur || core != cur) {
      setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
      again = true;
    }
  }
  if (!std::getenv("OPENBLAS_THREAD_TIMEOUT")) {
    setenv("OPENBLAS_THREAD_TIMEOUT", "22", 1);
    again = true;
  }
  if (!again) return;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t p = 0; p < all.size();) {
    const size_t e = all.find('\0', p);
    args.push_back(all.substr(p, e == std::string::npos ? std::string::npos : e - p));
    if (e == std::string::npos) break;
    p = e + 1;
  }
  if (args.empty()) {
    std::fprintf(stderr, "radix bench: WARNING: cannot read /proc/self/cmdline to re-execute; OpenBLAS keeps "
                         "the kernel it chose at load\n");
    return;
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  setenv("RADIX_BENCH_REEXEC", "1", 1);
  std::fflush(stdout);
  std::fflush(stderr);
  execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "radix bench: WARNING: re-executing to apply OPENBLAS_CORETYPE=%s failed (%s); OpenBLAS "
                       "keeps the kernel it chose at load\n", core.c_str(), std::strerror(errno));
}

// Which shared object serves oneDNN's OpenMP calls: Radix links LLVM's
// libomp, oneDNN was built against libgomp, and libomp also exports the GOMP_
// entry points, so whichever loads first serves both.
std::string dnnl_openmp_library() {
  void* sym = dlvsym(RTLD_DEFAULT, "GOMP_parallel", "GOMP_4.0");
  Dl_info info{};
  if (!sym || !dladdr(sym, &info) || !info.dli_fname) return "unknown";
  const char* slash = std::strrchr(info.dli_fname, '/');
  return slash ? slash + 1 : info.dli_fname;
}

// OpenBLAS's kernels with AVX-512 sgemm (0.3.21): on an AVX-512 host any
// other one leaves OpenBLAS below its best.
bool avx512_openblas_core(const char* name) {
  for (const char* c : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (strcasecmp(name, c) == 0) return true;
  return false;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[64];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M UTC", &tm);
  return b;
}

bool parse_threads(const std::string& s, std::vector<int>* out, std::string* err) {
  out->clear();
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 1024) {
      *err = "--threads needs a comma-separated list of positive thread counts, got '" + s + "'";
      return false;
    }
    if (std::find(out->begin(), out->end(), static_cast<int>(v)) == out->end()) out->push_back(static_cast<int>(v));
  }
  if (out->empty()) {
    *err = "--threads needs at least one thread count";
    return false;
  }
  return true;
}

struct Parsed {
  BenchOptions opts;
  std::string openblas_core;
  bool llama_bench_given = false;  // --llama-bench (a path, or 'none')
  bool help = false;
  bool reps_given = false;
};

bool parse(int argc, char** argv, Parsed* p, std::string* err) {
  std::string threads;
  for (int i = 0; i < argc; ++i) {
    const std::string f = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto value = [&](const char* what) -> const char* {
      if (!v) *err = f + " needs " + what;
      else ++i;
      return v;
    };
    if (f == "--help" || f == "-h") p->help = true;
    else if (f == "--quick") p->opts.quick = true;
    else if (f == "--threads") {
      if (!value("a list of thread counts")) return false;
      threads = v;
      if (!parse_threads(threads, &p->opts.threads, err)) return false;
    } else if (f == "--repetitions") {
      if (!value("a count")) return false;
      char* end = nullptr;
      const long r = std::strtol(v, &end, 10);
      if (*v == '\0' || *end != '\0' || r < 1 || r > 1000) {
        *err = "--repetitions needs an integer in [1, 1000], got '" + std::string(v) + "'";
        return false;
      }
      p->opts.repetitions = static_cast<int>(r);
      p->reps_given = true;
    } else if (f == "--filter") {
      if (!value("a substring of case names")) return false;
      p->opts.filter = v;
    } else if (f == "--write-models") {
      if (!value("a folder")) return false;
      if (!*v) {
        *err = "--write-models needs a non-empty folder";
        return false;
      }
      p->opts.write_models_dir = v;
    } else if (f == "--llama-bench") {
      if (!value("the path of llama.cpp's llama-bench (or 'none')")) return false;
      p->llama_bench_given = true;
      if (std::string(v) == "none") {
        p->opts.llama_bench.clear();
        continue;
      }
      std::error_code ec;
      if (!*v || !std::filesystem::is_regular_file(v, ec) || access(v, X_OK) != 0) {
        *err = "--llama-bench: no executable file at '" + std::string(v) +
               "' (build llama.cpp's llama-bench with scripts/build-llama-cpp.sh; 'none' runs without it)";
        return false;
      }
      p->opts.llama_bench = v;
    } else if (f == "--target-cpu") {
      if (!value("an LLVM CPU name (e.g. znver3)")) return false;
      if (!*v) {
        *err = "--target-cpu needs a non-empty CPU name";
        return false;
      }
      p->opts.target_cpu = v;
    } else if (f == "--openblas-core") {
      if (!value("an OpenBLAS core name (e.g. SkylakeX, Haswell)")) return false;
      if (!*v) {
        *err = "--openblas-core needs a non-empty core name";
        return false;
      }
      p->openblas_core = v;
    } else {
      *err = "unknown option '" + f + "'";
      return false;
    }
  }
  return true;
}

}  // namespace
}  // namespace bench

int run_bench(int argc, char** argv) {
  using namespace bench;
  Parsed p;
  std::string err;
  if (!parse(argc, argv, &p, &err)) {
    std::fprintf(stderr, "radix bench: %s\n(see 'radix bench --help')\n", err.c_str());
    return 2;
  }
  if (p.help) {
    std::fputs(kBenchUsage, stdout);
    return 0;
  }
  BenchOptions& o = p.opts;
  o.cores = affinity_cores();
  o.l3_bytes = host_last_level_cache_bytes();
  if (o.threads.empty()) {
    o.threads = {1};
    if (o.cores > 1) o.threads.push_back(o.cores);
  }
  if (o.quick) {
    if (!p.reps_given) o.repetitions = 3;
    o.min_loop_s = 0.05;
  }
  const std::string default_llama_bench = default_llama_bench_path();
  if (!p.llama_bench_given && !default_llama_bench.empty() && access(default_llama_bench.c_str(), X_OK) == 0)
    o.llama_bench = default_llama_bench;

  if (!o.write_models_dir.empty()) return write_llm_models(o);  // writes files, measures nothing

  {
    std::vector<std::string> names = kernel_case_names(o);
    for (std::string& n : llm_case_names(o)) names.push_back(std::move(n));
    if (std::none_of(names.begin(), names.end(), [&](const std::string& n) { return o.wants(n); })) {
      std::string all;
      for (const std::string& n : names) all += "\n  " + n;
      std::fprintf(stderr, "radix bench: no case matches --filter '%s'; the cases are:%s\n", o.filter.c_str(),
                   all.c_str());
      return 2;
    }
  }

  const CpuInfo cpu = read_cpuinfo();
  // --target-cpu: a CPU this host can run code for, and its schedule's ISA.
  VectorIsa target_isa = host_vector_isa();
  if (o.target_cpu != "host") {
    const Result<std::string> target = resolve_target_cpu(o.target_cpu);
    if (!target.ok()) {
      std::fprintf(stderr, "radix bench: --target-cpu: %s\n", target.status().message().c_str());
      return 2;
    }
    if (const std::vector<std::string> missing = features_missing_on_host(*target); !missing.empty()) {
      std::string list;
      for (const std::string& f : missing) list += (list.empty() ? "" : ", ") + f;
      std::fprintf(stderr, "radix bench: --target-cpu %s: this host lacks its %s: its code would stop on an "
                           "illegal instruction here\n", o.target_cpu.c_str(), list.c_str());
      return 2;
    }
    target_isa = target_vector_isa(*target);
  }
  const bool avx512_target = target_isa.f32_lanes >= 16;
  // oneDNN reads it at its first call (none yet): its kernels as narrow as Radix's.
  if (!avx512_target && cpu.has("avx512f")) setenv("DNNL_MAX_CPU_ISA", "AVX2", /*overwrite=*/0);
  const std::string core = wanted_openblas_core(p.openblas_core, cpu, avx512_target);
  reexec_for_openblas(core);  // returns only when nothing needs to change (or exec failed)

  // Executable::call allocates its outputs per call: keep large blocks on the
  // heap (no mmap / munmap per call) so repeated calls reuse warm pages.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  const dnnl_version_t* dv = dnnl_version();
  std::string threads_list;
  for (int t : o.threads) threads_list += (threads_list.empty() ? "" : ",") + std::to_string(t);
  const char* timeout = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  const char* corename = openblas_get_corename();
  const std::string omp = dnnl_openmp_library();
  std::printf("# radix bench, %s\n\n", utc_now().c_str());
  std::printf("- CPU: %s; ISA: %s; %d core%s available to this process (%ld online)", cpu.model.c_str(),
              isa_name(cpu).c_str(), o.cores, o.cores == 1 ? "" : "s", sysconf(_SC_NPROCESSORS_ONLN));
  if (o.l3_bytes > 0) std::printf("; last-level cache %lld MiB", static_cast<long long>(o.l3_bytes >> 20));
  if (o.target_cpu != "host")
    std::printf("\n- Radix compiled for %s (--target-cpu: its schedule takes %d f32 lanes x %d registers)%s",
                o.target_cpu.c_str(), target_isa.f32_lanes, target_isa.registers,
                std::getenv("DNNL_MAX_CPU_ISA") ? (std::string("; oneDNN held to DNNL_MAX_CPU_ISA=") +
                                                   std::getenv("DNNL_MAX_CPU_ISA")).c_str()
                                                : "");
  std::printf("\n- OpenBLAS: %s kernel (%s); OPENBLAS_CORETYPE=%s, OPENBLAS_THREAD_TIMEOUT=%s%s\n", corename,
              openblas_get_config(), coretype ? coretype : "(unset)", timeout ? timeout : "(unset)",
              std::getenv("RADIX_BENCH_REEXEC") ? " (set by radix bench, which re-executed itself)" : "");
  std::printf("- oneDNN %d.%d.%d%s%s, OpenMP runtime %s%s; Radix's parallel regions on its own fork / join "
              "pool (CpuOptions::thread_pool)\n",
              dv->major, dv->minor, dv->patch, dv->hash && std::strcmp(dv->hash, "N/A") != 0 ? " git " : "",
              dv->hash && std::strcmp(dv->hash, "N/A") != 0 ? dv->hash : "", omp.c_str(),
              omp.rfind("libomp", 0) == 0 ? " (LLVM's)" : "");
  std::printf("- threads %s; %d repetitions (medians), timed loops >= %.2f s, Radix and peers interleaved%s%s\n",
              threads_list.c_str(), o.repetitions, o.min_loop_s, o.quick ? "; --quick sizes" : "",
              o.filter.empty() ? "" : ("; --filter " + o.filter).c_str());
  std::printf("- ratio = radix / peer (above 1: Radix is faster); C++ peers: -O3 loops cloned for AVX-512 / AVX2 "
              "(target_clones), on a pool of t threads like memcpy\n");
  {
    const std::vector<std::string> llm = llm_case_names(o);
    if (std::any_of(llm.begin(), llm.end(), [&](const std::string& n) { return o.wants(n); })) {
      if (!o.llama_bench.empty()) {
        const std::string v = llama_bench_version(o.llama_bench);
        std::printf("- llama.cpp (the LLM rows' peer): %s%s%s\n", o.llama_bench.c_str(), v.empty() ? "" : ", ",
                    v.c_str());
      } else if (p.llama_bench_given) {
        std::printf("- llama.cpp: --llama-bench none: the LLM rows have no llama.cpp columns\n");
      } else {
        std::printf("- llama.cpp: no llama-bench at %s: the LLM rows have no llama.cpp columns (build it with "
                    "scripts/build-llama-cpp.sh, or pass --llama-bench PATH)\n",
                    default_llama_bench.empty() ? "~/.cache/radix/llama.cpp/build/bin/llama-bench"
                                                : default_llama_bench.c_str());
      }
    }
  }
  if (cpu.has("avx512f") && avx512_target && !avx512_openblas_core(corename))
    std::printf("WARNING: OpenBLAS runs its %s kernel on an AVX-512 host (SkylakeX is its fast sgemm here): "
                "OpenBLAS figures are below its best\n", corename);
  if (!core.empty() && strcasecmp(corename, core.c_str()) != 0)
    std::printf("WARNING: OpenBLAS was asked for core %s but runs %s (a name it does not know, or a CPU "
                "without that core's instructions)\n", core.c_str(), corename);
  for (int t : o.threads)
    if (t > o.cores)
      std::printf("WARNING: %d threads on %d available cores: oversubscribed, figures are not meaningful\n", t,
                  o.cores);
  std::printf("\n");
  std::fflush(stdout);

  const auto t0 = std::chrono::steady_clock::now();
  BenchTable table;
  try {
    add_kernel_rows(o, table);
    add_llm_rows(o, table);
  } catch (const std::exception& e) {
    table.fail("radix bench", e.what());
  }
  table.print(stdout);
  std::printf("\n%s in %.0f s%s\n", table.failed() ? "FAILED" : "done",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              table.failed() ? " (a check or a run failed: see FAIL above)" : "");
  return table.failed() ? 1 : 0;
}

}  // namespace radix::cli
