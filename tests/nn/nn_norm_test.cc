// nn::rms_norm and nn::layer_norm against naive double loops. Tolerances:
// f32 within 1e-5 relative + 1e-6 absolute (a mean over <= 64 elements and a
// rsqrt); f16 / bf16 results are computed in f32 and rounded once, so within
// one ulp of the dtype (eps relative) + 1e-3 absolute near zero.
#include <gtest/gtest.h>

#include <cmath>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

// Normalizes rows of length D (the last axis).
Vals naive_norm(const Vals& x, int64_t D, bool rms, const Vals* w, const Vals* b, double eps_) {
  Vals out(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(D); ++r) {
    double mean = 0, sq = 0;
    for (int64_t j = 0; j < D; ++j) mean += static_cast<double>(x[r * D + j]);
    mean /= D;
    const double center = rms ? 0 : mean;
    for (int64_t j = 0; j < D; ++j) {
      const double c = static_cast<double>(x[r * D + j]) - center;
      sq += c * c;
    }
    const double inv = 1 / std::sqrt(sq / D + eps_);
    for (int64_t j = 0; j < D; ++j) {
      double y = (static_cast<double>(x[r * D + j]) - center) * inv;
      if (w) y *= static_cast<double>((*w)[j]);
      if (b) y += static_cast<double>((*b)[j]);
      out[r * D + j] = y;
    }
  }
  return out;
}

TEST(NnNorm, RmsAndLayerNormMatchNaiveLoops) {
  on_every_schedule([&] {
    const int64_t B = 3, S = 2, D = 64;
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(dtype_name(dt));
      const Shape xs(dt, {B, S, D}, {"b", "s", "d"}), ws(dt, {D}, {"d"});
      Vals x = quantize(dt, rand_vals(static_cast<size_t>(xs.count()), -3, 3, 31));
      Vals w = quantize(dt, rand_vals(D, 0.5, 1.5, 32)), bias = quantize(dt, rand_vals(D, -0.5, 0.5, 33));
      Outs o = run([](Tensor x, Tensor w, Tensor b) {
        return std::vector<Tensor>{nn::rms_norm(x, w, "d", 1e-5), nn::rms_norm(x), nn::layer_norm(x, w, b),
                                   nn::layer_norm(x)};
      }, {x, w, bias}, xs, ws, ws);
      EXPECT_EQ(o.shapes[0], xs);
      const double rtol = dt == DType::kF32 ? 1e-5 : eps(dt), atol = dt == DType::kF32 ? 1e-6 : 1e-3;
      EXPECT_TRUE(close(o.values[0], quantize(dt, naive_norm(x, D, true, &w, nullptr, 1e-5)), dt, rtol, atol));
      EXPECT_TRUE(close(o.values[1], quantize(dt, naive_norm(x, D, true, nullptr, nullptr, 1e-6)), dt, rtol, atol));
      EXPECT_TRUE(close(o.values[2], quantize(dt, naive_norm(x, D, false, &w, &bias, 1e-5)), dt, rtol, atol));
      EXPECT_TRUE(close(o.values[3], quantize(dt, naive_norm(x, D, false, nullptr, nullptr, 1e-5)), dt, rtol, atol));
    }
  });
}

TEST(NnNorm, OverANonLastAxis) {
  on_every_schedule([&] {
    // x[d=5, b=3] normalized over d (axis 0): the weight lies along axis 0.
    const Shape xs(DType::kF32, {5, 3}, {"d", "b"}), ws(DType::kF32, {5});
    Vals x = quantize(DType::kF32, rand_vals(15, -2, 2, 34)), w = quantize(DType::kF32, rand_vals(5, 0.5, 1.5, 35));
    Outs o = run([](Tensor x, Tensor w) { return nn::rms_norm(x, w, "d"); }, {x, w}, xs, ws);
    Vals xt(15), want(15);  // transpose, normalize rows, transpose back
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 3; ++j) xt[j * 5 + i] = x[i * 3 + j];
    Vals yt = naive_norm(xt, 5, true, &w, nullptr, 1e-6);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 3; ++j) want[i * 3 + j] = yt[j * 5 + i];
    EXPECT_TRUE(close(o.values[0], want, DType::kF32, 1e-5, 1e-6));
  });
}

TEST(NnNorm, BadInputNamesLayerAndShapes) {
  auto e = compile_fn(testing::cpu(), [](Tensor x, Tensor w) { return nn::rms_norm(x, w); },
                      Shape(DType::kF32, {2, 8}, {"b", "d"}), Shape(DType::kF32, {4}));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("nn::rms_norm(f32[b=2,d=8], f32[4])"), std::string::npos) << e.status().message();
  auto e2 = compile_fn(testing::cpu(), [](Tensor x) { return nn::layer_norm(x, std::nullopt, std::nullopt, "q"); },
                       Shape(DType::kF32, {2, 8}, {"b", "d"}));
  ASSERT_FALSE(e2.ok());
  EXPECT_NE(e2.status().message().find("nn::layer_norm(f32[b=2,d=8]): no axis"), std::string::npos) << e2.status().message();
}

}  // namespace
}  // namespace radix
