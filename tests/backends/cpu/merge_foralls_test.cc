// "radix-merge-foralls": neighbouring parallel tile loops that touch no
// buffer the other writes run as one OpenMP parallel region (q, k and v of a
// decode step: one fork / join instead of three), and loops that depend on
// each other stay apart. Results are checked against naive loops and are
// bit for bit those of one thread (the tiles never split a reduction), on
// every ISA's tiling.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "radix/core/half.h"
#include "radix/io/quantize.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::IsaCase;
using testing::kIsas;
using testing::must;
namespace fs = std::filesystem;

using testing::count_of;

// y[n] = sum_k x[k] * w[n, k], in double.
std::vector<double> matvec(const std::vector<float>& x, const std::vector<float>& w, int64_t n, int64_t k) {
  std::vector<double> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double acc = 0;
    for (int64_t j = 0; j < k; ++j) acc += double(x[size_t(j)]) * w[size_t(i * k + j)];
    y[size_t(i)] = acc;
  }
  return y;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]) / std::max(std::fabs(want[i]), 1.0));
  EXPECT_LT(worst, tol);
}

// Two threads, merging on or off, the lower stage dumped into `dir`.
CompileFnOptions two_threads(bool merge, const fs::path& dir) {
  CompileFnOptions o;
  o.compile.codegen.cpu.threads = 2;
  o.compile.codegen.cpu.merge_parallel_loops = merge;
  o.compile.diagnostics.dump = {"lower"};
  o.compile.diagnostics.dump_dir = dir.string();
  return o;
}

Tensor times_rows(Tensor x, Tensor w) { return dot_general(x, w, DotDims{{}, {}, {1}, {1}}); }  // x · wᵀ

// Three products of one x with weights of 512, 256 and 384 rows (uneven
// ranges in the merged loop): one parallel region on two threads.
TEST(MergeForalls, IndependentProductsShareOneParallelRegion) {
  constexpr int64_t K = 512;
  const int64_t rows[3] = {512, 256, 384};
  const Shape sx(DType::kF32, {1, K});
  const std::vector<float> x = testing::random_vec<float>(K, -1, 1, 1);
  std::vector<std::vector<float>> w;
  std::vector<Shape> sw;
  for (int i = 0; i < 3; ++i) {
    w.push_back(testing::random_vec<float>(size_t(rows[i] * K), -1, 1, uint32_t(2 + i)));
    sw.push_back(Shape(DType::kF32, {rows[i], K}));
  }
  auto fn = [](Tensor a, Tensor q, Tensor k, Tensor v) {
    return std::make_tuple(times_rows(a, q), times_rows(a, k), times_rows(a, v));
  };
  for (const IsaCase& isa : kIsas) {
    SCOPED_TRACE(isa.name);
    const fs::path dir = fs::temp_directory_path() / ("radix-merge-" + std::to_string(::getpid()));
    // One thread; two merged; two with the option off (a region each).
    std::vector<std::vector<float>> outs[3];
    for (int run = 0; run < 3; ++run) {
      CompileFnOptions o = testing::isa_options(isa, run == 0 ? 1 : 2, {"lower"}, dir);
      o.compile.codegen.cpu.merge_parallel_loops = run != 2;
      auto exe = must(compile_fn(cpu(), o, fn, sx, sw[0], sw[1], sw[2]));
      if (run > 0) {
        const std::string ir = testing::stage_dump(dir, "lower.mlir");
        EXPECT_EQ(count_of(ir, "omp.parallel"), run == 1 ? 1u : 3u) << ir;
      }
      auto [q, k, v] = must(exe.call(must(cpu().buffer(sx, x)), must(cpu().buffer(sw[0], w[0])),
                                     must(cpu().buffer(sw[1], w[1])), must(cpu().buffer(sw[2], w[2]))));
      outs[run] = {must(q.to_host<float>()), must(k.to_host<float>()), must(v.to_host<float>())};
    }
    fs::remove_all(dir);
    for (int i = 0; i < 3; ++i) {
      expect_near(outs[1][size_t(i)], matvec(x, w[size_t(i)], rows[i], K), 1e-5);
      EXPECT_EQ(outs[1][size_t(i)], outs[0][size_t(i)]) << "product " << i << ": two threads differ from one";
      EXPECT_EQ(outs[1][size_t(i)], outs[2][size_t(i)]) << "product " << i << ": merged differs from unmerged";
    }
  }
}

// bf16 weights: on AVX-512 BF16 hosts each product is a kernel in its own
// alloca_scope (x rounded to bf16 on the stack), lifted so that the loops
// meet; elsewhere W is widened in the f32 tiles. Either way one region, and
// the same bits as without merging.
TEST(MergeForalls, Bf16ProductsShareOneParallelRegion) {
  constexpr int64_t K = 768, N = 768;
  const Shape sx(DType::kF32, {1, K}), sw(DType::kBF16, {N, K});
  const std::vector<float> x = testing::random_vec<float>(K, -1, 1, 21);
  std::vector<Buffer> w;
  std::vector<std::vector<float>> wf;
  for (int i = 0; i < 3; ++i) {
    wf.push_back(testing::random_vec<float>(size_t(N * K), -1, 1, uint32_t(22 + i)));
    std::vector<uint16_t> bits;
    for (float& v : wf.back()) {
      bits.push_back(float_to_bf16(v));
      v = bf16_to_float(bits.back());  // the weight as stored
    }
    w.push_back(must(cpu().buffer(sw, bits)));
  }
  auto fn = [](Tensor a, Tensor q, Tensor k, Tensor v) {
    return std::make_tuple(times_rows(a, q), times_rows(a, k), times_rows(a, v));
  };
  const fs::path dir = fs::temp_directory_path() / ("radix-merge-bf16-" + std::to_string(::getpid()));
  std::vector<std::vector<float>> outs[2];
  for (int merged = 0; merged < 2; ++merged) {
    const CompileFnOptions o = two_threads(merged == 1, dir);
    auto exe = must(compile_fn(cpu(), o, fn, sx, sw, sw, sw));
    const std::string ir = testing::stage_dump(dir, "lower.mlir");
    EXPECT_EQ(count_of(ir, "omp.parallel"), merged ? 1u : 3u) << ir;
    auto [q, k, v] = must(exe.call(must(cpu().buffer(sx, x)), w[0], w[1], w[2]));
    outs[merged] = {must(q.to_host<float>()), must(k.to_host<float>()), must(v.to_host<float>())};
    fs::remove_all(dir);
  }
  for (int i = 0; i < 3; ++i) {
    // x may be rounded to bf16 (8 bits of mantissa): 2^-8 of sum |x w| <= K.
    expect_near(outs[1][size_t(i)], matvec(x, wf[size_t(i)], N, K), K * 4e-3);
    EXPECT_EQ(outs[1][size_t(i)], outs[0][size_t(i)]) << "product " << i << ": merged differs from unmerged";
  }
}

// Quantized weights (Q4_0 interleaved by 16, as the Llama holds them on x86;
// x quantized to int8 blocks first): on AVX2 hosts each product is an
// integer kernel that frees its own temporary right after its loop, which
// moves after the merged loop. The same bits as without merging. 512 x
// 1024 weights: the least an int8 decode product is split over threads for.
TEST(MergeForalls, QuantizedProductsMatchUnmerged) {
  constexpr int64_t K = 512, N = 1024;
  const Shape sx(DType::kF32, {1, K});
  const std::vector<float> x = testing::random_vec<float>(K, -1, 1, 31);
  std::vector<io::QuantizedMatrix> q;
  for (int i = 0; i < 3; ++i)
    q.push_back(must(io::quantize(QuantFormat::kQ4_0x16, testing::random_vec<float>(size_t(N * K), -1, 1, uint32_t(32 + i)), N, K)));
  auto fn = [](Tensor a, Tensor v0, Tensor s0, Tensor v1, Tensor s1, Tensor v2, Tensor s2) {
    return std::make_tuple(quantized_matmul(a, v0, s0), quantized_matmul(a, v1, s1), quantized_matmul(a, v2, s2));
  };
  const fs::path dir = fs::temp_directory_path() / ("radix-merge-q4-" + std::to_string(::getpid()));
  std::vector<std::vector<float>> outs[2];
  size_t regions[2] = {0, 0};
  for (int merged = 0; merged < 2; ++merged) {
    const CompileFnOptions o = two_threads(merged == 1, dir);
    const Shape vs = q[0].values_shape, ss = q[0].scales_shape;
    auto exe = must(compile_fn(cpu(), o, fn, sx, vs, ss, vs, ss, vs, ss));
    regions[merged] = count_of(testing::stage_dump(dir, "lower.mlir"), "omp.parallel");
    std::vector<Buffer> args;
    for (const io::QuantizedMatrix& m : q) {
      args.push_back(must(cpu().bytes(m.values_shape, m.values)));
      args.push_back(must(cpu().bytes(m.scales_shape, m.scales)));
    }
    auto [y0, y1, y2] = must(exe.call(must(cpu().buffer(sx, x)), args[0], args[1], args[2], args[3], args[4], args[5]));
    outs[merged] = {must(y0.to_host<float>()), must(y1.to_host<float>()), must(y2.to_host<float>())};
    fs::remove_all(dir);
  }
  EXPECT_EQ(regions[1], 1u);
  EXPECT_EQ(regions[0], 3u);
  const std::vector<float> xq = io::round_to_int8_blocks(std::span<const float>(x));
  for (int i = 0; i < 3; ++i) {
    // Against the dequantized weights times x rounded as its blocks are.
    expect_near(outs[1][size_t(i)], matvec(xq, io::dequantize(q[size_t(i)]), N, K), 1e-4);
    EXPECT_EQ(outs[1][size_t(i)], outs[0][size_t(i)]) << "product " << i << ": merged differs from unmerged";
  }
}

// The second product reads the first's output: two regions, in order.
TEST(MergeForalls, DependentProductsStayApart) {
  constexpr int64_t K = 512, N1 = 512, N2 = 384;
  const Shape sx(DType::kF32, {1, K}), s1(DType::kF32, {N1, K}), s2(DType::kF32, {N2, N1});
  const std::vector<float> x = testing::random_vec<float>(K, -1, 1, 11);
  const std::vector<float> w1 = testing::random_vec<float>(size_t(N1 * K), -1, 1, 12);
  const std::vector<float> w2 = testing::random_vec<float>(size_t(N2 * N1), -1, 1, 13);
  const fs::path dir = fs::temp_directory_path() / ("radix-merge-dep-" + std::to_string(::getpid()));
  auto exe = must(compile_fn(cpu(), testing::isa_options(kIsas[2], 2, {"lower"}, dir),
                             [](Tensor a, Tensor p, Tensor q) { return times_rows(times_rows(a, p), q); }, sx, s1, s2));
  const std::string ir = testing::stage_dump(dir, "lower.mlir");
  fs::remove_all(dir);
  EXPECT_EQ(count_of(ir, "omp.parallel"), 2u) << ir;
  Buffer y = must(exe.call(must(cpu().buffer(sx, x)), must(cpu().buffer(s1, w1)), must(cpu().buffer(s2, w2))));
  const std::vector<double> h = matvec(x, w1, N1, K);
  expect_near(must(y.to_host<float>()), matvec(std::vector<float>(h.begin(), h.end()), w2, N2, N1), 1e-4);
}

}  // namespace
}  // namespace radix
