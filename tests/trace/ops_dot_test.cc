// Numerics of dot_general / dot / matmul against naive triple loops computed
// here in long double: batch and contracting axes by index and by tag (also in
// unusual positions), the tagged dot form, 2-D matmuls of awkward and of
// vectorized sizes, batched matmuls, rank-1 operands, integer and f64 matmuls.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "radix/core/half.h"
#include "trace/op_test_helpers.h"

namespace radix {
namespace {


// Naive contraction. lb/rb, lc/rc: resolved batch / contracting axes. Result
// axes: batch (lhs order), lhs free, rhs free.
Vals dot_ref(DType d, const Shape& ls, const Vals& l, const Shape& rs, const Vals& r, const std::vector<int>& lb,
             const std::vector<int>& rb, const std::vector<int>& lc, const std::vector<int>& rc) {
  auto role = [](int rank, const std::vector<int>& b, const std::vector<int>& c) {
    std::vector<int> f;
    for (int i = 0; i < rank; ++i)
      if (std::find(b.begin(), b.end(), i) == b.end() && std::find(c.begin(), c.end(), i) == c.end()) f.push_back(i);
    return f;
  };
  const std::vector<int> lf = role(ls.rank(), lb, lc), rf = role(rs.rank(), rb, rc);
  std::vector<int64_t> od, kd;
  for (int a : lb) od.push_back(ls.dim(a));
  for (int a : lf) od.push_back(ls.dim(a));
  for (int a : rf) od.push_back(rs.dim(a));
  for (int a : lc) kd.push_back(ls.dim(a));
  std::vector<int64_t> ld(ls.dims().begin(), ls.dims().end()), rd(rs.dims().begin(), rs.dims().end());
  const auto lst = strides_of(ld), rst = strides_of(rd);
  Vals out;
  std::vector<uint64_t> iout;
  for (int64_t o = 0; o < count_of(od); ++o) {
    const auto oi = unravel(o, od);
    int64_t lbase = 0, rbase = 0;
    size_t p = 0;
    for (size_t k = 0; k < lb.size(); ++k, ++p) {
      lbase += oi[p] * lst[lb[k]];
      rbase += oi[p] * rst[rb[k]];
    }
    for (int a : lf) lbase += oi[p++] * lst[a];
    for (int a : rf) rbase += oi[p++] * rst[a];
    Val acc = 0;
    uint64_t iacc = 0;
    for (int64_t c = 0; c < count_of(kd); ++c) {
      const auto ci = unravel(c, kd);
      int64_t li = lbase, ri = rbase;
      for (size_t k = 0; k < lc.size(); ++k) {
        li += ci[k] * lst[lc[k]];
        ri += ci[k] * rst[rc[k]];
      }
      acc += l[li] * r[ri];
      iacc += static_cast<uint64_t>(static_cast<int64_t>(l[li])) * static_cast<uint64_t>(static_cast<int64_t>(r[ri]));
    }
    out.push_back(is_float(d) ? quantize(d, acc) : wrap(d, static_cast<Val>(static_cast<int64_t>(iacc))));
  }
  return out;
}

Vals data(DType d, int64_t n, uint32_t seed) {
  if (is_float(d) && dtype_bits(d) >= 32) return quantize(d, rand_vals(static_cast<size_t>(n), -1, 1, seed));
  // Integers and f16 / bf16: small integers, so every product and partial sum is exact.
  Vals v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<Val>((i * 7 + seed) % 7) - 3);
  return v;
}

// Tolerance per dtype for a contraction of length k with |terms| <= 1:
// f32 rtol 1e-5 + atol 1e-5 * sqrt(k)-ish (we use 2e-6 * k), f64 1e-12; exact for
// integers and for f16 / bf16 on small integers.
std::pair<double, double> tol(DType d, int64_t k) {
  if (d == DType::kF32) return {1e-5, 2e-6 * static_cast<double>(k)};
  if (d == DType::kF64) return {1e-12, 1e-13 * static_cast<double>(k)};
  return {0, 0};
}

struct DotCase {
  Shape l, r;
  DotDims dims;
  std::vector<int> lb, rb, lc, rc;  // the same axes, resolved to indices
  Shape out;                        // expected result shape
};

TEST(Dot, DotGeneral) {
  const DType f = DType::kF32;
  const std::vector<DotCase> cases = {
      // named batch_matmul form
      {Shape(f, {2, 3, 4}), Shape(f, {2, 4, 5}), {{0}, {0}, {2}, {1}}, {0}, {0}, {2}, {1}, Shape(f, {2, 3, 5})},
      // batch and contracting axes in unusual positions
      {Shape(f, {4, 2, 3}), Shape(f, {5, 4, 2}), {{1}, {2}, {0}, {1}}, {1}, {2}, {0}, {1}, Shape(f, {2, 3, 5})},
      {Shape(f, {3, 4}), Shape(f, {5, 4}), {{}, {}, {1}, {1}}, {}, {}, {1}, {1}, Shape(f, {3, 5})},  // A * B^T
      {Shape(f, {4, 3}), Shape(f, {4, 5}), {{}, {}, {0}, {0}}, {}, {}, {0}, {0}, Shape(f, {3, 5})},  // A^T * B
      // two contracting axes, paired in a different order
      {Shape(f, {3, 4, 5}), Shape(f, {5, 6, 4}), {{}, {}, {1, 2}, {2, 0}}, {}, {}, {1, 2}, {2, 0}, Shape(f, {3, 6})},
      // two batch axes, negative indices
      {Shape(f, {2, 3, 4, 5}), Shape(f, {3, 2, 5, 6}), {{0, 1}, {1, 0}, {-1}, {-2}}, {0, 1}, {1, 0}, {3}, {2},
       Shape(f, {2, 3, 4, 6})},
      // no contraction: outer product; and a full contraction to rank 0
      {Shape(f, {3}), Shape(f, {4}), {{}, {}, {}, {}}, {}, {}, {}, {}, Shape(f, {3, 4})},
      {Shape(f, {3, 4}), Shape(f, {3, 4}), {{}, {}, {0, 1}, {0, 1}}, {}, {}, {0, 1}, {0, 1}, Shape(f)},
      // by tag
      {Shape(f, {2, 3, 4}, {"b", "m", "k"}), Shape(f, {4, 2, 5}, {"k", "b", "n"}), {{"b"}, {"b"}, {"k"}, {"k"}}, {0},
       {1}, {2}, {0}, Shape(f, {2, 3, 5}, {"b", "m", "n"})},
      {Shape(f, {4, 3, 2}, {"k", "m", "h"}), Shape(f, {2, 5, 4}, {"h", "n", "k"}), {{"h"}, {"h"}, {"k"}, {"k"}}, {2},
       {0}, {0}, {2}, Shape(f, {2, 3, 5}, {"h", "m", "n"})},
  };
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kF16})
    for (const DotCase& c0 : cases) {
      const Shape ls = c0.l.with_dtype(d), rs = c0.r.with_dtype(d);
      SCOPED_TRACE(ls.to_string() + " . " + rs.to_string());
      const Vals l = data(d, ls.count(), 1), r = data(d, rs.count(), 2);
      const DotDims dims = c0.dims;
      Outs o = run([dims](Tensor a, Tensor b) { return dot_general(a, b, dims); }, {l, r}, ls, rs);
      EXPECT_EQ(o.shapes[0], c0.out.with_dtype(d));
      int64_t k = 1;
      for (int a : c0.lc) k *= ls.dim(a);
      auto [rtol, atol] = tol(d, k);
      EXPECT_TRUE(close(o.values[0], dot_ref(d, ls, l, rs, r, c0.lb, c0.rb, c0.lc, c0.rc), d, rtol, atol));
    }
}

TEST(Dot, TaggedDot) {
  const DType f = DType::kF32;
  struct Case {
    Shape l, r;
    std::vector<Tag> contract;
    std::vector<int> lb, rb, lc, rc;
    Shape out;
  };
  const std::vector<Case> cases = {
      // dot(x, w, "d"): no shared free tags
      {Shape(f, {2, 3, 8}, {"b", "s", "d"}), Shape(f, {8, 5}, {"d", "f"}), {"d"}, {}, {}, {2}, {0},
       Shape(f, {2, 3, 5}, {"b", "s", "f"})},
      // shared tag "h" becomes a batch axis
      {Shape(f, {2, 3, 4}, {"h", "q", "d"}), Shape(f, {2, 5, 4}, {"h", "k", "d"}), {"d"}, {0}, {0}, {2}, {2},
       Shape(f, {2, 3, 5}, {"h", "q", "k"})},
      // two contracting tags, operands in different orders
      {Shape(f, {3, 4, 2}, {"c", "m", "d"}), Shape(f, {2, 6, 3}, {"d", "n", "c"}), {"c", "d"}, {}, {}, {0, 2}, {2, 0},
       Shape(f, {4, 6}, {"m", "n"})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.l.to_string() + " . " + c.r.to_string());
    const Vals l = data(f, c.l.count(), 3), r = data(f, c.r.count(), 4);
    const std::vector<Tag> ct = c.contract;
    Outs o = run([ct](Tensor a, Tensor b) {
      return ct.size() == 1 ? dot(a, b, ct[0]) : dot(a, b, {ct[0], ct[1]});
    }, {l, r}, c.l, c.r);
    EXPECT_EQ(o.shapes[0], c.out);
    int64_t k = 1;
    for (int a : c.lc) k *= c.l.dim(a);
    auto [rtol, atol] = tol(f, k);
    EXPECT_TRUE(close(o.values[0], dot_ref(f, c.l, l, c.r, r, c.lb, c.rb, c.lc, c.rc), f, rtol, atol));
  }
}

void check_matmul(DType d, const Shape& ls, const Shape& rs, const Shape& out, uint32_t seed) {
  SCOPED_TRACE(ls.to_string() + " x " + rs.to_string());
  const Vals l = data(d, ls.count(), seed), r = data(d, rs.count(), seed + 1);
  Outs o = run([](Tensor a, Tensor b) { return matmul(a, b); }, {l, r}, ls, rs);
  EXPECT_EQ(o.shapes[0], out);
  // matmul's contract: lhs last axis with rhs second-to-last (or only) axis;
  // leading axes of equal-rank operands are batch axes.
  const int lr = ls.rank(), rr = rs.rank();
  std::vector<int> lb, rb;
  if (lr > 1 && rr > 1)
    for (int i = 0; i < lr - 2; ++i) lb.push_back(i), rb.push_back(i);
  const std::vector<int> lc = {lr - 1}, rc = {rr == 1 ? 0 : rr - 2};
  auto [rtol, atol] = tol(d, ls.dim(lr - 1));
  EXPECT_TRUE(close(o.values[0], dot_ref(d, ls, l, rs, r, lb, rb, lc, rc), d, rtol, atol));
}

TEST(Dot, Matmul2D) {
  // {m, k, n}: awkward sizes (scalar loops / partial tiles), then sizes that
  // take the tiled + vectorized matmul schedule (f32 / f64, n % 4 == 0), the
  // last one also the 64x256x256 blocking.
  const std::vector<std::array<int64_t, 3>> sizes = {
      {7, 13, 5}, {1, 1, 1}, {1, 7, 1}, {3, 5, 8}, {5, 7, 64}, {16, 17, 32}, {9, 3, 36}, {64, 128, 96}, {256, 256, 256}};
  for (DType d : {DType::kF32, DType::kF64})
    for (auto [m, k, n] : sizes) {
      if (d == DType::kF64 && m * n * k > 1000000) continue;
      check_matmul(d, Shape(d, {m, k}), Shape(d, {k, n}), Shape(d, {m, n}), 5);
    }
  // 64x96x128 as spelled in the brief (m=64, k=96, n=128).
  check_matmul(DType::kF32, Shape(DType::kF32, {64, 96}), Shape(DType::kF32, {96, 128}),
               Shape(DType::kF32, {64, 128}), 6);
}

TEST(Dot, MatmulIntegersAndHalf) {
  // Exact: small-integer data (products and sums exact in every dtype).
  for (DType d : {DType::kI32, DType::kI64, DType::kI8, DType::kU16, DType::kF16})
    for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{7, 13, 5}, {16, 16, 16}})
      check_matmul(d, Shape(d, {m, k}), Shape(d, {k, n}), Shape(d, {m, n}), 7);
}

TEST(Dot, MatmulBF16) {
  // Exact: small-integer data.
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{7, 13, 5}, {16, 16, 16}})
    check_matmul(DType::kBF16, Shape(DType::kBF16, {m, k}), Shape(DType::kBF16, {k, n}),
                 Shape(DType::kBF16, {m, n}), 7);
}

TEST(Dot, MatmulBatchedAndRank1) {
  const DType f = DType::kF32;
  check_matmul(f, Shape(f, {3, 5, 6}), Shape(f, {3, 6, 4}), Shape(f, {3, 5, 4}), 8);            // batch_matmul
  check_matmul(f, Shape(f, {2, 7, 13, 5}), Shape(f, {2, 7, 5, 3}), Shape(f, {2, 7, 13, 3}), 9);  // rank 4
  check_matmul(f, Shape(f, {4, 8, 32}), Shape(f, {4, 32, 16}), Shape(f, {4, 8, 16}), 10);
  check_matmul(f, Shape(f, {6}), Shape(f, {6, 4}), Shape(f, {4}), 11);           // row vector
  check_matmul(f, Shape(f, {5, 6}), Shape(f, {6}), Shape(f, {5}), 12);           // column vector
  check_matmul(f, Shape(f, {6}), Shape(f, {6}), Shape(f), 13);                   // inner product
  check_matmul(f, Shape(f, {2, 5, 6}), Shape(f, {6}), Shape(f, {2, 5}), 14);     // batched x vector
  check_matmul(f, Shape(f, {6}), Shape(f, {3, 6, 4}), Shape(f, {3, 4}), 15);     // vector x batched
  check_matmul(DType::kF64, Shape(DType::kF64, {2, 7, 13}), Shape(DType::kF64, {2, 13, 5}),
               Shape(DType::kF64, {2, 7, 5}), 16);
  check_matmul(DType::kI32, Shape(DType::kI32, {3, 5, 6}), Shape(DType::kI32, {3, 6, 4}),
               Shape(DType::kI32, {3, 5, 4}), 17);
  // Tags carry over through matmul.
  check_matmul(f, Shape(f, {2, 3, 4}, {"b", "m", "k"}), Shape(f, {2, 4, 5}, {"b", "k", "n"}),
               Shape(f, {2, 3, 5}, {"b", "m", "n"}), 18);
}

}  // namespace
}  // namespace radix

namespace radix {
namespace {

// f16 / bf16 dots accumulate in f32: 4096 products of 1 * f16(0.1) sum to
// 409.5 (the f16 inputs' exact sum, representable in f16). Accumulating in
// f16 would stall near 256, where 0.1 is below half an ulp.
TEST(Dot, HalfPrecisionAccumulatesInF32) {
  const int64_t K = 4096;
  for (DType d : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const uint16_t tenth = d == DType::kF16 ? float_to_f16(0.1f) : float_to_bf16(0.1f);
    const uint16_t one = d == DType::kF16 ? float_to_f16(1.f) : float_to_bf16(1.f);
    const double tenth_exact = d == DType::kF16 ? f16_to_float(tenth) : bf16_to_float(tenth);
    Shape a(d, {2, K}), b(d, {K, 3});
    auto exe = testing::must(compile_fn(testing::cpu(), [](Tensor x, Tensor y) { return matmul(x, y); }, a, b));
    Buffer ab = testing::must(testing::cpu().buffer(a, std::vector<uint16_t>(size_t(2 * K), tenth)));
    Buffer bb = testing::must(testing::cpu().buffer(b, std::vector<uint16_t>(size_t(K * 3), one)));
    std::vector<uint16_t> got = testing::must(testing::must(exe.call(ab, bb)).to_host<uint16_t>());
    const double want = K * tenth_exact;  // exact in double
    for (uint16_t g : got) {
      const double v = d == DType::kF16 ? f16_to_float(g) : bf16_to_float(g);
      // One final rounding to the 16-bit type: half an ulp at 409.5 (f16 0.125, bf16 1).
      EXPECT_NEAR(v, want, d == DType::kF16 ? 0.125 : 1.0);
    }
  }
}

}  // namespace
}  // namespace radix

namespace radix {
namespace {

// f32 activations times 16-bit weights (bf16 / f16), weights stored [out, in]
// or [in, out]: the product widens the weights inside the contraction (no
// f32 copy of them), accumulates in f32 and returns f32. Against a double
// loop over the weights' exact values, on every schedule (ISA tilings and
// plain loops), for the dot-product (M = 1, 3), register-tiled and packed
// (128 x 256 x 256) paths.
TEST(Dot, F32TimesHalfWeights) {
  struct Mnk { int64_t m, n, k; };
  for (DType d : {DType::kBF16, DType::kF16})
    for (Mnk s : {Mnk{1, 33, 64}, Mnk{3, 12, 40}, Mnk{1, 64, 1024}, Mnk{16, 48, 32}, Mnk{128, 256, 256}})
      for (bool out_in : {true, false}) {
        SCOPED_TRACE(std::string(dtype_name(d)) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                     std::to_string(s.k) + (out_in ? " w[out,in]" : " w[in,out]"));
        std::vector<float> x = testing::random_vec<float>(size_t(s.m * s.k), -1, 1, 61);
        std::vector<float> wf = testing::random_vec<float>(size_t(s.n * s.k), -1, 1, 62);
        std::vector<uint16_t> w(wf.size());
        for (size_t i = 0; i < w.size(); ++i) {
          w[i] = d == DType::kBF16 ? float_to_bf16(wf[i]) : float_to_f16(wf[i]);
          wf[i] = d == DType::kBF16 ? bf16_to_float(w[i]) : f16_to_float(w[i]);
        }
        std::vector<float> want(size_t(s.m * s.n));
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = 0; j < s.n; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < s.k; ++k)
              acc += double(x[size_t(i * s.k + k)]) * wf[size_t(out_in ? j * s.k + k : k * s.n + j)];
            want[size_t(i * s.n + j)] = static_cast<float>(acc);
          }
        Shape xs(DType::kF32, {s.m, s.k}), ws = out_in ? Shape(d, {s.n, s.k}) : Shape(d, {s.k, s.n});
        on_every_schedule([&] {
          CompileFnOptions o;
          o.compile = g_opts.compile;
          // Exact f32 x: the AVX-512 BF16 kernels round it (bf16_kernels_test).
          o.compile.codegen.cpu.bf16_kernels = false;
          auto exe = testing::must(compile_fn(
              testing::cpu(), o,
              [out_in](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {out_in ? 1 : 0}}); }, xs,
              ws));
          EXPECT_EQ(exe.executable().signature().outputs[0].to_string(),
                    "f32[" + std::to_string(s.m) + "," + std::to_string(s.n) + "]");
          Buffer out = testing::must(exe.call(testing::must(testing::cpu().buffer(xs, x)),
                                              testing::must(testing::cpu().buffer(ws, w))));
          // f32 sums of <= 1024 products of magnitude <= 1 against double.
          EXPECT_TRUE(testing::all_close(testing::must(out.to_host<float>()), want, 1e-5, 2e-6 * double(s.k)));
        });
      }
}

TEST(Dot, MixedDtypesOtherThanF32AndHalfAreRefused) {
  for (auto [a, b] : std::vector<std::pair<DType, DType>>{{DType::kF64, DType::kBF16}, {DType::kI32, DType::kF32},
                                                          {DType::kF16, DType::kBF16}}) {
    auto r = compile_fn(testing::cpu(), [](Tensor x, Tensor y) { return matmul(x, y); }, Shape(a, {2, 3}),
                        Shape(b, {3, 4}));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("operands must share one dtype"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace radix
