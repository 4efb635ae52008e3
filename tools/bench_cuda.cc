// radix bench-cuda: the CUDA backend on the GPU this process sees — f32 and
// bf16 matmul TFLOP/s against the device's FP32 peak, device-to-device copy
// bandwidth, Llama decode / prefill tokens/s (with --model) against the
// memory roofline, and compile times. Each product is checked at sampled
// entries against an f64 host loop. Without a GPU: exits 1 naming why.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "radix/backends/cuda/cuda_driver.h"
#include "radix/core/half.h"
#include "radix/models/llama/generator.h"
#include "radix/radix.h"
#include "tools/commands.h"

namespace radix::cli {

const char* kBenchCudaUsage =
    "usage: radix bench-cuda [--size N] [--iters N] [--model PATH] [--tokens N]\n"
    "\n"
    "Measures the CUDA backend on GPU 0 and prints a markdown table:\n"
    "  matmul N^3 in f32 and bf16 (f32 accumulation): TFLOP/s, and the fraction of the\n"
    "  device's FP32 CUDA-core peak (SMs x clock x 128 lanes x 2); compile time\n"
    "  device copy bandwidth (cuMemcpy of 1 GiB on the device, read + write)\n"
    "  with --model: Llama decode and prefill tokens/s (f32 and bf16 weights), decode as a\n"
    "  fraction of the memory roofline (weight bytes per token / measured bandwidth), and\n"
    "  the generator's compile time\n"
    "\n"
    "  --size N     matmul size (default 4096)\n"
    "  --iters N    timed calls per row after one warm-up (default 10)\n"
    "  --model PATH a Llama (e.g. radix bench --write-models DIR writes stories110M-random.safetensors)\n"
    "  --tokens N   decode tokens (default 64; the prompt is 128 tokens of prefill)\n";

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Args {
  int64_t size = 4096;
  int iters = 10;
  std::string model;
  int tokens = 64;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// One matmul row: TFLOP/s (median of iters), compile ms and the sampled check.
int matmul_row(const Platform& gpu, DType dt, const Args& a, double peak_tflops) {
  const int64_t n = a.size;
  Shape sa(dt, {n, n}, {"m", "k"}), sb(dt, {n, n}, {"k", "n"});
  auto t0 = Clock::now();
  auto exe = compile_fn(gpu, [](Tensor x, Tensor y) -> Tensor { return dot(x, y, "k"); }, sa, sb);
  if (!exe.ok()) return std::printf("| matmul %s %lld^3 | error: %s |\n", dtype_name(dt), (long long)n, exe.status().to_string().c_str()), 1;
  const double compile_ms = ms_since(t0);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> ha(size_t(n * n)), hb(size_t(n * n));
  for (auto& v : ha) v = d(rng);
  for (auto& v : hb) v = d(rng);
  auto upload = [&](const Shape& s, std::vector<float>& h) -> Result<Buffer> {
    if (dt == DType::kF32) return gpu.buffer(s, h);
    std::vector<uint16_t> bits(h.size());
    for (size_t i = 0; i < h.size(); ++i) {
      bits[i] = float_to_bf16(h[i]);
      h[i] = bf16_to_float(bits[i]);  // the reference sees the rounded inputs
    }
    return gpu.buffer(s, bits);
  };
  auto ba = upload(sa, ha), bb = upload(sb, hb);
  if (!ba.ok() || !bb.ok()) return std::printf("| matmul | upload failed: %s |\n", (ba.ok() ? bb : ba).status().to_string().c_str()), 1;
  auto warm = exe->call(*ba, *bb);
  if (!warm.ok()) return std::printf("| matmul | run failed: %s |\n", warm.status().to_string().c_str()), 1;
  std::vector<double> times;
  for (int i = 0; i < a.iters; ++i) {
    auto t1 = Clock::now();
    auto y = exe->call(*ba, *bb);
    if (!y.ok()) return std::printf("| matmul | run failed: %s |\n", y.status().to_string().c_str()), 1;
    times.push_back(ms_since(t1));
  }
  // Sampled check against an f64 loop.
  std::vector<float> out(size_t(n * n));
  if (dt == DType::kF32) {
    out = warm->to_host<float>().value();
  } else {
    std::vector<uint16_t> bits = warm->to_host<uint16_t>().value();
    for (size_t i = 0; i < bits.size(); ++i) out[i] = bf16_to_float(bits[i]);
  }
  double worst = 0;
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  for (int s = 0; s < 32; ++s) {
    const int64_t i = pick(rng), j = pick(rng);
    double ref = 0;
    for (int64_t k = 0; k < n; ++k) ref += double(ha[size_t(i * n + k)]) * double(hb[size_t(k * n + j)]);
    worst = std::max(worst, std::fabs(double(out[size_t(i * n + j)]) - ref) / std::sqrt(double(n)));
  }
  const double tol = dt == DType::kF32 ? 1e-4 : 2e-2;  // relative to sqrt(K), the sum's scale
  const double ms = median(times), tflops = 2.0 * double(n) * double(n) * double(n) / (ms * 1e-3) / 1e12;
  std::printf("| matmul %s %lld^3 | %.2f TFLOP/s | %.1f%% of FP32 peak (%.1f) | compile %.0f ms | check %.2g (tol %.0g): %s |\n",
              dtype_name(dt), (long long)n, tflops, 100 * tflops / peak_tflops, peak_tflops, compile_ms, worst, tol,
              worst <= tol ? "OK" : "MISMATCH");
  return worst <= tol ? 0 : 1;
}

// Device-to-device copy bandwidth (read + write bytes / time).
double copy_bandwidth(const Platform& gpu) {
  const size_t bytes = size_t{1} << 30;
  auto a = Buffer::allocate(gpu.backend(), Shape(DType::kU8, {int64_t(bytes)}));
  auto b = Buffer::allocate(gpu.backend(), Shape(DType::kU8, {int64_t(bytes)}));
  if (!a.ok() || !b.ok()) return 0;
  (void)gpu.backend()->copy_on_device(b->device_ptr(), a->device_ptr(), bytes);  // first touch
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    auto t0 = Clock::now();
    if (!gpu.backend()->copy_on_device(b->device_ptr(), a->device_ptr(), bytes).ok()) return 0;
    t.push_back(ms_since(t0));
  }
  return 2.0 * double(bytes) / (median(t) * 1e-3) / 1e9;
}

int llama_rows(const Platform& gpu, const Args& a, double gbps) {
  auto store = io::open_weights(a.model);
  if (!store.ok()) return std::printf("| llama | %s |\n", store.status().to_string().c_str()), 1;
  int rc = 0;
  for (DType wd : {DType::kF32, DType::kBF16}) {
    models::LlamaGenerator::Options o;
    o.weight_dtype = wd;
    auto t0 = Clock::now();
    auto gen = models::LlamaGenerator::load(gpu, **store, o);
    if (!gen.ok()) {
      std::printf("| llama %s | %s |\n", dtype_name(wd), gen.status().to_string().c_str());
      rc = 1;
      continue;
    }
    const double load_ms = ms_since(t0);
    std::vector<int32_t> prompt(128);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(1 + (i * 37) % 500);
    models::GenerateOptions g;
    g.temperature = 0;
    g.steps = int64_t(prompt.size()) + a.tokens;
    auto st = (*gen)->generate(prompt, g, [](int32_t) { return true; });
    if (!st.ok()) {
      std::printf("| llama %s | %s |\n", dtype_name(wd), st.status().to_string().c_str());
      rc = 1;
      continue;
    }
    // Weight bytes read per decoded token: every matrix and norm once.
    double weight_bytes = 0;
    for (const io::TensorInfo& t : (*store)->tensors()) {
      if (t.name.find("embed") != std::string::npos || t.name.find("tok_") != std::string::npos) continue;  // one row read
      const bool matrix = t.shape.rank() == 2;
      weight_bytes += double(t.shape.count()) * (matrix ? double(dtype_size(wd)) : 4.0);
    }
    const double tok_s = st->decode_tokens_per_s();
    const double roofline = gbps > 0 ? gbps * 1e9 / weight_bytes : 0;
    std::printf("| llama %s weights | decode %.1f tok/s | %.1f%% of the roofline (%.0f tok/s at %.0f GB/s) | prefill %.0f tok/s | "
                "load + compile %.0f ms (compile %.0f ms) |\n",
                dtype_name(wd), tok_s, roofline > 0 ? 100 * tok_s / roofline : 0, roofline, gbps,
                st->prefill_tokens_per_s(), load_ms, (*gen)->compile_ms());
  }
  return rc;
}

}  // namespace

int run_bench_cuda(int argc, char** argv) {
  Args a;
  for (int i = 0; i < argc; ++i) {
    std::string f = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto num = [&](int64_t lo, int64_t* out) {
      char* end = nullptr;
      long long x = v ? std::strtoll(v, &end, 10) : 0;
      if (!v || *end || x < lo) {
        std::fprintf(stderr, "radix bench-cuda: %s needs an integer >= %lld\n", f.c_str(), (long long)lo);
        return false;
      }
      *out = x;
      ++i;
      return true;
    };
    int64_t x = 0;
    if (f == "--help" || f == "-h") return std::fputs(kBenchCudaUsage, stdout), 0;
    if (f == "--size") { if (!num(16, &x)) return 2; a.size = x; }
    else if (f == "--iters") { if (!num(1, &x)) return 2; a.iters = int(x); }
    else if (f == "--tokens") { if (!num(1, &x)) return 2; a.tokens = int(x); }
    else if (f == "--model" && v) { a.model = v; ++i; }
    else return std::fprintf(stderr, "radix bench-cuda: unknown option '%s'\n%s", f.c_str(), kBenchCudaUsage), 2;
  }
  auto gpu = Platform::cuda();
  if (!gpu.ok()) return std::fprintf(stderr, "radix bench-cuda: %s\n", gpu.status().to_string().c_str()), 1;
  auto info = cuda::open_device(0);
  if (!info.ok()) return std::fprintf(stderr, "radix bench-cuda: %s\n", info.status().to_string().c_str()), 1;
  const double peak = double(info->multiprocessors) * double(info->clock_khz) * 1e3 * 128 * 2 / 1e12;
  std::printf("radix bench-cuda: %s (%s, %d SMs at %.0f MHz, %.0f GiB)\n\n", info->name.c_str(), info->sm().c_str(),
              info->multiprocessors, info->clock_khz / 1e3, double(info->memory_bytes) / double(1 << 30));
  std::printf("| case | figure | vs the device | notes | |\n| --- | --- | --- | --- | --- |\n");
  int rc = 0;
  rc |= matmul_row(*gpu, DType::kF32, a, peak);
  rc |= matmul_row(*gpu, DType::kBF16, a, peak);
  const double gbps = copy_bandwidth(*gpu);
  std::printf("| device copy 1 GiB | %.0f GB/s (read + write) | | | |\n", gbps);
  if (!a.model.empty()) rc |= llama_rows(*gpu, a, gbps);
  return rc;
}

}  // namespace radix::cli
