// Peak multiply-accumulate throughput of one core for the instructions a
// contraction's inner loop can use: f32 FMA (vfmadd231ps), AVX-512 BF16
// (vdpbf16ps: 2 bf16 products per f32 lane) and AVX-512 VNNI (vpdpbusd: 4
// u8 x s8 products per i32 lane), all on 512-bit registers with 12
// independent accumulators (more than latency x ports on any x86 core).
//
// Why: whether a low-precision instruction pays depends on the core, not on
// its presence. Measured on the Xeon these notes mention (family 6 model
// 207): FMA 85 G MAC/s, vdpbf16ps 42 G MAC/s (half: the schedule keeps bf16
// weights widened into FMAs there), vpdpbusd 245 G MAC/s (2.9x: an int8
// activation path would pay for quantized products). Counter `MAC` is shown
// as a rate; an instruction the CPU lacks is skipped with a message.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>

namespace {

constexpr int64_t kSteps = 1 << 20;  // per accumulator per iteration

__attribute__((target("avx512f"))) void BM_Fma(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) return state.SkipWithError("no AVX-512F on this CPU");
  const __m512 b = _mm512_set1_ps(1.0001f), c = _mm512_set1_ps(0.999f);
  for (auto _ : state) {
    __m512 acc[12];
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
    for (int64_t i = 0; i < kSteps; ++i)
#pragma GCC unroll 12
      for (int j = 0; j < 12; ++j) acc[j] = _mm512_fmadd_ps(acc[j], b, c);
    for (int j = 0; j < 12; ++j) benchmark::DoNotOptimize(acc[j]);
  }
  state.counters["MAC"] = benchmark::Counter(double(state.iterations()) * kSteps * 12 * 16, benchmark::Counter::kIsRate);
}

__attribute__((target("avx512f,avx512bf16"))) void BM_DpBf16(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512bf16")) return state.SkipWithError("no AVX-512 BF16 on this CPU");
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3f80), c = (__m512bh)_mm512_set1_epi16(0x3f00);
  for (auto _ : state) {
    __m512 acc[12];
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
    for (int64_t i = 0; i < kSteps; ++i)
#pragma GCC unroll 12
      for (int j = 0; j < 12; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], b, c);
    for (int j = 0; j < 12; ++j) benchmark::DoNotOptimize(acc[j]);
  }
  state.counters["MAC"] = benchmark::Counter(double(state.iterations()) * kSteps * 12 * 32, benchmark::Counter::kIsRate);
}

__attribute__((target("avx512f,avx512vnni"))) void BM_DpBusd(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512vnni")) return state.SkipWithError("no AVX-512 VNNI on this CPU");
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (auto _ : state) {
    __m512i acc[12];
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_set1_epi32(j);
    for (int64_t i = 0; i < kSteps; ++i)
#pragma GCC unroll 12
      for (int j = 0; j < 12; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
    for (int j = 0; j < 12; ++j) benchmark::DoNotOptimize(acc[j]);
  }
  state.counters["MAC"] = benchmark::Counter(double(state.iterations()) * kSteps * 12 * 64, benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Fma)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DpBf16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DpBusd)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
