// Seeded random shapes through one graph that exercises every schedule path
// (register-tiled and packed matmuls, vectorized and scalar elementwise ops,
// broadcasts, reductions) on the host's and on AVX-512's tiling. Checks the
// numbers against a double-precision loop and that the schedule never had to
// fall back to plain loops.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

TEST(RandomGraphs, MatmulElementwiseReduce) {
  std::mt19937 rng(5);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int it = 0; it < 40; ++it) {
    int64_t M = r(1, 3) * (r(0, 1) ? 8 : 1) * r(1, 9), K = r(1, 70), N = r(1, 6) * (r(0, 1) ? 16 : 1);
    if (it % 5 == 0) {  // shapes that take the packed matmul path
      M = 64 * r(1, 3);
      K = 256 * r(1, 2);
      N = 256 * r(1, 2);
    }
    SCOPED_TRACE("M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(N) +
                 (it % 2 ? " (avx512 tiling)" : " (host tiling)"));
    CompileFnOptions o;
    if (it % 2) o.compile.codegen.cpu.schedule_isa = {16, 32};
    Shape sa(DType::kF32, {M, K}), sb(DType::kF32, {K, N}), sc(DType::kF32, {N});
    auto exe = must(compile_fn(cpu(), o, [](Tensor a, Tensor b, Tensor c) {
      Tensor m = matmul(a, b);
      Tensor y = relu(m * 0.5 + c) - exp(m * 0.01);
      return std::make_tuple(y, reduce_sum(y, {1}), reduce_max(y, {0}));
    }, sa, sb, sc));
    EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
    std::vector<float> a = testing::random_vec<float>(static_cast<size_t>(M * K), -1, 1, 100 + it);
    std::vector<float> b = testing::random_vec<float>(static_cast<size_t>(K * N), -1, 1, 200 + it);
    std::vector<float> c = testing::random_vec<float>(static_cast<size_t>(N), -1, 1, 300 + it);
    auto [y, s, mx] = must(exe.call(must(cpu().buffer(sa, a)), must(cpu().buffer(sb, b)), must(cpu().buffer(sc, c))));

    std::vector<float> ry(static_cast<size_t>(M * N)), rs(static_cast<size_t>(M)), rm(static_cast<size_t>(N), -1e30f);
    for (int64_t i = 0; i < M; ++i) {
      double row = 0;
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(a[size_t(i * K + k)]) * b[size_t(k * N + j)];
        double v = std::max(acc * 0.5 + c[size_t(j)], 0.0) - std::exp(acc * 0.01);
        ry[size_t(i * N + j)] = static_cast<float>(v);
        row += v;
        rm[size_t(j)] = std::max(rm[size_t(j)], static_cast<float>(v));
      }
      rs[size_t(i)] = static_cast<float>(row);
    }
    // f32 sums of up to 512 products of values in [-1, 1]: relative 1e-4 with
    // an absolute floor of 1e-4 per unit of accumulated magnitude.
    EXPECT_TRUE(testing::all_close(must(y.to_host<float>()), ry, 1e-4, 1e-4 * std::sqrt(double(K))));
    EXPECT_TRUE(testing::all_close(must(s.to_host<float>()), rs, 1e-4, 1e-4 * std::sqrt(double(K)) * N));
    EXPECT_TRUE(testing::all_close(must(mx.to_host<float>()), rm, 1e-4, 1e-4 * std::sqrt(double(K))));
  }
}

}  // namespace
}  // namespace radix
