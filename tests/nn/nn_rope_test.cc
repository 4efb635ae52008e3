// nn::rope, both layouts, against a naive reference written from the
// definition. The reference forms each angle as the product of f32 position
// and f32 frequency (what the layer computes) and rotates in double.
// Tolerance: f32 within 1e-5 absolute for |x| <= 2 (sin / cos of f32 angles
// up to ~40 rad, plus two roundings); f16 within 2 f16 ulps relative + 2e-3.
#include <gtest/gtest.h>

#include <cmath>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

// x [S, H, HD] at positions pos[S].
Vals naive_rope(const Vals& x, const std::vector<int64_t>& pos, int64_t H, int64_t HD, bool interleaved,
                double theta) {
  Vals out = x;
  const int64_t S = static_cast<int64_t>(pos.size()), half = HD / 2;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t j = 0; j < half; ++j) {
        const float inv = static_cast<float>(std::pow(theta, -2.0 * j / HD));
        const double ang = static_cast<float>(static_cast<float>(pos[static_cast<size_t>(s)]) * inv);
        const int64_t base = (s * H + h) * HD;
        const int64_t ia = base + (interleaved ? 2 * j : j), ib = base + (interleaved ? 2 * j + 1 : j + half);
        const double a = static_cast<double>(x[static_cast<size_t>(ia)]), b = static_cast<double>(x[static_cast<size_t>(ib)]);
        out[static_cast<size_t>(ia)] = a * std::cos(ang) - b * std::sin(ang);
        out[static_cast<size_t>(ib)] = b * std::cos(ang) + a * std::sin(ang);
      }
  return out;
}

TEST(NnRope, BothLayoutsWithOffsetAndPositions) {
  on_every_schedule([&] {
    const int64_t S = 4, H = 2, HD = 8;
    for (DType dt : {DType::kF32, DType::kF16})
      for (bool inter : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + (inter ? " interleaved" : " half-split"));
        const Shape xs(dt, {S, H, HD}, {"s", "h", "hd"});
        Vals x = quantize(dt, rand_vals(static_cast<size_t>(xs.count()), -2, 2, 21));
        const nn::RopeOptions opts{.layout = inter ? nn::RopeLayout::kInterleaved : nn::RopeLayout::kHalfSplit,
                                   .theta = 500.0, .seq_axis = "s", .head_dim_axis = "hd"};
        // Offset 0, offset 5 (a continuation), and explicit positions.
        Outs o = run([&](Tensor x, Tensor off, Tensor pos) {
          return std::vector<Tensor>{nn::rope(x, off * 0, opts), nn::rope(x, off, opts), nn::rope(x, pos, opts)};
        }, {x, {5}, {7, 0, 3, 40}}, xs, Shape(DType::kI32), Shape(DType::kI64, {S}));
        EXPECT_EQ(o.shapes[0], xs);
        const double rtol = dt == DType::kF16 ? 2 * eps(dt) : 0, atol = dt == DType::kF16 ? 2e-3 : 1e-5;
        EXPECT_TRUE(close(o.values[0], naive_rope(x, {0, 1, 2, 3}, H, HD, inter, 500.0), dt, rtol, atol));
        EXPECT_TRUE(close(o.values[1], naive_rope(x, {5, 6, 7, 8}, H, HD, inter, 500.0), dt, rtol, atol));
        EXPECT_TRUE(close(o.values[2], naive_rope(x, {7, 0, 3, 40}, H, HD, inter, 500.0), dt, rtol, atol));
      }
  });
}

TEST(NnRope, DecodeStepAtPosition) {
  on_every_schedule([&] {
    // [b, s=1, h, hd] by the default axes (-3, -1): one token at position 9.
    const int64_t H = 3, HD = 4;
    const Shape xs(DType::kF32, {2, 1, H, HD});
    Vals x = quantize(DType::kF32, rand_vals(static_cast<size_t>(xs.count()), -1, 1, 22));
    Outs o = run([](Tensor x, Tensor p) { return nn::rope(x, p); }, {x, {9}}, xs, Shape(DType::kI32));
    Vals want;
    for (int b = 0; b < 2; ++b) {
      Vals xb(x.begin() + b * H * HD, x.begin() + (b + 1) * H * HD);
      Vals wb = naive_rope(xb, {9}, H, HD, false, 10000.0);
      want.insert(want.end(), wb.begin(), wb.end());
    }
    EXPECT_TRUE(close(o.values[0], want, DType::kF32, 0, 1e-5));
  });
}

// A table computed once (as a model does for all its layers) rotates like
// rope(x, positions): the same values, bit for bit, both layouts, against
// the naive reference too.
TEST(NnRope, PrecomputedTableMatchesPositions) {
  on_every_schedule([&] {
    const int64_t S = 5, H = 2, HD = 6;
    for (bool inter : {false, true}) {
      SCOPED_TRACE(inter ? "interleaved" : "half-split");
      const Shape xs(DType::kF32, {1, S, H, HD});
      Vals x = quantize(DType::kF32, rand_vals(static_cast<size_t>(xs.count()), -2, 2, 23));
      const nn::RopeOptions opts{.layout = inter ? nn::RopeLayout::kInterleaved : nn::RopeLayout::kHalfSplit,
                                 .theta = 300.0};
      Outs o = run([&](Tensor x, Tensor off) {
        const nn::RopeTable t = nn::rope_table(off, S, HD, opts);
        return std::vector<Tensor>{nn::rope(x, t, opts), nn::rope(x, off, opts), t.cos};
      }, {x, {11}}, xs, Shape(DType::kI32));
      EXPECT_EQ(o.values[0], o.values[1]);
      EXPECT_EQ(o.shapes[2], Shape(DType::kF32, {S, HD / 2}));
      EXPECT_TRUE(close(o.values[0], naive_rope(x, {11, 12, 13, 14, 15}, H, HD, inter, 300.0), DType::kF32, 0, 1e-5));
    }
  });
}

TEST(NnRope, BadInputNamesLayerAndShapes) {
  // A table for another sequence length: both shapes and the one expected.
  auto t = compile_fn(testing::cpu(),
                      [](Tensor x, Tensor p) { return nn::rope(x, nn::rope_table(p, 3, 8)); },
                      Shape(DType::kF32, {4, 2, 8}), Shape(DType::kI32));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("nn::rope(f32[4,2,8], f32[3,4], f32[3,4]): the table's cos and sin must be f32[4,4]"),
            std::string::npos)
      << t.status().message();
  auto e = compile_fn(testing::cpu(), [](Tensor x, Tensor p) { return nn::rope(x, p); }, Shape(DType::kF32, {4, 2, 5}),
                      Shape(DType::kI32));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("nn::rope(f32[4,2,5], i32[]): the head dim must be even"), std::string::npos)
      << e.status().message();
}

}  // namespace
}  // namespace radix
