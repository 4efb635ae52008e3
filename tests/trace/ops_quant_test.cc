// quantized_matmul / dequantize (trace/ops_quant.h) and the host quantizers
// (io/quantize.h). Every product is held to a double loop over the host's
// dequantized weights (io::dequantize, itself checked against GGUF's block
// decoders and the quantization error bounds), on every schedule (each
// ISA's tiling and plain loops), on 1 and 2 threads, for the in-register
// path (decode rows, and prompts with a long k) and the
// dequantize-then-matmul path.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <regex>
#include <unistd.h>

#include "op_test_helpers.h"
#include "radix/io/gguf.h"
#include "radix/io/quantize.h"
#include "radix/backends/cpu/schedule.h"

namespace radix {
namespace {

constexpr QuantFormat kFormats[] = {QuantFormat::kInt8PerChannel, QuantFormat::kQ8_0, QuantFormat::kQ4_0};
const char* name(QuantFormat f) { return quant_format_name(f); }

io::QuantizedMatrix quantize(QuantFormat f, const std::vector<float>& w, int64_t n, int64_t k) {
  return must(io::quantize(f, w, n, k));
}

Buffer device(const Shape& s, const std::vector<std::byte>& bytes) {
  return must(cpu().bytes(s, bytes));
}

// The activation quantizer quantized_matmul traces (ops_quant.h,
// kInt8Blocks), written out: blocks of 32, d = max|x| / 127, q = round(x / d)
// with halves away from zero (C's roundf), q = 0 where d is 0. Returns x as
// q * d (in double, exact), and each element's d in `step`.
std::vector<double> int8_blocks(const std::vector<float>& x, std::vector<double>* step = nullptr) {
  std::vector<double> out(x.size());
  if (step) step->assign(x.size(), 0);
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b + j]));
    const float d = amax / 127.0f, inv = d != 0 ? 1.0f / d : 0.0f;
    for (size_t j = 0; j < 32; ++j) {
      out[b + j] = double(std::roundf(x[b + j] * inv)) * double(d);
      if (step) (*step)[b + j] = d;
    }
  }
  return out;
}

std::vector<float> reference(const std::vector<double>& x, const std::vector<float>& w, int64_t m, int64_t n,
                             int64_t k) {
  std::vector<float> y(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t c = 0; c < k; ++c) acc += x[size_t(i * k + c)] * w[size_t(j * k + c)];
      y[size_t(i * n + j)] = float(acc);
    }
  return y;
}

// A dump folder of its own, removed at the end of the scope.
struct DumpDir {
  explicit DumpDir(const std::string& tag)
      : dir(std::filesystem::temp_directory_path() / ("radix-quant-" + std::to_string(::getpid()) + "-" + tag)) {
    std::filesystem::remove_all(dir);
  }
  ~DumpDir() { std::filesystem::remove_all(dir); }
  const std::filesystem::path& path() const { return dir; }
  std::filesystem::path dir;
};

std::vector<double> widen(const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); }

// The targets the integer kernels are checked on: the host, and Zen 3
// (AVX2 without VNNI) where the host runs AVX2 code.
std::vector<std::string> host_and_zen3() {
  if (!int8_target("").avx2) return {"host"};
  return {"host", "znver3"};
}

// Every schedule (each ISA's tiling, plain loops) and, for the integer
// activations, the CPU's int8 kernels (on AVX2 hosts) and the tiled
// fallback (int8_kernels off) agree with the reference on the same
// (quantized) operands.
// `target_cpu`: compiled for that CPU (one whose instructions this host
// runs) instead of the host.
void check_product(QuantFormat f, int64_t m, int64_t n, int64_t k, int threads,
                   QuantizedActivations acts = QuantizedActivations::kInt8Blocks, const std::string& target_cpu = "host") {
  const bool int8 = acts == QuantizedActivations::kInt8Blocks && k % 32 == 0 &&
                    quantized_matmul_in_registers(f, m, n, k, QuantizedMatmulOptions{acts});
  SCOPED_TRACE(std::string(name(f)) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
               " threads " + std::to_string(threads) + (int8 ? " int8 activations" : " f32 activations") +
               " target " + target_cpu);
  std::vector<float> wf = testing::random_vec<float>(size_t(n * k), -1, 1, 31);
  std::vector<float> x = testing::random_vec<float>(size_t(m * k), -1, 1, 32);
  io::QuantizedMatrix q = quantize(f, wf, n, k);
  const std::vector<float> w = io::dequantize(q);
  std::vector<float> want = reference(int8 ? int8_blocks(x) : widen(x), w, m, n, k);
  const Shape xs(DType::kF32, {m, k});
  // The x16 formats' f32-activation products have kernels too.
  const bool x16 = f == QuantFormat::kQ4_0x16 || f == QuantFormat::kQ8_0x16;
  // So do plain Q4_0 / Q8_0 prompts with f32 activations (16 rows at a time).
  const bool plain_groups = (f == QuantFormat::kQ4_0 || f == QuantFormat::kQ8_0) && m >= kQuantizedF32GroupMinRows &&
                            n % 16 == 0 && acts == QuantizedActivations::kF32;
  const bool kernels_matter =
      int8 || plain_groups || (x16 && quantized_matmul_in_registers(f, m, n, k, QuantizedMatmulOptions{acts}));
  for (bool kernels : {true, false}) {
    if (!kernels && !kernels_matter) continue;
    SCOPED_TRACE(kernels ? "int8 kernels on" : "int8 kernels off");
    on_every_schedule([&] {
      CompileFnOptions o;
      o.compile = g_opts.compile;
      o.compile.codegen.cpu.threads = threads;
      o.compile.codegen.cpu.int8_kernels = kernels;
      o.compile.codegen.target_cpu = target_cpu;
      auto exe = must(compile_fn(
          cpu(), o,
          [acts](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s, QuantizedMatmulOptions{acts}); },
          xs, q.values_shape, q.scales_shape));
      Buffer out = must(exe.call(must(cpu().buffer(xs, x)), device(q.values_shape, q.values),
                                 device(q.scales_shape, q.scales)));
      EXPECT_EQ(out.shape().to_string(), "f32[" + std::to_string(m) + "," + std::to_string(n) + "]");
      // f32 sums of k products of magnitude <= 1 against double.
      EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-5, 2e-6 * double(k)));
    });
  }
}

TEST(Quant, ProductsMatchDequantizedReference) {
  struct Mnk { int64_t m, n, k; };
  for (QuantFormat f : kFormats)
    // k / 32 blocks: 1, 2, 3 (steps of 2 and one block after them), 32, 9
    // and 11 (a step of 8, then 1 or 3 blocks one at a time: stories15M's 288).
    for (Mnk s : {Mnk{1, 1, 32}, Mnk{1, 33, 64}, Mnk{3, 12, 96}, Mnk{1, 64, 1024}, Mnk{16, 8, 64},
                  Mnk{17, 24, 64}, Mnk{1, 20, 288}, Mnk{2, 8, 352}})
      check_product(f, s.m, s.n, s.k, 1);
  // Prompts with a long k (integer kernels, row tiles, precomputed scales):
  // 4 x 2 tiles over 8 blocks at a time; 17 blocks (8 + 8 + 1); 3-row tiles
  // with one weight row (n odd); one row and 8 weight rows (m prime), 18
  // blocks (steps of 2). Short k (dequantized): 17 rows of k = 64 above.
  for (QuantFormat f : kFormats)
    for (Mnk s : {Mnk{32, 24, 512}, Mnk{20, 12, 544}, Mnk{18, 9, 512}, Mnk{17, 16, 576}})
      check_product(f, s.m, s.n, s.k, 1);
  // Q4_0 prompts with n a multiple of 8 (weight rows in the lanes) at any k:
  // 4-row tiles of x over 9 blocks (stories15M's k), 3-, 2- and 1-row tiles
  // (m = 30, 22, 17), one block, 8 and 40 weight rows; past the k whose
  // rewritten rows fit the stack cap (32768), the row-per-accumulator form.
  // On AVX-512 VNNI hosts (16-lane schedules), n a multiple of 16 takes
  // tiles of 16 rows (n = 16, 48), up to k = 16384 (16416: 8-row tiles).
  for (Mnk s : {Mnk{128, 16, 288}, Mnk{30, 40, 96}, Mnk{22, 8, 64}, Mnk{17, 24, 32}, Mnk{24, 8, 1024},
                Mnk{20, 8, 32800}, Mnk{20, 48, 544}, Mnk{17, 16, 16416}})
    check_product(QuantFormat::kQ4_0, s.m, s.n, s.k, 1);
  // int8 per channel takes any k, including odd ones no vector width divides.
  check_product(QuantFormat::kInt8PerChannel, 2, 5, 7, 1);
  check_product(QuantFormat::kInt8PerChannel, 1, 3, 40, 1);
}

TEST(Quant, ProductsOnTwoThreads) {
  for (QuantFormat f : kFormats) {
    check_product(f, 1, 512, 512, 2);
    check_product(f, 4, 256, 256, 2);
    check_product(f, 64, 256, 512, 2);
  }
  check_product(QuantFormat::kQ4_0, 36, 128, 288, 2);
}

// A prompt times a wide weight matrix on one thread (stories15M's
// classifier over a prompt: 4000 tiles of 8 Q4_0 weight rows; Q8_0 at
// k = 512, 16000 tiles of 2 rows): each tile's stack buffers are allocated
// once before the sequential tile loop, not once per tile (they were, and
// 8-9 MiB of them overflowed the 8 MiB stack).
TEST(Quant, LongPromptOnOneThreadKeepsTheStackFlat) {
  const int64_t m = 20, n = 32000;
  for (QuantFormat f : {QuantFormat::kQ4_0, QuantFormat::kQ8_0}) {
    const int64_t k = f == QuantFormat::kQ4_0 ? 288 : 512;
    SCOPED_TRACE(name(f));
    ASSERT_TRUE(quantized_matmul_in_registers(f, m, n, k, QuantizedMatmulOptions{}));
    std::vector<float> x = testing::random_vec<float>(size_t(m * k), -1, 1, 76);
    io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(size_t(n * k), -1, 1, 77), n, k);
    CompileFnOptions o;
    o.compile.codegen.cpu.threads = 1;
    auto exe = must(compile_fn(cpu(), o, [](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s); },
                               Shape(DType::kF32, {m, k}), q.values_shape, q.scales_shape));
    Buffer out = must(exe.call(must(cpu().buffer(Shape(DType::kF32, {m, k}), x)), device(q.values_shape, q.values),
                               device(q.scales_shape, q.scales)));
    EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), reference(int8_blocks(x), io::dequantize(q), m, n, k),
                                   1e-5, 2e-6 * double(k)));
  }
}

// A Q4_0 prompt's product on an AVX2 host runs with the weight rows in the
// accumulators' lanes: each 4 bytes of x broadcast (vpbroadcastd) and
// multiplied with 8 weight rows, no horizontal sums (vhaddps: the
// row-per-accumulator form's store_sums); Q8_0 too (16-row tiles rewritten
// on the stack). Neither zero-fills its output first.
TEST(Quant, Q4PromptPutsWeightRowsInLanes) {
  const Int8Target host = int8_target("");
  if (!host.avx2) GTEST_SKIP() << "this CPU has no AVX2: the int8 kernels are not used here";
  for (QuantFormat f : {QuantFormat::kQ4_0, QuantFormat::kQ8_0}) {
    SCOPED_TRACE(name(f));
    DumpDir dir(std::string("prompt-") + name(f));
    io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(64 * 512, -1, 1, 73), 64, 512);
    CompileFnOptions o;
    o.compile.diagnostics.dump = {"schedule", "asm"};
    o.compile.diagnostics.dump_dir = dir.path().string();
    must(compile_fn(cpu(), o, [](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s); },
                    Shape(DType::kF32, {64, 512}), q.values_shape, q.scales_shape));
    const std::string asm_text = testing::stage_dump(dir.path(), "asm.s");
    // The output is not zero-filled first: the kernel stores its sums into
    // an empty tensor.
    const std::string ir = testing::stage_dump(dir.path(), "schedule.mlir");
    std::smatch outs;
    ASSERT_TRUE(std::regex_search(ir, outs, std::regex(R"(outs\((%\w+) : tensor<64x64xf32>\) attrs = +\{[^}]*radix\.int8_overwrite)")))
        << ir;
    EXPECT_TRUE(std::regex_search(ir, std::regex(outs[1].str() + R"( = tensor\.empty\(\) : tensor<64x64xf32>)"))) << ir;
    EXPECT_NE(asm_text.find(host.vnni ? "vpdpbusd" : "vpmaddubsw"), std::string::npos) << asm_text;
    EXPECT_NE(asm_text.find("vpbroadcastd"), std::string::npos) << asm_text;
    EXPECT_EQ(asm_text.find("vhaddps"), std::string::npos) << asm_text;
  }
}

// Decode rows times x16 weights with int8 activations are split over two
// threads from 2^19 multiply-adds with 512-bit VNNI
// (kInt8DecodeMinParallelWork), from 2^16 without it (AVX2's kernels, half
// as fast per core: kInt8DecodeMinParallelWorkAvx2): the plan's third
// field (parallel) for stories15M's [1,288]·W[768,288]ᵀ (221K) is 0 with
// 512-bit VNNI and 1 without; [1,288]·W[128,288]ᵀ (36.9K) stays on one
// thread and [1,1024]·W[512,1024]ᵀ (2^19) is split on both; with f32
// activations the first is split as before (its kernel widens W to f32,
// 5x slower per weight). Host code and Zen 3 code; products checked
// against the reference on two threads.
TEST(Quant, X16DecodeProductsSplitOverThreadsFromTheirThreshold) {
  const Int8Target host = int8_target("");
  if (!host.avx2) GTEST_SKIP() << "this CPU has no AVX2: the int8 kernels are not used here";
  struct Case {
    int64_t n, k;
    QuantizedActivations acts;
    bool parallel_wide, parallel_avx2;
  };
  for (const std::string& t : host_and_zen3())
    for (QuantFormat f : {QuantFormat::kQ4_0x16, QuantFormat::kQ8_0x16})
      for (Case c : {Case{768, 288, QuantizedActivations::kInt8Blocks, false, true},
                     Case{128, 288, QuantizedActivations::kInt8Blocks, false, false},
                     Case{512, 1024, QuantizedActivations::kInt8Blocks, true, true},
                     Case{768, 288, QuantizedActivations::kF32, true, true}}) {
        const bool int8 = c.acts == QuantizedActivations::kInt8Blocks;
        const bool wide = t == "host" && host.vnni512;
        SCOPED_TRACE(t + " " + name(f) + " n " + std::to_string(c.n) + " k " + std::to_string(c.k) +
                     (int8 ? " int8" : " f32"));
        DumpDir dir(std::string("x16-threads-") + name(f) + "-" + t);
        io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(size_t(c.n * c.k), -1, 1, 91), c.n, c.k);
        CompileFnOptions o;
        o.compile.codegen.cpu.threads = 2;
        o.compile.codegen.target_cpu = t;
        o.compile.diagnostics.dump = {"schedule"};
        o.compile.diagnostics.dump_dir = dir.path().string();
        const QuantizedMatmulOptions qo{c.acts};
        auto exe = must(compile_fn(cpu(), o, [qo](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s, qo); },
                                   Shape(DType::kF32, {1, c.k}), q.values_shape, q.scales_shape));
        const std::string ir = testing::stage_dump(dir.path(), "schedule.mlir");
        std::smatch plan;
        ASSERT_TRUE(std::regex_search(ir, plan, std::regex(R"(radix\.int8_kernel = array<i64: (\d+), (\d+), (\d+))"))) << ir;
        EXPECT_EQ(plan[3].str(), (wide ? c.parallel_wide : c.parallel_avx2) ? "1" : "0") << ir;
        std::vector<float> x = testing::random_vec<float>(size_t(c.k), -1, 1, 92);
        Buffer out = must(exe.call(must(cpu().buffer(Shape(DType::kF32, {1, c.k}), x)), device(q.values_shape, q.values),
                                   device(q.scales_shape, q.scales)));
        EXPECT_TRUE(testing::all_close(must(out.to_host<float>()),
                                       reference(int8 ? int8_blocks(x) : widen(x), io::dequantize(q), 1, c.n, c.k), 1e-5,
                                       2e-6 * double(c.k)));
      }
}

// An interleaved decode product computes its output in tiles [n / 16, 16]
// of the [1, n] result: they are the result's own memory (one reshape), so
// the product writes the function's output buffer, with no buffer of its
// own copied into it afterwards (radix-outputs-in-place; a 128 KiB copy per
// token for a 32000-word classifier), and allocates nothing on the heap, on
// one and two threads, int8 and f32 activations, the numbers against the
// double loop.
TEST(Quant, X16DecodeWritesItsOutputInPlace) {
  for (QuantFormat f : {QuantFormat::kQ4_0x16, QuantFormat::kQ8_0x16})
    for (QuantizedActivations acts : {QuantizedActivations::kInt8Blocks, QuantizedActivations::kF32})
      for (int threads : {1, 2}) {
        const bool int8 = acts == QuantizedActivations::kInt8Blocks;
        SCOPED_TRACE(std::string(name(f)) + (int8 ? " int8" : " f32") + " threads " + std::to_string(threads));
        const int64_t n = 512, k = 288;
        DumpDir dir(std::string("x16-in-place-") + name(f) + (int8 ? "-int8-" : "-f32-") + std::to_string(threads));
        io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(size_t(n * k), -1, 1, 95), n, k);
        CompileFnOptions o;
        o.compile.codegen.cpu.threads = threads;
        o.compile.diagnostics.dump = {"bufferize", "llvm-ir"};
        o.compile.diagnostics.dump_dir = dir.path().string();
        const QuantizedMatmulOptions qo{acts};
        auto exe = must(compile_fn(cpu(), o, [qo](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s, qo); },
                                   Shape(DType::kF32, {1, k}), q.values_shape, q.scales_shape));
        const std::string ir = testing::stage_dump(dir.path(), "bufferize.mlir");
        EXPECT_EQ(testing::lines_with(ir, "memref.alloc", "memref<32x16xf32>"), std::vector<std::string>{})
            << "the output tiles in a buffer of their own";
        EXPECT_EQ(ir.find("memref.copy"), std::string::npos) << ir;
        // Nor any heap buffer: the int8 kernels' per-block x sums (36 bytes
        // here) are stack scratch (radix-stack-small-buffers' second run).
        const std::string llvm_ir = testing::stage_dump(dir.path(), "llvm-ir.ll");
        ASSERT_FALSE(llvm_ir.empty());
        EXPECT_EQ(llvm_ir.find("@malloc("), std::string::npos) << llvm_ir;
        std::vector<float> x = testing::random_vec<float>(size_t(k), -1, 1, 96);
        Buffer out = must(exe.call(must(cpu().buffer(Shape(DType::kF32, {1, k}), x)), device(q.values_shape, q.values),
                                   device(q.scales_shape, q.scales)));
        EXPECT_TRUE(testing::all_close(must(out.to_host<float>()),
                                       reference(int8 ? int8_blocks(x) : widen(x), io::dequantize(q), 1, n, k), 1e-5,
                                       2e-6 * double(k)));
      }
}

// x kept f32: the weights alone are quantized (the reference on f32 x).
TEST(Quant, F32ActivationsMatchDequantizedReference) {
  for (QuantFormat f : kFormats) {
    check_product(f, 1, 33, 64, 1, QuantizedActivations::kF32);
    check_product(f, 3, 12, 96, 2, QuantizedActivations::kF32);
  }
}

// Integer activations stay within their rounding bound of the f32 product:
// |Σ (x - q d) w| <= Σ |w| d / 2 (plus f32 rounding), and zero, tiny and
// huge blocks of x (d = 0, subnormal-free scales, 1e30) come out right.
TEST(Quant, Int8ActivationsStayWithinTheirRoundingBound) {
  const int64_t m = 2, n = 24, k = 256;
  std::vector<float> x = testing::random_vec<float>(size_t(m * k), -3, 3, 81);
  for (int j = 0; j < 32; ++j) {
    x[size_t(32 + j)] = 0;                          // a zero block
    x[size_t(64 + j)] = 1e-20f * float(j - 16);     // a tiny one
    x[size_t(k + 96 + j)] = 1e30f * float(16 - j);  // a huge one
  }
  for (QuantFormat f : kFormats) {
    SCOPED_TRACE(name(f));
    io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(size_t(n * k), -1, 1, 82), n, k);
    const std::vector<float> w = io::dequantize(q);
    std::vector<double> step;
    int8_blocks(x, &step);
    const std::vector<float> exact = reference(widen(x), w, m, n, k);
    auto exe = must(compile_fn(cpu(), [](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s); },
                               Shape(DType::kF32, {m, k}), q.values_shape, q.scales_shape));
    std::vector<float> got = must(must(exe.call(must(cpu().buffer(Shape(DType::kF32, {m, k}), x)),
                                                device(q.values_shape, q.values), device(q.scales_shape, q.scales)))
                                      .to_host<float>());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double bound = 0, mag = 0;
        for (int64_t c = 0; c < k; ++c) {
          bound += std::fabs(double(w[size_t(j * k + c)])) * step[size_t(i * k + c)] / 2;
          mag += std::fabs(double(w[size_t(j * k + c)]) * x[size_t(i * k + c)]);
        }
        const double y = exact[size_t(i * n + j)];
        EXPECT_LE(std::fabs(double(got[size_t(i * n + j)]) - y), bound * 1.001 + 1e-6 * mag) << i << "," << j;
      }
  }
}

// With f32 activations the in-register path is what runs: the product is
// tiled into dot-product register tiles and the weights are widened as
// vectors (a decode step): Q4_0 four weight rows at a time, byte weights
// (int8, Q8_0) one row at a time, two vectors of it per step (a whole block
// of 32 on AVX-512, half of one on AVX2).
TEST(Quant, DecodeStepWidensWeightsInVectors) {
  const std::string step = std::to_string(2 * host_vector_isa().f32_lanes);
  for (QuantFormat f : kFormats) {
    SCOPED_TRACE(name(f));
    DumpDir dir(name(f));
    io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(64 * 256, -1, 1, 71), 64, 256);
    CompileFnOptions o;
    o.compile.diagnostics.dump = {"schedule-script", "schedule"};
    o.compile.diagnostics.dump_dir = dir.path().string();
    must(compile_fn(
        cpu(), o,
        [](Tensor a, Tensor v, Tensor s) {
          return quantized_matmul(a, v, s, QuantizedMatmulOptions{QuantizedActivations::kF32});
        },
        Shape(DType::kF32, {1, 256}), q.values_shape, q.scales_shape));
    const std::string script = testing::stage_dump(dir.path(), "schedule-script.mlir");
    const std::string ir = testing::stage_dump(dir.path(), "schedule.mlir");
    EXPECT_NE(script.find("tile_reduction_using_for"), std::string::npos) << script;
    // e.g. arith.sitofp %54 : vector<4x1x16xi8> to vector<4x1x16xf32>: four weight rows at a time.
    if (f == QuantFormat::kQ4_0)
      EXPECT_NE(ir.find("xi8> to vector<4x"), std::string::npos) << ir;
    else
      EXPECT_NE(ir.find("vector<" + step + "xi8> to vector<" + step + "xf32>"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("arith.sitofp %in"), std::string::npos) << "a scalar widening left in a loop: " << ir;
  }
}

// With int8 activations (the default) on an AVX2 host, a decode step's
// products are the integer kernels: vpmaddubsw + vpmaddwd, or vpdpbusd with
// VNNI, in the generated code, no byte widened to f32 in a loop, and the
// weight rows of the next tile prefetched.
TEST(Quant, DecodeStepRunsIntegerDotProducts) {
  const Int8Target host = int8_target("");
  if (!host.avx2) GTEST_SKIP() << "this CPU has no AVX2: the int8 kernels are not used here";
  for (QuantFormat f : kFormats) {
    SCOPED_TRACE(name(f));
    DumpDir dir(name(f));
    io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(64 * 256, -1, 1, 72), 64, 256);
    CompileFnOptions o;
    o.compile.diagnostics.dump = {"schedule-script", "bufferize", "asm"};
    o.compile.diagnostics.dump_dir = dir.path().string();
    must(compile_fn(cpu(), o, [](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s); },
                    Shape(DType::kF32, {1, 256}), q.values_shape, q.scales_shape));
    const std::string script = testing::stage_dump(dir.path(), "schedule-script.mlir");
    const std::string ir = testing::stage_dump(dir.path(), "bufferize.mlir");
    const std::string asm_text = testing::stage_dump(dir.path(), "asm.s");
    EXPECT_EQ(ir.find("radix.int8_dot"), std::string::npos) << "the product was not replaced: " << ir;
    if (host.vnni512) {
      // Two blocks per 512-bit vpdpbusd.
      EXPECT_TRUE(std::regex_search(asm_text, std::regex("vpdpbusd[^\\n]*%zmm"))) << asm_text;
    } else if (host.vnni) {
      EXPECT_NE(asm_text.find("vpdpbusd"), std::string::npos) << asm_text;
    } else {
      EXPECT_NE(asm_text.find("vpmaddubsw"), std::string::npos) << asm_text;
      EXPECT_NE(asm_text.find("vpmaddwd"), std::string::npos) << asm_text;
    }
    // The sign trick (|w| times x with w's sign) for signed weights: vpsignb,
    // or on 512-bit vectors (no vpsignb) |w| and x negated under a mask of
    // w's sign bits; Q4_0's nibbles are unsigned as they are.
    if (f != QuantFormat::kQ4_0) {
      if (host.vnni512) {
        EXPECT_TRUE(std::regex_search(asm_text, std::regex("vpabsb\\s+%zmm"))) << asm_text;
        EXPECT_NE(asm_text.find("vpmovb2m"), std::string::npos) << asm_text;
      } else {
        EXPECT_NE(asm_text.find("vpsignb"), std::string::npos) << asm_text;
      }
    }
    // Each step prefetches the next tile's weight rows into L2.
    EXPECT_NE(asm_text.find("prefetcht1"), std::string::npos) << asm_text;
  }
}

// The assembly of x[rows, 256] · W[64, 256]ᵀ in format f compiled for Zen 4
// (or `target`; not run: any host) with a schedule of `lanes` f32 lanes;
// empty when LLVM here cannot target that CPU.
std::string compiled_asm(QuantFormat f, int64_t rows, int lanes, uint64_t seed, const std::string& target = "znver4") {
  DumpDir dir(target + "-" + name(f) + "-" + std::to_string(rows) + "-" + std::to_string(lanes));
  io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(64 * 256, -1, 1, seed), 64, 256);
  CompileFnOptions o;
  o.compile.codegen.target_cpu = target;
  o.compile.codegen.cpu.schedule_isa = VectorIsa{lanes, lanes == 16 ? 32 : 16};
  o.compile.diagnostics.dump = {"asm"};
  o.compile.diagnostics.dump_dir = dir.path().string();
  auto exe = compile_fn(cpu(), o, [](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s); },
                        Shape(DType::kF32, {rows, 256}), q.values_shape, q.scales_shape);
  return exe.ok() ? testing::stage_dump(dir.path(), "asm.s") : std::string();
}

// How often `op` occurs in the assembly of x[m, k] · W[n, k]ᵀ in format f
// compiled for `target` ("host": this CPU) on `threads` threads.
size_t count_in_decode_asm(QuantFormat f, int64_t n, int64_t k, int threads, const std::string& target,
                           const std::string& op, int64_t m = 1) {
  SCOPED_TRACE(target + " n " + std::to_string(n) + " k " + std::to_string(k) + " m " + std::to_string(m) +
               " threads " + std::to_string(threads));
  DumpDir dir(std::string("decode-") + name(f) + "-" + target + "-" + std::to_string(n) + "-" + std::to_string(m) +
              "-" + std::to_string(threads));
  io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(size_t(n * k), -1, 1, 79), n, k);
  CompileFnOptions o;
  o.compile.codegen.cpu.threads = threads;
  o.compile.codegen.target_cpu = target;
  o.compile.diagnostics.dump = {"asm"};
  o.compile.diagnostics.dump_dir = dir.path().string();
  must(compile_fn(cpu(), o, [](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s); },
                  Shape(DType::kF32, {m, k}), q.values_shape, q.scales_shape));
  return testing::count_of(testing::stage_dump(dir.path(), "asm.s"), op);
}

// On a VNNI CPU the interleaved Q4_0 prompt kernel sums each group with
// vpdpbusd into i32 (no vpmaddubsw / vpmaddwd): 512-bit, 16 weight rows per
// tile, with a 16-lane schedule; 256-bit, 8 rows, with an 8-lane one. Q8_0
// prompts (tiles of 16 rows rewritten on the stack) alike.
TEST(Quant, Q4PromptUsesVnniWhereTheTargetHasIt) {
  for (QuantFormat f : {QuantFormat::kQ4_0, QuantFormat::kQ8_0})
  for (int lanes : {16, 8}) {
    SCOPED_TRACE(std::string(name(f)) + " " + std::to_string(lanes) + " lanes");
    const std::string asm_text = compiled_asm(f, 64, lanes, 74);
    if (asm_text.empty()) GTEST_SKIP() << "cannot compile for znver4 here";
    EXPECT_TRUE(std::regex_search(asm_text, std::regex(lanes == 16 ? "vpdpbusd[^\\n]*%zmm" : "vpdpbusd[^\\n]*%ymm")))
        << asm_text;
    EXPECT_NE(asm_text.find("vpbroadcastd"), std::string::npos) << asm_text;
    EXPECT_EQ(asm_text.find("vhaddps"), std::string::npos) << asm_text;
  }
}

// A decode step's products take two blocks per 512-bit vpdpbusd for every
// format with a 16-lane schedule; with an 8-lane one they stay 256-bit.
TEST(Quant, DecodeStepUses512BitVnniWhereTheTargetHasIt) {
  for (QuantFormat f : kFormats)
    for (int lanes : {16, 8}) {
      SCOPED_TRACE(std::string(name(f)) + " " + std::to_string(lanes) + " lanes");
      const std::string asm_text = compiled_asm(f, 1, lanes, 75);
      if (asm_text.empty()) GTEST_SKIP() << "cannot compile for znver4 here";
      EXPECT_EQ(std::regex_search(asm_text, std::regex("vpdpbusd[^\\n]*%zmm")), lanes == 16) << asm_text;
      EXPECT_TRUE(std::regex_search(asm_text, std::regex("vpdpbusd[^\\n]*%ymm")) || lanes == 16) << asm_text;
    }
}

// Q4_0's block pairs take their nibbles from one vgf2p8affineqb where the
// target has GFNI (Zen 4), from a shift and a mask where it has not
// (Cascade Lake: AVX-512 VNNI without GFNI).
TEST(Quant, Q4BlockPairsUseGfniWhereTheTargetHasIt) {
  for (const char* target : {"znver4", "cascadelake"}) {
    SCOPED_TRACE(target);
    const std::string asm_text = compiled_asm(QuantFormat::kQ4_0, 1, 16, 76, target);
    if (asm_text.empty()) GTEST_SKIP() << "cannot compile for " << target << " here";
    const bool gfni = std::string(target) == "znver4";
    EXPECT_EQ(asm_text.find("vgf2p8affineqb") != std::string::npos, gfni) << asm_text;
    EXPECT_EQ(std::regex_search(asm_text, std::regex("vpsrlvd[^\\n]*%zmm")), !gfni) << asm_text;
  }
}

// The shift-and-mask form against the reference, run here where the host
// has AVX-512 VNNI (its own code takes GFNI where it has that too):
// decode over 1, 2, 32 and 9 blocks, and a prompt's precomputed scales.
TEST(Quant, Q4BlockPairsWithoutGfniMatchReference) {
  if (!int8_target("").vnni512) GTEST_SKIP() << "the host has no AVX-512 VNNI";
  for (auto [m, n, k] : {std::tuple{1, 33, 64}, std::tuple{1, 64, 1024}, std::tuple{1, 20, 288}, std::tuple{18, 9, 512}})
    check_product(QuantFormat::kQ4_0, m, n, k, 1, QuantizedActivations::kInt8Blocks, "cascadelake");
}

TEST(Quant, LeadingAxesAndDequantize) {
  // x [2, 1, 64] -> [2, 1, 8]; dequantize(values, scales) equals the host's.
  for (QuantFormat f : kFormats) {
    SCOPED_TRACE(name(f));
    std::vector<float> wf = testing::random_vec<float>(8 * 64, -2, 2, 41);
    std::vector<float> x = testing::random_vec<float>(2 * 64, -1, 1, 42);
    io::QuantizedMatrix q = quantize(f, wf, 8, 64);
    std::vector<float> w = io::dequantize(q);
    auto exe = must(compile_fn(
        cpu(), [](Tensor a, Tensor v, Tensor s) { return std::vector<Tensor>{quantized_matmul(a, v, s), dequantize(v, s)}; },
        Shape(DType::kF32, {2, 1, 64}), q.values_shape, q.scales_shape));
    auto out = must(exe.call(must(cpu().buffer(Shape(DType::kF32, {2, 1, 64}), x)), device(q.values_shape, q.values),
                             device(q.scales_shape, q.scales)));
    EXPECT_EQ(out[0].shape().to_string(), "f32[2,1,8]");
    // x quantized to int8 blocks (the default): the reference on the same x.
    EXPECT_TRUE(testing::all_close(must(out[0].to_host<float>()), reference(int8_blocks(x), w, 2, 8, 64), 1e-5, 2e-4));
    EXPECT_EQ(must(out[1].to_host<float>()), w);
  }
}

TEST(Quant, HostQuantizersBoundTheError) {
  const int64_t n = 4, k = 64;
  std::vector<float> w = testing::random_vec<float>(size_t(n * k), -3, 3, 51);
  w[5] = 0;  // zero blocks / rows stay zero
  std::vector<float> zeros(size_t(k), 0.0f);
  std::copy(zeros.begin(), zeros.end(), w.begin() + 2 * k);
  for (QuantFormat f : kFormats) {
    SCOPED_TRACE(name(f));
    std::vector<float> d = io::dequantize(quantize(f, w, n, k));
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) {
        // The error is at most half a step of the row's / block's scale
        // (Q4_0: one step at the clamped top), plus the f16 rounding of it.
        const int64_t group = f == QuantFormat::kInt8PerChannel ? k : 32, g0 = r * k + c / group * group;
        float amax = 0;
        for (int64_t j = 0; j < group; ++j) amax = std::max(amax, std::fabs(w[size_t(g0 + j)]));
        const double step = f == QuantFormat::kQ4_0 ? amax / 8.0 : amax / 127.0;
        const double bound = (f == QuantFormat::kQ4_0 ? 1.0 : 0.5) * step * 1.01 + amax * 2e-3 + 1e-7;
        EXPECT_LE(std::fabs(d[size_t(r * k + c)] - w[size_t(r * k + c)]), bound) << r << "," << c;
      }
    for (int64_t c = 0; c < k; ++c) EXPECT_EQ(d[size_t(2 * k + c)], 0.0f);
  }
}

// The byte quantizers round as llama.cpp's do (roundf: halves away from
// zero): a block (Q8_0) or row (int8) whose largest magnitude is 127 has
// scale 1, so its values are rounded as they are, halves and the floats
// next to them included; the reference is std::roundf.
TEST(Quant, ByteQuantizersRoundHalvesAwayFromZero) {
  const float below = std::nextafter(0.5f, 0.0f);
  const std::vector<float> edge = {127,  0.5f,  -0.5f,  1.5f,    -1.5f,  2.5f,   -2.5f, below, -below,
                                   126.5f, -126.5f, 0.0f, -0.0f, 3.4999998f, -3.5f, 64.5f, -127, 0.75f};
  std::vector<float> row(64);
  for (size_t i = 0; i < row.size(); ++i) row[i] = edge[i % edge.size()];
  row[32] = 127;  // the second block's largest magnitude too
  for (QuantFormat f : {QuantFormat::kQ8_0, QuantFormat::kInt8PerChannel}) {
    SCOPED_TRACE(name(f));
    io::QuantizedMatrix q = quantize(f, row, 1, 64);
    for (size_t i = 0; i < row.size(); ++i)
      EXPECT_EQ(static_cast<int8_t>(q.values[i]), static_cast<int8_t>(std::roundf(row[i]))) << i << ": " << row[i];
  }
}

// GGUF blocks split into values and scales decode to what the GGUF loader's
// block decoders give for the same bytes.
TEST(Quant, SplitGgufBlocksMatchTheLoadersDecoders) {
  const int64_t n = 3, k = 64;
  std::vector<float> w = testing::random_vec<float>(size_t(n * k), -1, 1, 61);
  for (bool q4 : {false, true}) {
    SCOPED_TRACE(q4 ? "Q4_0" : "Q8_0");
    io::QuantizedMatrix q = must(q4 ? io::quantize_q4_0(w, n, k) : io::quantize_q8_0(w, n, k));
    // Interleave into GGUF's blocks: f16 scale, then the block's bytes.
    const size_t vb = q4 ? 16 : 32, blocks = size_t(n * k / 32);
    std::vector<std::byte> gguf;
    for (size_t b = 0; b < blocks; ++b) {
      gguf.insert(gguf.end(), q.scales.begin() + 2 * b, q.scales.begin() + 2 * b + 2);
      gguf.insert(gguf.end(), q.values.begin() + vb * b, q.values.begin() + vb * (b + 1));
    }
    std::vector<float> decoded(size_t(n * k));
    if (q4) io::dequantize_q4_0(gguf, decoded);
    else io::dequantize_q8_0(gguf, decoded);
    io::QuantizedMatrix split = must(q4 ? io::split_gguf_q4_0(gguf, n, k) : io::split_gguf_q8_0(gguf, n, k));
    EXPECT_EQ(split.values, q.values);
    EXPECT_EQ(split.scales, q.scales);
    EXPECT_EQ(io::dequantize(split), decoded);
    // A truncated tensor names its sizes.
    auto bad = q4 ? io::split_gguf_q4_0(std::span(gguf).first(gguf.size() - 1), n, k)
                  : io::split_gguf_q8_0(std::span(gguf).first(gguf.size() - 1), n, k);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("[3, 64]"), std::string::npos) << bad.status().message();
  }
  auto odd = io::quantize_q8_0(std::vector<float>(3 * 40, 1.0f), 3, 40);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("multiple of 32"), std::string::npos);
}

// Q4_0x16 (16 weight rows interleaved): the row-group kernels against the
// reference on the same quantized numbers. Decode (one row of x, and 3):
// 1, 2, 3, 4, 5 and 18 row groups (one group per tile), 1, 9 and 32
// blocks; rows of 128 blocks (4, 8 and 2 groups: two per tile with
// 512-bit VNNI, see X16DecodeOfLongRowsReadsTwoRowGroupsAtOnce; 3 groups:
// one); prompts (4-, 3-, 2-, 1-row tiles of x: m = 128, 30, 34, 17; k =
// 16416, past the unpacked tile's stack cap);
// one and two threads; f32 activations (rows put back in order). The
// host's kernels (512-bit VNNI on AVX-512 VNNI hosts), and compiled for
// Zen 3 (AVX2 without VNNI: vpmaddubsw's i16 sums), which any AVX2 host runs.
TEST(Quant, Q4RowsMatchDequantizedReference) {
  struct Mnk { int64_t m, n, k; };
  for (const std::string& t : host_and_zen3())
    for (Mnk s : {Mnk{1, 16, 32}, Mnk{1, 32, 288}, Mnk{1, 48, 64}, Mnk{1, 64, 1024}, Mnk{1, 80, 96}, Mnk{1, 288, 288},
                  Mnk{3, 32, 64}, Mnk{128, 16, 288}, Mnk{30, 48, 96}, Mnk{34, 32, 64}, Mnk{17, 16, 32},
                  Mnk{17, 32, 16416}, Mnk{1, 64, 4096}, Mnk{1, 48, 4096}})
      check_product(QuantFormat::kQ4_0x16, s.m, s.n, s.k, 1, QuantizedActivations::kInt8Blocks, t);
  for (const std::string& t : host_and_zen3()) {
    check_product(QuantFormat::kQ4_0x16, 1, 512, 512, 2, QuantizedActivations::kInt8Blocks, t);
    check_product(QuantFormat::kQ4_0x16, 1, 128, 4096, 2, QuantizedActivations::kInt8Blocks, t);
    check_product(QuantFormat::kQ4_0x16, 1, 32, 4096, 2, QuantizedActivations::kInt8Blocks, t);
    check_product(QuantFormat::kQ4_0x16, 1, 96, 288, 2, QuantizedActivations::kInt8Blocks, t);
    check_product(QuantFormat::kQ4_0x16, 64, 256, 512, 2, QuantizedActivations::kInt8Blocks, t);
  }
}

// x16 weights times f32 activations: W's interleaved bytes widened to f32
// in registers (the f32 row-group kernel: 16-lane vectors on AVX-512
// hosts, 8-lane ones in two passes per group for Zen 3 and the 8-lane
// schedules). Decode (1 and 2 rows of x): 1, 2, 3, 5 row groups; 1, 3, 9
// and 32 blocks. Prompts (from 3 rows: each group dequantized on the stack
// once): tiles of 4 rows (AVX-512) or 3 (AVX2) with every remainder (m =
// 3, 16, 20, 37, 128, 18, 19), 1 to 130 blocks (past 128 the blocks run in
// chunks, each adding to the output, the last one short); a long prompt
// in blocks of rows of x (m = 301 at k = 8192: 252 rows, then 49); one row
// group (n = 16: its unit loop folded away, the product left to the
// schedules' loops). One and two threads.
TEST(Quant, X16RowsWithF32ActivationsMatchDequantizedReference) {
  struct Mnk { int64_t m, n, k; };
  for (QuantFormat f : {QuantFormat::kQ4_0x16, QuantFormat::kQ8_0x16})
    for (const std::string& t : host_and_zen3()) {
      for (Mnk s : {Mnk{1, 16, 32}, Mnk{1, 48, 96}, Mnk{1, 80, 288}, Mnk{2, 32, 1024}, Mnk{3, 32, 64}, Mnk{16, 32, 64},
                    Mnk{20, 48, 96}, Mnk{37, 32, 32}, Mnk{128, 32, 288}, Mnk{18, 32, 4160}, Mnk{17, 16, 64}, Mnk{301, 32, 8192}})
        check_product(f, s.m, s.n, s.k, 1, QuantizedActivations::kF32, t);
      check_product(f, 1, 512, 256, 2, QuantizedActivations::kF32, t);
      check_product(f, 5, 64, 96, 2, QuantizedActivations::kF32, t);
      check_product(f, 19, 64, 4160, 2, QuantizedActivations::kF32, t);
    }
}

// Plain Q4_0 (from 3 rows of x) and Q8_0 (past 16 rows) prompts with f32
// activations and n a multiple of 16: each group of 16 rows dequantized
// into the x16 lane order on the stack (a 4 x 4 transpose of 128-bit
// pieces on AVX-512, 2 x 4 on AVX2), then the x16 prompts' row tiles: 4-,
// 3-, 2- and 1-row tiles of x, 1-3 row groups (n = 16: one), 1-9 blocks,
// k past one chunk of 4096 (4160), m = 301 at k = 8192 (rows of x in
// blocks); n = 40 (not whole groups: dequantized whole) and Q8_0 at 16
// rows (its decode tiles); one and two threads; host and Zen 3 code.
TEST(Quant, PlainRowsWithF32ActivationsMatchDequantizedReference) {
  struct Mnk { int64_t m, n, k; };
  for (QuantFormat f : {QuantFormat::kQ4_0, QuantFormat::kQ8_0})
    for (const std::string& t : host_and_zen3()) {
      for (Mnk s : {Mnk{3, 32, 64}, Mnk{5, 48, 96}, Mnk{16, 32, 64}, Mnk{17, 16, 64}, Mnk{20, 48, 96}, Mnk{37, 32, 32},
                    Mnk{128, 32, 288}, Mnk{18, 32, 4160}, Mnk{24, 40, 64}, Mnk{301, 32, 8192}})
        check_product(f, s.m, s.n, s.k, 1, QuantizedActivations::kF32, t);
      check_product(f, 19, 64, 4160, 2, QuantizedActivations::kF32, t);
      check_product(f, 22, 64, 96, 2, QuantizedActivations::kF32, t);
    }
}

// Q8_0x16: the same shapes through the VNNI kernels (W's signed bytes read
// as w + 128), and compiled for Zen 3 (AVX2: |w| times x with w's sign).
// Decode on one thread reads two row groups per tile from 2 groups (n =
// 32, 64; see Q8DecodeReadsTwoRowGroupsAtOnce), one for an odd count (16,
// 48, 80); on two threads rows of 4096 too (n = 128, and 32: one tile).
TEST(Quant, Q8RowsMatchDequantizedReference) {
  struct Mnk { int64_t m, n, k; };
  for (const std::string& t : host_and_zen3())
    for (Mnk s : {Mnk{1, 16, 32}, Mnk{1, 32, 288}, Mnk{1, 48, 64}, Mnk{1, 64, 1024}, Mnk{1, 80, 96}, Mnk{3, 32, 64},
                  Mnk{128, 16, 288}, Mnk{30, 48, 96}, Mnk{34, 32, 64}})
      check_product(QuantFormat::kQ8_0x16, s.m, s.n, s.k, 1, QuantizedActivations::kInt8Blocks, t);
  for (const std::string& t : host_and_zen3()) {
    check_product(QuantFormat::kQ8_0x16, 1, 512, 512, 2, QuantizedActivations::kInt8Blocks, t);
    check_product(QuantFormat::kQ8_0x16, 1, 96, 288, 2, QuantizedActivations::kInt8Blocks, t);
    check_product(QuantFormat::kQ8_0x16, 1, 128, 4096, 2, QuantizedActivations::kInt8Blocks, t);
    check_product(QuantFormat::kQ8_0x16, 1, 32, 4096, 2, QuantizedActivations::kInt8Blocks, t);
  }
  check_product(QuantFormat::kQ8_0x16, 64, 256, 512, 2);
}

// A Q8_0x16 decode product runs two row groups, n / 32 apart, in each
// tile's block loop (two streams through W): its code holds twice the
// integer dot products of the one-group loop, which an odd group count (n
// = 48: three) keeps. Split over two threads ([1,1024]·W[512,1024]ᵀ) it
// keeps the two streams with AVX2 (Zen 3 code, and host code on hosts
// without 512-bit VNNI) and goes back to one group with 512-bit VNNI.
// Host code (vpdpbusd with VNNI) and Zen 3 code (vpmaddubsw); the
// products' numbers are checked by Q8RowsMatchDequantizedReference.
TEST(Quant, Q8DecodeReadsTwoRowGroupsAtOnce) {
  const Int8Target host = int8_target("");
  if (!host.avx2) GTEST_SKIP() << "this CPU has no AVX2: the int8 kernels are not used here";
  for (const std::string& t : host_and_zen3()) {
    const std::string op = t == "host" && host.vnni ? "vpdpbusd" : "vpmaddubsw";
    const bool wide = t == "host" && host.vnni512;
    SCOPED_TRACE(t);
    const size_t one = count_in_decode_asm(QuantFormat::kQ8_0x16, 48, 256, 1, t, op);
    ASSERT_GT(one, 0u);
    EXPECT_EQ(count_in_decode_asm(QuantFormat::kQ8_0x16, 64, 256, 1, t, op), 2 * one);
    EXPECT_EQ(count_in_decode_asm(QuantFormat::kQ8_0x16, 512, 1024, 1, t, op), 2 * one);
    EXPECT_EQ(count_in_decode_asm(QuantFormat::kQ8_0x16, 512, 1024, 2, t, op), wide ? one : 2 * one);
  }
}

// An x16 decode product of long rows (4096 weights: 128 blocks) runs two
// row groups, n / 32 apart, in each tile's block loop with 512-bit VNNI
// (Zen 4 / Zen 5 code) on one thread and two (n = 512: large enough to be
// split over two threads): twice the vpdpbusd of one group's loop, which
// an odd group count (n = 48) keeps, and shorter rows (2048 weights) keep
// on two threads (Q4_0x16 on one too; Q8_0x16 takes two streams on one
// thread at any length). Zen 3 code (AVX2, vpmaddubsw): Q4_0x16 keeps one
// group. Compiled only (any host can compile for those CPUs); the numbers
// are checked by Q4RowsMatchDequantizedReference and
// Q8RowsMatchDequantizedReference.
TEST(Quant, X16DecodeOfLongRowsReadsTwoRowGroupsAtOnce) {
  if (compiled_asm(QuantFormat::kQ4_0, 1, 16, 76).empty()) GTEST_SKIP() << "cannot compile for znver4 here";
  for (QuantFormat f : {QuantFormat::kQ4_0x16, QuantFormat::kQ8_0x16}) {
    SCOPED_TRACE(name(f));
    const bool q4 = f == QuantFormat::kQ4_0x16;
    const size_t one = count_in_decode_asm(f, 48, 4096, 1, "znver4", "vpdpbusd");
    ASSERT_GT(one, 0u);
    for (int threads : {1, 2}) {
      EXPECT_EQ(count_in_decode_asm(f, 512, 4096, threads, "znver4", "vpdpbusd"), 2 * one) << threads;
      EXPECT_EQ(count_in_decode_asm(f, 512, 2048, threads, "znver4", "vpdpbusd"), q4 || threads == 2 ? one : 2 * one)
          << threads;
    }
  }
  const size_t avx2 = count_in_decode_asm(QuantFormat::kQ4_0x16, 48, 4096, 1, "znver3", "vpmaddubsw");
  ASSERT_GT(avx2, 0u);
  EXPECT_EQ(count_in_decode_asm(QuantFormat::kQ4_0x16, 512, 4096, 1, "znver3", "vpmaddubsw"), avx2);
}

// A Q4_0x16 decode product with AVX2 prefetches, each block, the block 8
// ahead in W into L2: its four 64-byte lines and its scales, 5 prefetcht1
// in the block loop, on one thread and two (and W's last block no further:
// the numbers at every group count are Q4RowsMatchDequantizedReference's).
// 512-bit VNNI code has none, nor does a prompt (3 rows of x).
TEST(Quant, Q4DecodeWithAvx2PrefetchesBlocksAhead) {
  const Int8Target host = int8_target("");
  if (!host.avx2) GTEST_SKIP() << "this CPU has no AVX2: the int8 kernels are not used here";
  for (const std::string& t : host_and_zen3()) {
    const bool wide = t == "host" && host.vnni512;
    SCOPED_TRACE(t);
    for (int threads : {1, 2})
      EXPECT_EQ(count_in_decode_asm(QuantFormat::kQ4_0x16, 512, 1024, threads, t, "prefetcht1"), wide ? 0u : 5u)
          << threads << " threads";
    EXPECT_EQ(count_in_decode_asm(QuantFormat::kQ4_0x16, 512, 1024, 1, t, "prefetcht1", /*m=*/3), 0u);
  }
}

// Q8_0 prompts in plain rows with n a multiple of 16 take integer
// activations at any k; on AVX2 hosts each tile of 16 weight rows is
// rewritten in the Q8_0x16 layout on the stack (two blocks per 16 x 16
// dword transpose, an odd last block alone) and run by the row-group
// kernel. 4-, 3-, 2- and 1-row tiles of x (m = 128, 30, 22, 17); 1, 2, 9,
// 17 and 18 blocks; 1, 2 and 3 row groups; k = 16384 (the stack cap) and
// 16416 (past it: the row-per-accumulator form); one and two threads; and
// compiled for Zen 3 (AVX2 without VNNI: W's signs moved onto x, vpsignb,
// and |w| times x by vpmaddubsw; short k only), whose code has no
// horizontal sums either.
TEST(Quant, Q8PromptsInRowGroupsMatchDequantizedReference) {
  struct Mnk { int64_t m, n, k; };
  for (const std::string& t : host_and_zen3()) {
    for (Mnk s : {Mnk{128, 16, 288}, Mnk{30, 48, 64}, Mnk{22, 32, 32}, Mnk{17, 16, 544}, Mnk{20, 16, 576},
                  Mnk{17, 16, 16384}, Mnk{17, 16, 16416}})
      if (t == "host" || s.k < 1024) check_product(QuantFormat::kQ8_0, s.m, s.n, s.k, 1, QuantizedActivations::kInt8Blocks, t);
    check_product(QuantFormat::kQ8_0, 36, 128, 288, 2, QuantizedActivations::kInt8Blocks, t);
    check_product(QuantFormat::kQ8_0, 64, 256, 544, 2, QuantizedActivations::kInt8Blocks, t);
  }
  const std::string asm_text = compiled_asm(QuantFormat::kQ8_0, 64, 8, 78, "znver3");
  if (asm_text.empty()) GTEST_SKIP() << "cannot compile for znver3 here";
  for (const char* op : {"vpsignb", "vpmaddubsw", "vpmaddwd", "vpbroadcastd"})
    EXPECT_NE(asm_text.find(op), std::string::npos) << op << "\n" << asm_text;
  EXPECT_EQ(asm_text.find("vhaddps"), std::string::npos) << asm_text;
  EXPECT_EQ(asm_text.find("vpdpbusd"), std::string::npos) << asm_text;
}

// The row-group kernel's instructions: each 4 bytes of x broadcast against
// 16 rows (vpdpbusd on zmm registers with 512-bit VNNI, else ymm VNNI or
// vpmaddubsw + vpmaddwd), no horizontal sums, the product replaced.
TEST(Quant, Q4RowsPutWeightRowsInLanes) {
  const Int8Target host = int8_target("");
  if (!host.avx2) GTEST_SKIP() << "this CPU has no AVX2: the int8 kernels are not used here";
  for (QuantFormat f : {QuantFormat::kQ4_0x16, QuantFormat::kQ8_0x16})
  for (int64_t rows : {1, 64}) {
    SCOPED_TRACE(std::string(name(f)) + " " + std::to_string(rows) + " rows of x");
    DumpDir dir(std::string(name(f)) + "-" + std::to_string(rows));
    io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(64 * 256, -1, 1, 76), 64, 256);
    CompileFnOptions o;
    o.compile.diagnostics.dump = {"bufferize", "asm"};
    o.compile.diagnostics.dump_dir = dir.path().string();
    must(compile_fn(cpu(), o, [](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s); },
                    Shape(DType::kF32, {rows, 256}), q.values_shape, q.scales_shape));
    const std::string ir = testing::stage_dump(dir.path(), "bufferize.mlir");
    const std::string asm_text = testing::stage_dump(dir.path(), "asm.s");
    EXPECT_EQ(ir.find("radix.int8_dot"), std::string::npos) << "the product was not replaced: " << ir;
    if (host.vnni512) {
      EXPECT_TRUE(std::regex_search(asm_text, std::regex("vpdpbusd[^\n]*%zmm"))) << asm_text;
    } else if (host.vnni) {
      EXPECT_TRUE(std::regex_search(asm_text, std::regex("vpdpbusd[^\n]*%ymm"))) << asm_text;
    } else {
      EXPECT_NE(asm_text.find("vpmaddubsw"), std::string::npos) << asm_text;
    }
    EXPECT_NE(asm_text.find("vpbroadcastd"), std::string::npos) << asm_text;
    EXPECT_EQ(asm_text.find("vhaddps"), std::string::npos) << asm_text;
  }
}

// The f32-activation row-group kernel's instructions for `rows` rows of x
// times W[64, 256] in format f: W's bytes widened in registers (vpmovsxbd /
// vpmovzxbd, then vcvtdq2ps), x's 4 values broadcast as one 128-bit lane
// against them, no horizontal sums, the product replaced (not left as
// loops, nor W copied or put back in plain rows), and W never dequantized
// whole (no f32 [64, 256] buffer: prompts had one before their kernel).
void expect_f32_row_group_kernel(QuantFormat f, int64_t rows) {
  const Int8Target host = int8_target("");
  SCOPED_TRACE(std::string(name(f)) + " " + std::to_string(rows) + " rows of x");
  DumpDir dir(std::string(name(f)) + "-f32-" + std::to_string(rows));
  io::QuantizedMatrix q = quantize(f, testing::random_vec<float>(64 * 256, -1, 1, 78), 64, 256);
  CompileFnOptions o;
  o.compile.diagnostics.dump = {"bufferize", "asm"};
  o.compile.diagnostics.dump_dir = dir.path().string();
  must(compile_fn(cpu(), o,
                  [](Tensor a, Tensor v, Tensor s) {
                    return quantized_matmul(a, v, s, QuantizedMatmulOptions{QuantizedActivations::kF32});
                  },
                  Shape(DType::kF32, {rows, 256}), q.values_shape, q.scales_shape));
  const std::string ir = testing::stage_dump(dir.path(), "bufferize.mlir");
  const std::string asm_text = testing::stage_dump(dir.path(), "asm.s");
  EXPECT_EQ(ir.find("radix.int8_dot"), std::string::npos) << "the product was not replaced: " << ir;
  EXPECT_FALSE(std::regex_search(ir, std::regex("memref.copy[^\n]*xi8|alloca?\\([^\n]*xi8>"))) << "W was copied: " << ir;
  EXPECT_EQ(ir.find("64x256xf32"), std::string::npos) << "W was dequantized whole: " << ir;
  const bool signed_bytes = f == QuantFormat::kQ8_0x16 || f == QuantFormat::kQ8_0;
  const std::string reg = host.avx512 ? "%zmm" : "%ymm";
  EXPECT_TRUE(std::regex_search(asm_text, std::regex(std::string(signed_bytes ? "vpmovsxbd" : "vpmovzxbd") + "[^\n]*" + reg)))
      << asm_text;
  EXPECT_TRUE(std::regex_search(asm_text, std::regex("vcvtdq2ps[^\n]*" + reg))) << asm_text;
  EXPECT_TRUE(std::regex_search(asm_text, std::regex("vbroadcastf(32x4|128)"))) << asm_text;
  // No horizontal sums in the K loops (the partial sums of a tile combine
  // once after them: for Zen 3 LLVM does that with vhaddps).
  size_t fma_loops = 0;
  for (const std::string& loop : testing::innermost_asm_loops(asm_text)) {
    EXPECT_EQ(loop.find("vhaddps"), std::string::npos) << loop;
    fma_loops += loop.find("vfmadd") != std::string::npos;
  }
  EXPECT_GE(fma_loops, 1u) << asm_text;
}

// The x16 formats: decode rows (W's interleaved bytes widened in
// registers) and a prompt.
TEST(Quant, X16RowsWithF32ActivationsWidenWInRegisters) {
  if (!int8_target("").avx2) GTEST_SKIP() << "this CPU has no AVX2: the row-group kernels are not used here";
  for (QuantFormat f : {QuantFormat::kQ4_0x16, QuantFormat::kQ8_0x16})
    for (int64_t rows : {1, 48}) expect_f32_row_group_kernel(f, rows);
}

// Plain Q4_0 / Q8_0 prompts: each group of 16 rows dequantized on the
// stack, one at a time.
TEST(Quant, PlainRowsWithF32ActivationsDequantizeOneGroupAtATime) {
  if (!int8_target("").avx2) GTEST_SKIP() << "this CPU has no AVX2: the row-group kernels are not used here";
  for (QuantFormat f : {QuantFormat::kQ4_0, QuantFormat::kQ8_0}) expect_f32_row_group_kernel(f, 48);
}

// interleave_rows moves bytes and scales, never numbers: the host
// dequantizes both layouts alike, and so does the traced dequantize.
// Matrices it cannot take are named.
TEST(Quant, Q4RowsHoldTheSameNumbers) {
  const int64_t n = 48, k = 96;
  std::vector<float> w = testing::random_vec<float>(size_t(n * k), -1, 1, 77);
  io::QuantizedMatrix plain = must(io::quantize_q4_0(w, n, k));
  io::QuantizedMatrix x16 = must(io::interleave_rows(plain));
  EXPECT_EQ(x16.values_shape.to_string(), "u8[3,3,4,16,4]");
  EXPECT_EQ(x16.scales_shape.to_string(), "f16[3,3,16]");
  EXPECT_NE(x16.values, plain.values);
  const std::vector<float> want = io::dequantize(plain);
  EXPECT_EQ(io::dequantize(x16), want);
  EXPECT_EQ(io::dequantize(quantize(QuantFormat::kQ4_0x16, w, n, k)), want);
  auto exe = must(compile_fn(cpu(), [](Tensor v, Tensor s) { return dequantize(v, s); }, x16.values_shape, x16.scales_shape));
  EXPECT_EQ(must(must(exe.call(device(x16.values_shape, x16.values), device(x16.scales_shape, x16.scales))).to_host<float>()),
            want);
  auto odd = io::interleave_rows(must(io::quantize_q4_0(std::vector<float>(24 * 32, 1.0f), 24, 32)));
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("u8[24,16]"), std::string::npos) << odd.status().message();
  EXPECT_NE(odd.status().message().find("multiple of 16"), std::string::npos) << odd.status().message();
  auto int8 = io::interleave_rows(io::quantize_int8(std::vector<float>(16 * 32, 1.0f), 16, 32));
  ASSERT_FALSE(int8.ok());
  EXPECT_NE(int8.status().message().find("not a Q4_0 or Q8_0 matrix"), std::string::npos) << int8.status().message();
  EXPECT_EQ(parse_quant_format("Q4_0x16"), QuantFormat::kQ4_0x16);
  EXPECT_EQ(parse_quant_format("q8_0x16"), QuantFormat::kQ8_0x16);
  // Q8_0x16 likewise.
  io::QuantizedMatrix q8 = must(io::quantize_q8_0(w, n, k));
  io::QuantizedMatrix q8x16 = must(io::interleave_rows(q8));
  EXPECT_EQ(q8x16.values_shape.to_string(), "i8[3,3,8,16,4]");
  EXPECT_EQ(io::dequantize(q8x16), io::dequantize(q8));
  auto exe8 = must(compile_fn(cpu(), [](Tensor v, Tensor s) { return dequantize(v, s); }, q8x16.values_shape,
                              q8x16.scales_shape));
  EXPECT_EQ(must(must(exe8.call(device(q8x16.values_shape, q8x16.values), device(q8x16.scales_shape, q8x16.scales)))
                     .to_host<float>()),
            io::dequantize(q8));
}

TEST(Quant, MismatchedShapesFailWithBothShapes) {
  struct Case { Shape x, v, s; const char* want; };
  const Case cases[] = {
      {Shape(DType::kF32, {1, 64}), Shape(DType::kI8, {8, 64}), Shape(DType::kF32, {7}), "f32[8]"},
      {Shape(DType::kF32, {1, 64}), Shape(DType::kI8, {8, 64}), Shape(DType::kF16, {8, 3}), "f16[8,2]"},
      {Shape(DType::kF32, {1, 40}), Shape(DType::kI8, {8, 40}), Shape(DType::kF16, {8, 1}), "multiple of the block"},
      {Shape(DType::kF32, {1, 32}), Shape(DType::kU8, {8, 16}), Shape(DType::kF32, {8}), "unknown combination"},
      {Shape(DType::kF32, {1, 63}), Shape(DType::kI8, {8, 64}), Shape(DType::kF32, {8}), "x must be f32[..., 64]"},
      {Shape(DType::kF16, {1, 64}), Shape(DType::kI8, {8, 64}), Shape(DType::kF32, {8}), "x must be f32[..., 64]"},
      {Shape(DType::kF32, {1, 64}), Shape(DType::kU8, {2, 2, 4, 16, 4}), Shape(DType::kF16, {2, 2, 8}), "f16[2,2,16]"},
      {Shape(DType::kF32, {1, 64}), Shape(DType::kU8, {2, 2, 4, 8, 4}), Shape(DType::kF16, {2, 2, 16}),
       "u8[n/16, k/32, 4, 16, 4]"},
      {Shape(DType::kF32, {1, 32}), Shape(DType::kU8, {2, 2, 4, 16, 4}), Shape(DType::kF16, {2, 2, 16}),
       "x must be f32[..., 64]"},
  };
  for (const Case& c : cases) {
    auto r = compile_fn(cpu(), [](Tensor a, Tensor v, Tensor s) { return quantized_matmul(a, v, s); }, c.x, c.v, c.s);
    ASSERT_FALSE(r.ok());
    const std::string msg = r.status().message();
    EXPECT_NE(msg.find(c.want), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.v.to_string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.s.to_string()), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace radix
