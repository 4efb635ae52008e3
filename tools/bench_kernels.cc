// radix bench: the kernel rows. Each case uploads its inputs once into Radix
// Buffers (host memory on the CPU platform) that the peers read too, checks
// every contender against a reference, then times them interleaved.
//
//  * GEMM-like (GFLOP/s; peers OpenBLAS cblas_sgemm, oneDNN dnnl_sgemm):
//    matmul n^3, linear x[m,k] . W[n,k]^T (Llama's weight layout), batched
//    attention scores q . k^T; also at odd sizes (129^3, a 301-token prompt).
//  * decode mat-vec x[1,4096] . W[4096,4096]^T (GB/s of W's bytes; peers
//    sgemv, sgemm, oneDNN, and a loop summing W: the read bandwidth).
//  * the same mat-vec with W quantized (int8, Q8_0, Q4_0, Q8_0x16, Q4_0x16), in weights / ns;
//    peers the f32 product (Radix, sgemv) and reading the quantized bytes.
//  * elementwise chain, row softmax, RMSNorm (GB/s of bytes read + written;
//    peers a C++ loop and memcpy of the same traffic).
//
// Build this file with -O3: the "C++ -O3" peers are the loops below, cloned
// for AVX-512 / AVX2 / baseline x86-64 (target_clones) so a generic build
// still runs the host's vector ISA.
#include <cblas.h>
#include <dlfcn.h>
#include <dnnl.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "radix/io/quantize.h"
#include "radix/radix.h"
#include "tools/bench_command.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RADIX_BENCH_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RADIX_BENCH_CLONES
#endif

namespace radix::cli::bench {
namespace {

// ---------------------------------------------------------------- plumbing

Platform& platform() {
  static Platform p = Platform::cpu();
  return p;
}

// The CPU platform's buffers are host memory: the peers read the very bytes
// Radix reads.
const float* fp(const Buffer& b) { return static_cast<const float*>(b.device_ptr()); }

Buffer unwrap(Result<Buffer> r, const std::string& what) {
  if (!r.ok()) throw std::runtime_error(what + ": " + r.status().to_string());
  return std::move(r).value();
}

// compile_fn with CompileOptions::codegen.cpu.threads = threads, for the CPU
// `o.target_cpu` names.
template <class Fn, class... S>
auto compile_radix(const std::string& what, const BenchOptions& o, int threads, Fn fn, const S&... shapes) {
  CompileFnOptions opts;
  opts.compile.codegen.cpu.threads = threads;
  opts.compile.codegen.target_cpu = o.target_cpu;
  auto r = compile_fn(platform(), opts, fn, shapes...);
  if (!r.ok()) throw std::runtime_error(what + ": compile failed: " + r.status().to_string());
  using E = std::remove_cvref_t<decltype(r.value())>;
  return std::make_shared<const E>(std::move(r).value());
}

// oneDNN (Debian's, OpenMP runtime) takes its thread count from OpenMP.
// Look omp_set_num_threads up the way oneDNN's own OpenMP calls bind
// (versioned, first loaded library wins: LLVM's libomp when Radix loaded it
// first, else libgomp), instead of linking one runtime by name.
void set_openmp_threads(int t) {
  using SetFn = void (*)(int);
  static SetFn fn = [] {
    void* s = dlvsym(RTLD_DEFAULT, "omp_set_num_threads", "OMP_1.0");
    if (!s) s = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    return reinterpret_cast<SetFn>(s);
  }();
  if (!fn) throw std::runtime_error("omp_set_num_threads not found: cannot set oneDNN's threads");
  fn(t);
}

// Runs fn(i, n) for i in [0, n) on n threads, the caller being thread 0: the
// C++ and memcpy peers at t threads. Idle workers sleep (no spinning into
// the next measurement).
class Pool {
 public:
  explicit Pool(int n) : n_(std::max(1, n)) {
    for (int i = 1; i < n_; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return n_; }
  void run(const std::function<void(int, int)>& fn) {
    if (n_ == 1) return fn(0, 1);
    {
      std::lock_guard<std::mutex> l(mu_);
      job_ = &fn;
      pending_ = n_ - 1;
      ++generation_;
    }
    cv_.notify_all();
    fn(0, n_);
    std::unique_lock<std::mutex> l(mu_);
    done_.wait(l, [&] { return pending_ == 0; });
  }

 private:
  void work(int i) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int, int)>* job;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      (*job)(i, n_);
      std::lock_guard<std::mutex> l(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
  const int n_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_;
  const std::function<void(int, int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// [begin, end) of part i of n over `count` items.
std::pair<size_t, size_t> part(size_t count, int i, int n) {
  return {count * static_cast<size_t>(i) / static_cast<size_t>(n),
          count * static_cast<size_t>(i + 1) / static_cast<size_t>(n)};
}

// A row's note when its data could stay in the last-level cache between
// calls: then its GB/s are cache bandwidth, not DRAM's.
std::string cache_note(double bytes, const BenchOptions& o) {
  if (o.l3_bytes <= 0 || bytes > static_cast<double>(o.l3_bytes)) return "";
  return "data " + std::to_string(std::llround(bytes / 1048576)) + " MiB < LLC " + std::to_string(o.l3_bytes >> 20) +
         " MiB";
}

std::string join_notes(const std::string& a, const std::string& b) {
  return a.empty() ? b : b.empty() ? a : a + "; " + b;
}

volatile double g_sink;  // keeps the read loop's sum alive

// The 'read' peer: sums n floats split over the pool's threads.
void read_floats(Pool& pool, const float* p, size_t n) {
  std::vector<double> sums(static_cast<size_t>(pool.size()));
  pool.run([&](int i, int np) {
    auto [lo, hi] = part(n, i, np);
    sums[static_cast<size_t>(i)] = sum_floats(p + lo, hi - lo);
  });
  double total = 0;
  for (double v : sums) total += v;
  g_sink = total;
}

// ---------------------------------------------------------- the C++ peers
// Reductions keep 16 partial results so that -O3 vectorizes them without
// -ffast-math (which would let it reorder a single sum).

constexpr int kLanes = 16;


RADIX_BENCH_CLONES void chain_loop(const float* a, const float* b, const float* c, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = std::max(a[i] * b[i] + c[i], 0.f) * 0.5f - a[i];
}

RADIX_BENCH_CLONES void softmax_rows(const float* x, float* y, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    float mx[kLanes];
    for (float& m : mx) m = -INFINITY;
    size_t c = 0;
    for (; c + kLanes <= cols; c += kLanes)
      for (int j = 0; j < kLanes; ++j) mx[j] = std::max(mx[j], in[c + j]);
    float m = -INFINITY;
    for (; c < cols; ++c) m = std::max(m, in[c]);
    for (float v : mx) m = std::max(m, v);
    float s = 0;
    for (c = 0; c < cols; ++c) {
      out[c] = std::exp(in[c] - m);
      s += out[c];
    }
    const float inv = 1.f / s;
    for (c = 0; c < cols; ++c) out[c] *= inv;
  }
}

RADIX_BENCH_CLONES void rmsnorm_rows(const float* x, const float* w, float* y, size_t rows, size_t cols, float eps) {
  for (size_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    float acc[kLanes] = {};
    size_t c = 0;
    for (; c + kLanes <= cols; c += kLanes)
      for (int j = 0; j < kLanes; ++j) acc[j] += in[c + j] * in[c + j];
    float ss = 0;
    for (; c < cols; ++c) ss += in[c] * in[c];
    for (float a : acc) ss += a;
    const float scale = 1.f / std::sqrt(ss / static_cast<float>(cols) + eps);
    for (c = 0; c < cols; ++c) out[c] = in[c] * scale * w[c];
  }
}

// ------------------------------------------------------------- GEMM cases

struct GemmSpec {
  std::string name;
  int64_t batch, m, n, k;
  bool b_transposed;  // B stored [n, k] (Llama's weight layout), else [k, n]
  bool matvec;        // decode mat-vec: GB/s of B's bytes, sgemv and read peers
};

// The check: max |x - ref| / max(|ref|, 1) < 1e-4 up to K = 1024, growing
// with K beyond: the rounding error of an f32 dot product grows with its
// length, and how fast depends on the summation order (at K = 4096, with
// inputs in [-1, 1), a plain chain of f32 FMAs lands near 1.5e-4 from
// OpenBLAS's blocked sums; both stay within ~2e-7 of sum |a.b| of the exact
// value). A broken tile, a dropped k-block or a race is off by ~0.1 or more.
constexpr double kGemmTol = 1e-4;
double gemm_tolerance(int64_t k) { return kGemmTol * std::max(1.0, static_cast<double>(k) / 1024.0); }

void gemm_case(const GemmSpec& g, const BenchOptions& o, BenchTable& table) {
  const bool batched = g.batch > 1;
  const Shape sa = batched ? Shape(DType::kF32, {g.batch, g.m, g.k}) : Shape(DType::kF32, {g.m, g.k});
  const Shape sb = batched ? Shape(DType::kF32, {g.batch, g.n, g.k})
                           : (g.b_transposed ? Shape(DType::kF32, {g.n, g.k}) : Shape(DType::kF32, {g.k, g.n}));
  if (batched && !g.b_transposed) throw std::logic_error("batched GEMM cases use B[batch, n, k]");
  const Buffer A = upload_random(sa, -1, 1, 11), B = upload_random(sb, -1, 1, 12);
  const float *a = fp(A), *b = fp(B);
  const size_t c_elems = static_cast<size_t>(g.batch * g.m * g.n);
  const int ldb = static_cast<int>(g.b_transposed ? g.k : g.n);

  auto openblas_gemm = [&](float* c) {
    for (int64_t bi = 0; bi < g.batch; ++bi)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, g.b_transposed ? CblasTrans : CblasNoTrans, static_cast<int>(g.m),
                  static_cast<int>(g.n), static_cast<int>(g.k), 1.f, a + bi * g.m * g.k, static_cast<int>(g.k),
                  b + bi * g.n * g.k, ldb, 0.f, c + bi * g.m * g.n, static_cast<int>(g.n));
  };
  auto onednn_gemm = [&](float* c) {
    for (int64_t bi = 0; bi < g.batch; ++bi) {
      const dnnl_status_t st = dnnl_sgemm('N', g.b_transposed ? 'T' : 'N', g.m, g.n, g.k, 1.f, a + bi * g.m * g.k,
                                          g.k, b + bi * g.n * g.k, ldb, 0.f, c + bi * g.m * g.n, g.n);
      if (st != dnnl_success) throw std::runtime_error(g.name + ": dnnl_sgemm failed with status " + std::to_string(st));
    }
  };
  auto sgemv = [&](float* y) {  // W[n, k] . x: y[n]
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(g.n), static_cast<int>(g.k), 1.f, b,
                static_cast<int>(g.k), a, 1, 0.f, y, 1);
  };

  // The reference: OpenBLAS, itself checked on sampled entries against
  // double-precision dot products (a full f64 product of the big cases
  // would take minutes).
  openblas_set_num_threads(o.cores);
  std::vector<float> ref(c_elems), scratch(c_elems);
  openblas_gemm(ref.data());
  double ref_err = 0;
  uint64_t s = 99;
  for (int i = 0; i < 256; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const size_t at = static_cast<size_t>(s >> 33) % c_elems;
    const int64_t bi = static_cast<int64_t>(at) / (g.m * g.n), row = static_cast<int64_t>(at) / g.n % g.m,
                  col = static_cast<int64_t>(at) % g.n;
    double d = 0;
    for (int64_t p = 0; p < g.k; ++p)
      d += static_cast<double>(a[bi * g.m * g.k + row * g.k + p]) *
           b[g.b_transposed ? bi * g.n * g.k + col * g.k + p : p * g.n + col];
    const double e = std::fabs(ref[at] - d) / std::max(std::fabs(d), 1.0);
    if (!(e <= ref_err)) ref_err = e;
  }

  auto radix_fn = [&](int t) {
    if (!g.b_transposed) return compile_radix(g.name, o, t, [](Tensor x, Tensor y) { return matmul(x, y); }, sa, sb);
    if (batched)
      return compile_radix(g.name, o, t, [](Tensor q, Tensor k) { return dot_general(q, k, DotDims{{0}, {0}, {2}, {2}}); },
                           sa, sb);
    return compile_radix(g.name, o, t, [](Tensor x, Tensor w) { return dot_general(x, w, DotDims{{}, {}, {1}, {1}}); },
                         sa, sb);
  };

  const double flops = 2.0 * static_cast<double>(g.batch) * g.m * g.n * g.k;
  const double work = g.matvec ? static_cast<double>(B.byte_size()) / 1e9 : flops / 1e9;
  for (int t : o.threads) {
    auto exe = radix_fn(t);
    auto radix_call = [&] { return unwrap(exe->call(A, B), g.name + ": radix call"); };
    Pool pool(t);
    auto read_all = [&] { read_floats(pool, b, static_cast<size_t>(g.n * g.k)); };

    // Check every contender at this thread count against the reference.
    std::vector<std::pair<std::string, double>> errs;
    if (t == o.threads.front()) errs.push_back({"reference (openblas vs f64, 256 entries)", ref_err});
    const size_t first_peer = errs.size();
    {
      Buffer out = radix_call();
      errs.push_back({"radix", max_rel_err(fp(out), ref.data(), c_elems, 1.0)});
    }
    std::vector<std::string> peer_names;
    if (g.matvec) {
      openblas_set_num_threads(t);
      std::fill(scratch.begin(), scratch.end(), NAN);  // a peer that writes nothing fails
      sgemv(scratch.data());
      errs.push_back({"openblas sgemv", max_rel_err(scratch.data(), ref.data(), c_elems, 1.0)});
      peer_names = {"openblas sgemv", "openblas sgemm", "onednn", "read"};
    } else {
      peer_names = {"openblas", "onednn"};
    }
    openblas_set_num_threads(t);
    std::fill(scratch.begin(), scratch.end(), NAN);
    openblas_gemm(scratch.data());
    errs.push_back({g.matvec ? "openblas sgemm" : "openblas", max_rel_err(scratch.data(), ref.data(), c_elems, 1.0)});
    set_openmp_threads(t);
    std::fill(scratch.begin(), scratch.end(), NAN);
    onednn_gemm(scratch.data());
    errs.push_back({"onednn", max_rel_err(scratch.data(), ref.data(), c_elems, 1.0)});
    const double tol = gemm_tolerance(g.k);
    table.check(g.name + " t=" + std::to_string(t), errs, tol, "max |x-ref|/max(|ref|,1)");
    const bool ref_ok = ref_err < tol;

    // Time the contenders that passed (all of them unless the reference failed).
    std::vector<Contender> cs;
    std::vector<int> slot;  // index into {radix, peers...} of each contender
    std::string note;
    auto add = [&](size_t err_index, int row_slot, Contender c) {
      if (ref_ok && errs[err_index].second < tol) {
        cs.push_back(std::move(c));
        slot.push_back(row_slot);
      } else {
        note += (note.empty() ? "" : "; ") + errs[err_index].first + " failed its check";
      }
    };
    size_t e = first_peer;
    add(e++, 0, {"radix", [&] { Buffer out = radix_call(); }, {}});
    int peer_slot = 1;
    if (g.matvec)
      add(e++, peer_slot++, {"openblas sgemv", [&] { sgemv(scratch.data()); }, [&] { openblas_set_num_threads(t); }});
    add(e++, peer_slot++, {"openblas", [&] { openblas_gemm(scratch.data()); }, [&] { openblas_set_num_threads(t); }});
    add(e++, peer_slot++, {"onednn", [&] { onednn_gemm(scratch.data()); }, [&] { set_openmp_threads(t); }});
    if (g.matvec && ref_ok) {  // (needs no check: it computes nothing to compare)
      cs.push_back({"read", read_all, {}});
      slot.push_back(peer_slot++);
    }
    if (!ref_ok) note = "the OpenBLAS reference failed its check: nothing timed";
    const std::vector<double> sec = cs.empty() ? std::vector<double>{} : measure_interleaved(cs, o);

    if (g.matvec) note = join_notes(note, cache_note(static_cast<double>(B.byte_size()), o));
    BenchRow row{g.name, t, g.matvec ? "GB/s" : "GFLOP/s", NAN, {}, note};
    for (const std::string& p : peer_names) row.peers.push_back({p, NAN});
    for (size_t i = 0; i < cs.size(); ++i) {
      const double rate = work / sec[i];
      if (slot[i] == 0) row.radix = rate;
      else row.peers[static_cast<size_t>(slot[i] - 1)].value = rate;
    }
    table.add(std::move(row));
  }
}

// ------------------------------------------------ quantized decode mat-vec

// x[1,k] . W[n,k]^T with W kept quantized (int8 per channel, Q8_0, Q4_0;
// trace/ops_quant.h), in weights per nanosecond, x as int8 blocks (the
// default: integer dot products). Peers: the same product with x kept f32
// (the weights widened to f32 in registers), the product on the dequantized
// f32 weights by Radix and by cblas_sgemv (what quantizing gains), and a
// loop reading the quantized bytes (the memory bound).
void quant_matvec_case(const std::string& name, QuantFormat f, int64_t n, int64_t k, const BenchOptions& o,
                       BenchTable& table) {
  std::vector<float> w(static_cast<size_t>(n * k));
  fill_random(w.data(), w.size(), -1, 1, 21);
  Result<io::QuantizedMatrix> quantized = io::quantize(f, w, n, k);
  if (!quantized.ok()) throw std::runtime_error(name + ": " + quantized.status().to_string());
  const io::QuantizedMatrix& q = *quantized;
  const std::vector<float> wd = io::dequantize(q);
  const Shape sx(DType::kF32, {1, k}), sw(DType::kF32, {n, k});
  const Buffer X = upload_random(sx, -1, 1, 22);
  const Buffer V = unwrap(platform().bytes(q.values_shape, q.values), name + ": values");
  const Buffer S = unwrap(platform().bytes(q.scales_shape, q.scales), name + ": scales");
  const Buffer W = unwrap(platform().buffer(sw, wd), name + ": dequantized weights");
  const size_t qbytes = q.values.size() + q.scales.size();
  std::vector<float> ref(static_cast<size_t>(n)), ref_q(static_cast<size_t>(n)), scratch(static_cast<size_t>(n));
  auto sgemv_of = [&](const float* x, float* y) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(n), static_cast<int>(k), 1.f, fp(W),
                static_cast<int>(k), x, 1, 0.f, y, 1);
  };
  auto sgemv = [&](float* y) { sgemv_of(fp(X), y); };
  openblas_set_num_threads(o.cores);
  sgemv(ref.data());
  // The int8-activation product's reference: x rounded as its blocks are.
  const std::vector<float> x_q = io::round_to_int8_blocks(std::span<const float>(fp(X), static_cast<size_t>(k)));
  sgemv_of(x_q.data(), ref_q.data());
  const double weights = static_cast<double>(n * k) / 1e9;  // G weights per call
  for (int t : o.threads) {
    auto exe_q = compile_radix(name, o, t, [](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s); }, sx,
                               q.values_shape, q.scales_shape);
    auto exe_x = compile_radix(
        name + " (f32 x)", o, t,
        [](Tensor a, Tensor v, Tensor s) {
          return quantized_matmul(a, v, s, QuantizedMatmulOptions{QuantizedActivations::kF32});
        },
        sx, q.values_shape, q.scales_shape);
    auto exe_f = compile_radix(name + " (f32)", o, t,
                               [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); }, sx, sw);
    std::vector<std::pair<std::string, double>> errs;
    {
      Buffer out = unwrap(exe_q->call(X, V, S), name + ": radix call");
      errs.push_back({"radix", max_rel_err(fp(out), ref_q.data(), ref_q.size(), 1.0)});
      Buffer outx = unwrap(exe_x->call(X, V, S), name + ": radix f32 x call");
      errs.push_back({"radix f32 x", max_rel_err(fp(outx), ref.data(), ref.size(), 1.0)});
      Buffer outf = unwrap(exe_f->call(X, W), name + ": radix f32 call");
      errs.push_back({"radix f32", max_rel_err(fp(outf), ref.data(), ref.size(), 1.0)});
    }
    const bool ok = table.check(name + " t=" + std::to_string(t), errs, gemm_tolerance(k),
                                "max |x-ref|/max(|ref|,1), ref: sgemv of the dequantized weights (radix: and of x "
                                "rounded to its int8 blocks)");
    Pool pool(t);
    auto read_all = [&] {
      read_floats(pool, static_cast<const float*>(V.device_ptr()), q.values.size() / sizeof(float));
    };
    std::vector<Contender> cs;
    if (ok) {
      cs.push_back({"radix", [&] { Buffer out = unwrap(exe_q->call(X, V, S), name); }, {}});
      cs.push_back({"radix f32 x", [&] { Buffer out = unwrap(exe_x->call(X, V, S), name); }, {}});
      cs.push_back({"radix f32", [&] { Buffer out = unwrap(exe_f->call(X, W), name); }, {}});
      cs.push_back({"openblas sgemv", [&] { sgemv(scratch.data()); }, [&] { openblas_set_num_threads(t); }});
      cs.push_back({"read", read_all, {}});
    }
    const std::vector<double> sec = cs.empty() ? std::vector<double>{} : measure_interleaved(cs, o);
    BenchRow row{name, t, "Gweight/s", NAN,
                 {{"radix f32 x", NAN}, {"radix f32", NAN}, {"openblas sgemv", NAN}, {"read", NAN}},
                 ok ? cache_note(static_cast<double>(qbytes), o) : "a check failed: nothing timed"};
    if (!sec.empty()) {
      row.radix = weights / sec[0];
      for (size_t p = 0; p < 3; ++p) row.peers[p].value = weights / sec[p + 1];
      // The values' bytes at the read rate, as weights: (values bytes / s) / (bytes per weight).
      const double bytes_per_weight = static_cast<double>(qbytes) / static_cast<double>(n * k);
      row.peers[3].value = static_cast<double>(q.values.size()) / 1e9 / sec[4] / bytes_per_weight;
    }
    table.add(std::move(row));
  }
}

// ------------------------------------------------ memory-bound op cases

// A Radix op over host buffers vs a C++ loop and memcpy moving as many bytes,
// each at t threads. tol / floor: the check, see max_rel_err.
struct StreamSpec {
  std::string name;
  double bytes;  // read + written per call
  double tol, floor;
  std::string metric;
};

struct StreamImpl {
  std::function<Buffer()> radix;    // one Radix call
  std::function<void(Pool&)> loop;  // the C++ loop, into loop_out
  std::function<void(Pool&)> copy;  // memcpy of bytes / 2 (as much traffic: each byte read and written)
  const float* loop_out;
  const float* ref;
  size_t n_out;
};

void stream_rows(const StreamSpec& s, int t, const BenchOptions& o, BenchTable& table, const StreamImpl& impl,
                 Pool& pool) {
  std::vector<std::pair<std::string, double>> errs;
  {
    Buffer out = impl.radix();
    errs.push_back({"radix", max_rel_err(fp(out), impl.ref, impl.n_out, s.floor)});
  }
  impl.loop(pool);
  errs.push_back({"C++ -O3", max_rel_err(impl.loop_out, impl.ref, impl.n_out, s.floor)});
  table.check(s.name + " t=" + std::to_string(t), errs, s.tol, s.metric);

  std::vector<Contender> cs;
  std::vector<int> slot;
  std::string note;
  if (errs[0].second < s.tol) {
    cs.push_back({"radix", [&] { Buffer out = impl.radix(); }, {}});
    slot.push_back(0);
  } else {
    note = "radix failed its check";
  }
  if (errs[1].second < s.tol) {
    cs.push_back({"C++ -O3", [&] { impl.loop(pool); }, {}});
    slot.push_back(1);
  } else {
    note += std::string(note.empty() ? "" : "; ") + "C++ -O3 failed its check";
  }
  cs.push_back({"memcpy", [&] { impl.copy(pool); }, {}});
  slot.push_back(2);
  const std::vector<double> sec = measure_interleaved(cs, o);
  BenchRow row{s.name, t, "GB/s", NAN, {{"C++ -O3", NAN}, {"memcpy", NAN}}, join_notes(note, cache_note(s.bytes, o))};
  for (size_t i = 0; i < cs.size(); ++i) {
    const double rate = s.bytes / 1e9 / sec[i];
    if (slot[i] == 0) row.radix = rate;
    else row.peers[static_cast<size_t>(slot[i] - 1)].value = rate;
  }
  table.add(std::move(row));
}

// memcpy of `parts` (src, dst, count) split over the pool.
void pooled_copy(Pool& pool, const std::vector<std::tuple<const float*, float*, size_t>>& parts) {
  pool.run([&](int i, int n) {
    for (const auto& [src, dst, count] : parts) {
      auto [lo, hi] = part(count, i, n);
      std::memcpy(dst + lo, src + lo, (hi - lo) * sizeof(float));
    }
  });
}

void elementwise_case(const std::string& name, int64_t n, const BenchOptions& o, BenchTable& table) {
  const Shape shape(DType::kF32, {n});
  const Buffer A = upload_random(shape, -1, 1, 21), B = upload_random(shape, -1, 1, 22),
               C = upload_random(shape, -1, 1, 23);
  const float *a = fp(A), *b = fp(B), *c = fp(C);
  const size_t count = static_cast<size_t>(n);
  std::vector<float> ref(count), loop_out(count), copy_a(count), copy_b(count);
  for (size_t i = 0; i < count; ++i)
    ref[i] = static_cast<float>(std::max(static_cast<double>(a[i]) * b[i] + c[i], 0.0) * 0.5 - a[i]);
  const StreamSpec spec{name, 4.0 * static_cast<double>(count) * sizeof(float), 1e-6, 1.0,
                        "max |x-ref|/max(|ref|,1)"};
  for (int t : o.threads) {
    auto exe = compile_radix(name, o, t, [](Tensor x, Tensor y, Tensor z) { return relu(x * y + z) * 0.5 - x; }, shape,
                             shape, shape);
    Pool pool(t);
    StreamImpl impl{
        [&] { return unwrap(exe->call(A, B, C), name + ": radix call"); },
        [&](Pool& p) {
          p.run([&](int i, int np) {
            auto [lo, hi] = part(count, i, np);
            chain_loop(a + lo, b + lo, c + lo, loop_out.data() + lo, hi - lo);
          });
        },
        // 3 inputs read + 1 output written = two 64 MiB copies (read + write each).
        [&](Pool& p) { pooled_copy(p, {{a, copy_a.data(), count}, {b, copy_b.data(), count}}); },
        loop_out.data(), ref.data(), count};
    stream_rows(spec, t, o, table, impl, pool);
  }
}

void softmax_case(const std::string& name, int64_t rows, int64_t cols, const BenchOptions& o, BenchTable& table) {
  const Shape shape(DType::kF32, {rows, cols}, {"r", "c"});
  const Buffer X = upload_random(shape, -8, 8, 31);
  const float* x = fp(X);
  const size_t count = static_cast<size_t>(rows * cols);
  std::vector<float> ref(count), loop_out(count), copy_out(count);
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    double m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(in[c]));
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(in[c] - m);
    for (int64_t c = 0; c < cols; ++c) ref[static_cast<size_t>(r * cols + c)] = static_cast<float>(std::exp(in[c] - m) / sum);
  }
  // Relative to the reference itself (every output is positive); Radix's
  // default f32 exp is a polynomial within 5 ulp.
  const StreamSpec spec{name, 2.0 * static_cast<double>(count) * sizeof(float), 1e-5, 1e-30, "max |x-ref|/|ref|"};
  for (int t : o.threads) {
    auto exe = compile_radix(name, o, t, [](Tensor v) { return softmax(v, "c"); }, shape);
    Pool pool(t);
    StreamImpl impl{
        [&] { return unwrap(exe->call(X), name + ": radix call"); },
        [&](Pool& p) {
          p.run([&](int i, int np) {
            auto [lo, hi] = part(static_cast<size_t>(rows), i, np);
            softmax_rows(x + lo * cols, loop_out.data() + lo * cols, hi - lo, static_cast<size_t>(cols));
          });
        },
        [&](Pool& p) { pooled_copy(p, {{x, copy_out.data(), count}}); },
        loop_out.data(), ref.data(), count};
    stream_rows(spec, t, o, table, impl, pool);
  }
}

void rmsnorm_case(const std::string& name, int64_t rows, int64_t cols, const BenchOptions& o, BenchTable& table) {
  const Shape xs(DType::kF32, {rows, cols}), ws(DType::kF32, {cols});
  const Buffer X = upload_random(xs, -1, 1, 41), W = upload_random(ws, 0.5f, 1.5f, 42);
  const float *x = fp(X), *w = fp(W);
  const size_t count = static_cast<size_t>(rows * cols);
  constexpr float kEps = 1e-6f;
  std::vector<float> ref(count), loop_out(count), copy_out(count);
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += static_cast<double>(in[c]) * in[c];
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(cols) + kEps);
    for (int64_t c = 0; c < cols; ++c) ref[static_cast<size_t>(r * cols + c)] = static_cast<float>(in[c] * scale * w[c]);
  }
  const StreamSpec spec{name, 2.0 * static_cast<double>(count) * sizeof(float), 1e-5, 1.0,
                        "max |x-ref|/max(|ref|,1)"};
  for (int t : o.threads) {
    auto exe = compile_radix(name, o, t, [](Tensor v, Tensor g) { return nn::rms_norm(v, g, -1, 1e-6); }, xs, ws);
    Pool pool(t);
    StreamImpl impl{
        [&] { return unwrap(exe->call(X, W), name + ": radix call"); },
        [&](Pool& p) {
          p.run([&](int i, int np) {
            auto [lo, hi] = part(static_cast<size_t>(rows), i, np);
            rmsnorm_rows(x + lo * cols, w, loop_out.data() + lo * cols, hi - lo, static_cast<size_t>(cols), kEps);
          });
        },
        [&](Pool& p) { pooled_copy(p, {{x, copy_out.data(), count}}); },
        loop_out.data(), ref.data(), count};
    stream_rows(spec, t, o, table, impl, pool);
  }
}

// The cost of calling a prepared executable: a one-element op, so the time
// is the call itself (argument checks, output allocation from the pool,
// descriptors, the jump into compiled code). Peer: a malloc + free of the
// output and an indirect call — what any runtime pays at least.
void empty_call_case(const std::string& name, const BenchOptions& o, BenchTable& table) {
  const Shape s(DType::kF32, {1});
  const Buffer x = unwrap(platform().buffer(s, std::vector<float>{1.f}), name + ": input");
  auto exe = compile_radix(name, o, 1, [](Tensor a) { return a + 1.0; }, s);
  const Buffer y = unwrap(exe->call(x), name + ": radix call");
  Result<std::vector<float>> host = y.to_host<float>();
  if (!host.ok()) throw std::runtime_error(name + ": " + host.status().to_string());
  table.check(name, {{"radix", std::fabs(static_cast<double>((*host)[0]) - 2.0)}}, 1e-6, "|x-ref|");
  volatile float sink = 0;
  void (*volatile indirect)(float*) = [](float* p) { p[0] += 1.f; };
  const std::vector<Contender> cs = {
      {"radix", [&] { Buffer out = unwrap(exe->call(x), name); }, {}},
      {"malloc+call", [&] {
         auto* p = static_cast<float*>(std::malloc(64));
         p[0] = sink;
         indirect(p);
         sink = p[0];
         std::free(p);
       }, {}}};
  const std::vector<double> sec = measure_interleaved(cs, o);
  BenchRow row{name, 1, "Mcalls/s", 1e-6 / sec[0], {{"malloc+call", 1e-6 / sec[1]}},
               "radix " + std::to_string(static_cast<int>(sec[0] * 1e9)) + " ns per call"};
  table.add(std::move(row));
}

// The cost of one custom call: a program whose only work is a custom call
// to a handler that copies one float, against the same program with the
// copy compiled in (the empty call above). The difference is the FFI's
// per-call cost: the descriptor lookup, the frame on the stack, the stages.
void empty_custom_call_case(const std::string& name, const BenchOptions& o, BenchTable& table) {
  static const bool registered = ffi::register_handler("bench.copy1", [](RadixFfi_CallFrame* f) -> RadixFfi_Error* {
    *static_cast<float*>(f->rets.rets[0]->data) = *static_cast<const float*>(f->args.args[0]->data) + 1.f;
    return nullptr;
  }).ok();
  if (!registered) throw std::runtime_error(name + ": cannot register the handler");
  const Shape s(DType::kF32, {1});
  const Buffer x = unwrap(platform().buffer(s, std::vector<float>{1.f}), name + ": input");
  auto with_ffi = compile_radix(name, o, 1, [](Tensor a) { return custom_call("bench.copy1", {a}, {a.shape()})[0]; }, s);
  auto plain = compile_radix(name + " (plain)", o, 1, [](Tensor a) { return a + 1.0; }, s);
  const Buffer y = unwrap(with_ffi->call(x), name + ": radix call");
  Result<std::vector<float>> host = y.to_host<float>();
  if (!host.ok()) throw std::runtime_error(name + ": " + host.status().to_string());
  table.check(name, {{"radix", std::fabs(static_cast<double>((*host)[0]) - 2.0)}}, 1e-6, "|x-ref|");
  const std::vector<Contender> cs = {{"radix", [&] { Buffer out = unwrap(with_ffi->call(x), name); }, {}},
                                     {"no custom call", [&] { Buffer out = unwrap(plain->call(x), name); }, {}}};
  const std::vector<double> sec = measure_interleaved(cs, o);
  BenchRow row{name, 1, "Mcalls/s", 1e-6 / sec[0], {{"no custom call", 1e-6 / sec[1]}},
               "custom call adds " + std::to_string(static_cast<int>((sec[0] - sec[1]) * 1e9)) + " ns"};
  table.add(std::move(row));
}

// Runs one case, turning an exception into a failed check, so the other
// cases still run.
void guarded(const std::string& name, BenchTable& table, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    table.fail(name, e.what());
  }
}

}  // namespace

namespace {

struct KernelCase {
  std::string name;
  std::function<void(const BenchOptions&, BenchTable&)> run;
};

// Every kernel case at this run's sizes, in table order.
std::vector<KernelCase> kernel_cases(const BenchOptions& o) {
  std::vector<KernelCase> cases;
  auto gemm = [&](GemmSpec g) {
    cases.push_back({g.name, [g](const BenchOptions& op, BenchTable& t) { gemm_case(g, op, t); }});
  };
  // GFLOP/s rows (peers openblas, onednn): one table.
  gemm({"matmul 256^3", 1, 256, 256, 256, false, false});
  gemm({"matmul 1024^3", 1, 1024, 1024, 1024, false, false});
  if (!o.quick) gemm({"matmul 4096^3", 1, 4096, 4096, 4096, false, false});
  gemm({"linear 128x768 . W[2048,768]^T", 1, 128, 2048, 768, true, false});
  if (!o.quick) gemm({"linear 128x4096 . W[11008,4096]^T", 1, 128, 11008, 4096, true, false});
  gemm({"attention q.k^T 12x[128,64].[128,64]^T", 12, 128, 128, 64, true, false});
  // Sizes no tile divides (computed on zero-padded operands): a prompt
  // length that is not a multiple of anything, and an odd cube.
  gemm({"matmul 129^3", 1, 129, 129, 129, false, false});
  gemm({"linear 301x768 . W[2048,768]^T", 1, 301, 2048, 768, true, false});
  gemm({"attention q.k^T 12x[301,64].[301,64]^T", 12, 301, 301, 64, true, false});
  // GB/s of the weights (peers sgemv, sgemm, onednn, read).
  gemm({"matvec decode 1x4096 . W[4096,4096]^T", 1, 1, 4096, 4096, true, true});
  // Weights per ns (peers Radix f32, sgemv, reading the quantized bytes).
  for (auto [f, label] : {std::pair{QuantFormat::kInt8PerChannel, "int8"}, std::pair{QuantFormat::kQ8_0, "Q8_0"},
                          std::pair{QuantFormat::kQ4_0, "Q4_0"}, std::pair{QuantFormat::kQ8_0x16, "Q8_0x16"},
                          std::pair{QuantFormat::kQ4_0x16, "Q4_0x16"}}) {
    const std::string qn = std::string("matvec decode 1x4096 . W[4096,4096]^T ") + label;
    cases.push_back({qn, [=](const BenchOptions& op, BenchTable& t) { quant_matvec_case(qn, f, 4096, 4096, op, t); }});
  }

  // GB/s of bytes read + written (peers C++ -O3, memcpy): one table.
  const int64_t elems = o.quick ? int64_t{1} << 22 : int64_t{1} << 24;
  const int64_t rows = o.quick ? 1024 : 4096, cols = 4096;
  const std::string ew = "elementwise relu(a*b+c)*0.5-a " + std::to_string(elems >> 20) + "M";
  const std::string sm = "softmax " + std::to_string(rows) + "x" + std::to_string(cols);
  const std::string rn = "rmsnorm " + std::to_string(rows) + "x" + std::to_string(cols);
  cases.push_back({ew, [=](const BenchOptions& op, BenchTable& t) { elementwise_case(ew, elems, op, t); }});
  cases.push_back({sm, [=](const BenchOptions& op, BenchTable& t) { softmax_case(sm, rows, cols, op, t); }});
  cases.push_back({rn, [=](const BenchOptions& op, BenchTable& t) { rmsnorm_case(rn, rows, cols, op, t); }});
  // Calls per second of an empty executable (one thread: the call's own cost).
  cases.push_back({"empty call", [](const BenchOptions& op, BenchTable& t) { empty_call_case("empty call", op, t); }});
  cases.push_back({"empty custom call",
                   [](const BenchOptions& op, BenchTable& t) { empty_custom_call_case("empty custom call", op, t); }});
  return cases;
}

}  // namespace

std::vector<std::string> kernel_case_names(const BenchOptions& o) {
  std::vector<std::string> names;
  for (const KernelCase& c : kernel_cases(o)) names.push_back(c.name);
  return names;
}

void add_kernel_rows(const BenchOptions& o, BenchTable& table) {
  platform();  // first: the CPU backend sets libomp's defaults before oneDNN's first OpenMP call
  for (const KernelCase& c : kernel_cases(o))
    if (o.wants(c.name)) guarded(c.name, table, [&] { c.run(o, table); });
}

}  // namespace radix::cli::bench
