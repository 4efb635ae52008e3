// radix-bf16-dot-kernels (CpuOptions::bf16_kernels): f32 x · bf16 Wᵀ as
// AVX-512 BF16 vdpbf16ps loops, x rounded to bf16 once per product.
// On a host with avx512bf16: every tile shape (1-, 2-, 4-row tiles of x, 1 to
// 8 weight rows, one step of k and many) against a double loop over
// bf16-rounded x (the products of two bf16 are exact in f32: only the f32
// sums round), on 1, 2 and 3 threads with the same bits; with the option
// off, against the exact f32-x loop. On any host: a Zen 4 target (compiled,
// not run) gets vdpbf16ps and vcvtneps2bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "radix/core/half.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;
namespace fs = std::filesystem;

float from_bf16(uint16_t h) {
  const uint32_t u = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool host_has_bf16() {
  return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512f") && __builtin_cpu_is("amd");
}

struct Product {
  std::vector<float> out;
  std::vector<float> x;
  std::vector<uint16_t> w;
};

Product run(int64_t M, int64_t N, int64_t K, int threads, bool kernels) {
  CompileFnOptions o;
  o.compile.codegen.cpu.threads = threads;
  o.compile.codegen.cpu.bf16_kernels = kernels;
  Shape xs(DType::kF32, {M, K}), ws(DType::kBF16, {N, K});
  auto exe = must(compile_fn(cpu(), o, [](Tensor x, Tensor w) { return dot_general(x, w, DotDims{{}, {}, {1}, {1}}); },
                             xs, ws));
  EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
  Product p;
  p.x = testing::random_vec<float>(static_cast<size_t>(M * K), -1, 1, 81);
  for (float v : testing::random_vec<float>(static_cast<size_t>(N * K), -1, 1, 82)) p.w.push_back(float_to_bf16(v));
  p.out = must(must(exe.call(must(cpu().buffer(xs, p.x)), must(cpu().buffer(ws, p.w)))).to_host<float>());
  return p;
}

// max |out - ref| / (sum over k of |x w|), the f32 sums' relative error
// bound's scale; x rounded to bf16 first when `round_x`.
double worst_error(const Product& p, int64_t M, int64_t N, int64_t K, bool round_x) {
  double worst = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        float x = p.x[size_t(m * K + k)];
        if (round_x) x = from_bf16(float_to_bf16(x));
        const double t = double(x) * from_bf16(p.w[size_t(n * K + k)]);
        s += t;
        mag += std::fabs(t);
      }
      worst = std::max(worst, std::fabs(p.out[size_t(m * N + n)] - s) / std::max(mag, 1e-30));
    }
  return worst;
}

struct Mnk {
  int64_t m, n, k;
};
// Tiles: m 128 / 2 / 3 / 1 (4-, 2-, 1-row tiles; 6, 7 and 129: 4-row tiles
// and the last 2, 3 or 1 rows one at a time), n 768 / 10 / 7 / 1 (8, 4, 2,
// 1 weight rows; one row of x, a decode step, takes 1), k one step (32) to
// stories15M's 288.
constexpr Mnk kShapes[] = {{128, 768, 288}, {1, 768, 288}, {6, 10, 32},  {3, 7, 64},        {1, 1, 96},
                           {2, 40, 128},    {7, 12, 64},   {129, 40, 96}, {16, 32000 / 50, 64}};

TEST(Bf16Kernels, ProductsMatchRoundedActivationsOnEveryThreadCount) {
  if (!host_has_bf16())
    GTEST_SKIP() << "this CPU has no AVX-512 BF16 or is not an AMD Zen (the kernels are checked for a Zen 4 target below)";
  for (const Mnk& s : kShapes) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
    Product one = run(s.m, s.n, s.k, 1, true);
    // f32 sums of exact products, K <= 288 terms: |error| <= K * 2^-24 * sum |x w| ~ 1.7e-5 of it.
    EXPECT_LT(worst_error(one, s.m, s.n, s.k, /*round_x=*/true), 2e-5);
    // x really is rounded: the f32-x reference is ~2^-9 away.
    EXPECT_GT(worst_error(one, s.m, s.n, s.k, /*round_x=*/false), 1e-4);
    for (int t : {2, 3}) EXPECT_EQ(run(s.m, s.n, s.k, t, true).out, one.out) << t << " threads";
  }
}

TEST(Bf16Kernels, OffKeepsActivationsF32) {
  for (const Mnk& s : {Mnk{128, 768, 288}, Mnk{1, 768, 288}, Mnk{3, 7, 64}}) {
    Product p = run(s.m, s.n, s.k, 2, false);
    EXPECT_LT(worst_error(p, s.m, s.n, s.k, /*round_x=*/false), 2e-5) << s.m << "x" << s.n << "x" << s.k;
  }
}

// A k that is not a multiple of 32 keeps the f32 schedules (exact x).
TEST(Bf16Kernels, OddKKeepsTheF32Schedule) {
  Product p = run(4, 16, 40, 1, true);
  EXPECT_LT(worst_error(p, 4, 16, 40, /*round_x=*/false), 2e-5);
}

// Compiled (not run) for `cpu`: the assembly and the schedule script.
std::pair<std::string, std::string> compile_for(const char* target) {
  fs::path dir = fs::temp_directory_path() / ("radix-bf16-asm-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  CompileFnOptions o;
  o.compile.codegen.target_cpu = target;
  o.compile.diagnostics.dump = {"asm", "schedule-script"};
  o.compile.diagnostics.dump_dir = dir.string();
  auto exe = compile_fn(cpu(), o, [](Tensor x, Tensor w) { return dot_general(x, w, DotDims{{}, {}, {1}, {1}}); },
                        Shape(DType::kF32, {64, 256}), Shape(DType::kBF16, {128, 256}));
  if (!exe.ok()) return {};
  auto r = std::make_pair(testing::stage_dump(dir, "asm.s"), testing::stage_dump(dir, "schedule-script.mlir"));
  fs::remove_all(dir);
  return r;
}

TEST(Bf16Kernels, ZenFourTargetGetsVdpbf16ps) {
  auto [asm_text, script] = compile_for("znver4");
  if (asm_text.empty()) GTEST_SKIP() << "cannot compile for znver4 here";
  EXPECT_NE(asm_text.find("vdpbf16ps"), std::string::npos);
  EXPECT_NE(asm_text.find("vcvtneps2bf16"), std::string::npos);
  // Not the packed f32 schedule (the product is left to the kernel pass).
  EXPECT_EQ(script.find("transform.structured.pack"), std::string::npos);
}

// Sapphire Rapids has AVX-512 BF16 but runs vdpbf16ps at half the FMA
// rate: bf16 weights are widened into the packed f32 schedule there.
TEST(Bf16Kernels, IntelXeonTargetKeepsTheF32Schedule) {
  auto [asm_text, script] = compile_for("sapphirerapids");
  if (asm_text.empty()) GTEST_SKIP() << "cannot compile for sapphirerapids here";
  EXPECT_EQ(asm_text.find("vdpbf16ps"), std::string::npos);
  EXPECT_NE(script.find("transform.structured.pack"), std::string::npos);
}

}  // namespace
}  // namespace radix
