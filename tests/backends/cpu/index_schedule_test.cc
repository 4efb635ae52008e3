// Ops whose fused bodies read `linalg.index` (iota, one-hot matrices, position
// weights) through every schedule path — innermost and outer reductions,
// elementwise tiles, contractions fused with an index-reading producer — on
// the SSE, AVX2 and AVX-512 tilings, against naive loops.
//
// Regression: a one-hot embedding contraction over a multiple of 8 (>= 24)
// rows returned wrong rows, because reduction tiling dropped the chunk offset
// of the reduced loop's index (see compiler/reduction_indices_pass.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;

using testing::IsaCase;
using testing::kIsas;

// The program: emb row i holds i + j/8 in column j; ids pick rows.
TEST(IndexSchedule, OneHotContractionOnEveryIsa) {
  for (const IsaCase& c : kIsas) {
    for (int64_t V : {23, 24, 25, 32, 40, 64, 32000}) {
      for (int64_t D : {1, 4}) {
        SCOPED_TRACE(std::string(c.name) + " V=" + std::to_string(V) + " D=" + std::to_string(D));
        Shape ts(DType::kI32, {1, 3}, {"b", "s"}), es(DType::kF32, {V, D}, {"v", "d"});
        auto exe = must(compile_fn(cpu(), testing::isa_options(c), [](Tensor tok, Tensor emb) {
          Tensor one_hot = convert(eq(tok, iota(emb.dim("v"), DType::kI32, "v")), DType::kF32);
          return dot(one_hot, emb, "v");
        }, ts, es));
        EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
        std::vector<int32_t> ids = {3, static_cast<int32_t>(V - 1), static_cast<int32_t>(V / 2 + 1)};
        std::vector<float> emb(static_cast<size_t>(V * D));
        for (int64_t i = 0; i < V; ++i)
          for (int64_t j = 0; j < D; ++j) emb[static_cast<size_t>(i * D + j)] = float(i) + float(j) / 8;
        Buffer out = must(exe.call(must(cpu().buffer(ts, ids)), must(cpu().buffer(es, emb))));
        std::vector<float> want;
        for (int32_t id : ids)
          for (int64_t j = 0; j < D; ++j) want.push_back(emb[static_cast<size_t>(id * D + j)]);
        // Exact: one product of 1 with the row value, zeros elsewhere.
        EXPECT_EQ(must(out.to_host<float>()), want);
      }
    }
  }
}

// Seeded random shapes; every graph reads an iota of a reduced or tiled axis.
TEST(IndexSchedule, RandomGraphsWithIota) {
  std::mt19937 rng(17);
  auto r = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int it = 0; it < 24; ++it) {
    const IsaCase& c = kIsas[it % 3];
    // Sizes that are multiples of every vector width half the time.
    const int64_t M = r(1, 5) * (r(0, 1) ? 16 : 1), K = r(1, 6) * (r(0, 1) ? 16 : 1) + (r(0, 3) == 0 ? 1 : 0),
                  N = r(1, 4) * (r(0, 1) ? 16 : 1);
    SCOPED_TRACE(std::string(c.name) + " M=" + std::to_string(M) + " K=" + std::to_string(K) +
                 " N=" + std::to_string(N));
    Shape sa(DType::kF32, {M, K}, {"m", "k"}), sb(DType::kF32, {K, N}, {"k", "n"});
    auto exe = must(compile_fn(cpu(), testing::isa_options(c), [](Tensor a, Tensor b) {
      // Positions 0..n-1 along a tagged axis, as f32. Every use below draws
      // its iota in a dtype of another width, so that CSE cannot merge them
      // (elementwise fusion only folds a producer with one user into its
      // consumer). All positions here are < 128, exact in every dtype.
      auto pos = [](const Tensor& t, const char* tag, DType d) {
        return convert(iota(t.dim(tag), d, tag), DType::kF32);
      };
      Tensor c1 = dot(a * pos(a, "k", DType::kI32), b, "k");        // index of the contracted axis
      Tensor c2 = dot(a, b + pos(b, "n", DType::kF32), "k");        // index of a free axis
      Tensor row_pos = reduce_sum(a * pos(a, "k", DType::kI64), {"k"});   // innermost reduction
      Tensor col_pos = reduce_sum(a * pos(a, "m", DType::kF64), {"m"});   // outer reduction
      Tensor row_max = reduce_max(a + pos(a, "k", DType::kI16) * 0.25, {"k"});
      Tensor ew = a * pos(a, "k", DType::kI8) + pos(a, "m", DType::kF16);  // elementwise tiles
      return std::make_tuple(c1, c2, row_pos, col_pos, row_max, ew);
    }, sa, sb));
    EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
    std::vector<float> a = testing::random_vec<float>(static_cast<size_t>(M * K), -1, 1, 500 + it);
    std::vector<float> b = testing::random_vec<float>(static_cast<size_t>(K * N), -1, 1, 600 + it);
    auto [c1, c2, row_pos, col_pos, row_max, ew] =
        must(exe.call(must(cpu().buffer(sa, a)), must(cpu().buffer(sb, b))));

    auto A = [&](int64_t i, int64_t k) { return double(a[size_t(i * K + k)]); };
    auto B = [&](int64_t k, int64_t j) { return double(b[size_t(k * N + j)]); };
    std::vector<float> r1(static_cast<size_t>(M * N)), r2(static_cast<size_t>(M * N)), rr(static_cast<size_t>(M)),
        rc(static_cast<size_t>(K)), rm(static_cast<size_t>(M)), re(static_cast<size_t>(M * K));
    for (int64_t i = 0; i < M; ++i) {
      double s = 0, mx = -1e300;
      for (int64_t k = 0; k < K; ++k) {
        s += A(i, k) * double(k);
        mx = std::max(mx, A(i, k) + 0.25 * double(k));
        re[size_t(i * K + k)] = float(A(i, k) * double(k) + double(i));
      }
      rr[size_t(i)] = float(s);
      rm[size_t(i)] = float(mx);
      for (int64_t j = 0; j < N; ++j) {
        double s1 = 0, s2 = 0;
        for (int64_t k = 0; k < K; ++k) {
          s1 += A(i, k) * double(k) * B(k, j);
          s2 += A(i, k) * (B(k, j) + double(j));
        }
        r1[size_t(i * N + j)] = float(s1);
        r2[size_t(i * N + j)] = float(s2);
      }
    }
    for (int64_t k = 0; k < K; ++k) {
      double s = 0;
      for (int64_t i = 0; i < M; ++i) s += A(i, k) * double(i);
      rc[size_t(k)] = float(s);
    }
    // f32 sums of at most ~100 terms whose magnitude grows with the position
    // weights (<= 100): relative 1e-4 plus an absolute floor scaled by the
    // largest term size. A scrambled index is off by whole units.
    const double scale = double(std::max({M, K, N}));
    EXPECT_TRUE(testing::all_close(must(c1.to_host<float>()), r1, 1e-4, 1e-4 * scale * std::sqrt(double(K))));
    EXPECT_TRUE(testing::all_close(must(c2.to_host<float>()), r2, 1e-4, 1e-4 * scale * std::sqrt(double(K))));
    EXPECT_TRUE(testing::all_close(must(row_pos.to_host<float>()), rr, 1e-4, 1e-4 * scale));
    EXPECT_TRUE(testing::all_close(must(col_pos.to_host<float>()), rc, 1e-4, 1e-4 * scale));
    EXPECT_TRUE(testing::all_close(must(row_max.to_host<float>()), rm, 1e-6, 1e-6));
    // a * k + i: one rounding of a product up to ~100 and one of the sum.
    EXPECT_TRUE(testing::all_close(must(ew.to_host<float>()), re, 1e-6, 2e-7 * scale));
  }
}

}  // namespace
}  // namespace radix
