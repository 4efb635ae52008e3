// nn::linear / Linear, embed, mlp / SwiGLU, conv2d_block and the mask
// builders against naive double loops. Tolerance: f32 within 1e-5 relative
// + 1e-5 absolute (dot products of <= 16 terms; silu / gelu within a few
// ulps); masks and embeddings exact.
#include <gtest/gtest.h>

#include <cmath>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

// x[R, D] . w[D, O] (+ b[O]).
Vals naive_linear(const Vals& x, const Vals& w, const Vals* b, int64_t R, int64_t D, int64_t O) {
  Vals y(static_cast<size_t>(R * O));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t o = 0; o < O; ++o) {
      double acc = b ? static_cast<double>((*b)[o]) : 0;
      for (int64_t d = 0; d < D; ++d) acc += static_cast<double>(x[r * D + d]) * static_cast<double>(w[d * O + o]);
      y[r * O + o] = acc;
    }
  return y;
}
double silu_d(double v) { return v / (1 + std::exp(-v)); }
double gelu_d(double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }
Vals map(Vals v, double (*f)(double)) {
  for (Val& x : v) x = f(static_cast<double>(x));
  return v;
}

TEST(NnLayers, LinearWithAndWithoutBias) {
  on_every_schedule([&] {
    const int64_t B = 2, S = 3, D = 5, O = 4;
    const Shape xs(DType::kF32, {B, S, D}, {"b", "s", "d"}), ws(DType::kF32, {D, O}, {"d", "o"}), bs(DType::kF32, {O});
    Vals x = quantize(DType::kF32, rand_vals(B * S * D, -1, 1, 41)), w = quantize(DType::kF32, rand_vals(D * O, -1, 1, 42));
    Vals b = quantize(DType::kF32, rand_vals(O, -1, 1, 43));
    Outs o = run([](Tensor x, Tensor w, Tensor b) { return std::vector<Tensor>{nn::linear(x, w), nn::linear(x, w, b)}; },
                 {x, w, b}, xs, ws, bs);
    EXPECT_EQ(o.shapes[1], Shape(DType::kF32, {B, S, O}, {"b", "s", "o"}));
    EXPECT_TRUE(close(o.values[0], naive_linear(x, w, nullptr, B * S, D, O), DType::kF32, 1e-5, 1e-5));
    EXPECT_TRUE(close(o.values[1], naive_linear(x, w, &b, B * S, D, O), DType::kF32, 1e-5, 1e-5));
  });
}

TEST(NnLayers, LinearModelStructCompiles) {
  const int64_t D = 6, O = 3;
  std::vector<float> w = testing::random_vec<float>(D * O, -1, 1, 44), b = testing::random_vec<float>(O, -1, 1, 45);
  std::vector<float> x = testing::random_vec<float>(2 * D, -1, 1, 46);
  nn::Linear<Buffer> weights{must(cpu().buffer(Shape(DType::kF32, {D, O}, {"d", "o"}), w)),
                             must(cpu().buffer(Shape(DType::kF32, {O}, {"o"}), b))};
  auto exe = must(compile_model(cpu(), tensors_like(weights), &nn::Linear<Tensor>::forward,
                                Shape(DType::kF32, {2, D}, {"b", "d"})));
  auto ready = must(exe.prepare(std::move(weights)));
  Buffer y = must(ready.call(must(cpu().buffer(Shape(DType::kF32, {2, D}, {"b", "d"}), x))));
  std::vector<float> got = must(y.to_host<float>());
  Vals xv(x.begin(), x.end()), wv(w.begin(), w.end()), bv(b.begin(), b.end());
  Vals want = naive_linear(xv, wv, &bv, 2, D, O);
  EXPECT_TRUE(close(Vals(got.begin(), got.end()), want, DType::kF32, 1e-5, 1e-5));
}

TEST(NnLayers, SwiGluModelStructCompiles) {
  const int64_t D = 4, F = 6;
  std::vector<float> g = testing::random_vec<float>(D * F, -1, 1, 47), u = testing::random_vec<float>(D * F, -1, 1, 48);
  std::vector<float> d = testing::random_vec<float>(F * D, -1, 1, 49), x = testing::random_vec<float>(D, -1, 1, 50);
  const Shape up(DType::kF32, {D, F}, {"d", "f"}), down(DType::kF32, {F, D}, {"f", "d"});
  nn::SwiGluMlp<Buffer> weights{{must(cpu().buffer(up, g))}, {must(cpu().buffer(up, u))}, {must(cpu().buffer(down, d))}};
  auto exe = must(compile_model(cpu(), tensors_like(weights), &nn::SwiGluMlp<Tensor>::forward,
                                Shape(DType::kF32, {1, D}, {"b", "d"})));
  auto ready = must(exe.prepare(std::move(weights)));
  std::vector<float> got = must(must(ready.call(must(cpu().buffer(Shape(DType::kF32, {1, D}, {"b", "d"}), x)))).to_host<float>());
  Vals xv(x.begin(), x.end()), gv(g.begin(), g.end()), uv(u.begin(), u.end()), dv(d.begin(), d.end());
  Vals h = map(naive_linear(xv, gv, nullptr, 1, D, F), silu_d), hu = naive_linear(xv, uv, nullptr, 1, D, F);
  for (size_t i = 0; i < h.size(); ++i) h[i] *= hu[i];
  EXPECT_TRUE(close(Vals(got.begin(), got.end()), naive_linear(h, dv, nullptr, 1, F, D), DType::kF32, 1e-5, 1e-5));
}

TEST(NnLayers, EmbeddingTakesRows) {
  on_every_schedule([&] {
    const Shape ts(DType::kF32, {5, 3}, {"v", "d"}), is(DType::kI32, {2, 2}, {"b", "s"});
    Vals t;
    for (int i = 0; i < 15; ++i) t.push_back(i);
    Outs o = run([](Tensor t, Tensor ids) { return nn::embed(t, ids); }, {t, {4, 0, 2, 2}}, ts, is);
    EXPECT_EQ(o.shapes[0], Shape(DType::kF32, {2, 2, 3}, {"b", "s", "d"}));
    EXPECT_TRUE(close(o.values[0], {12, 13, 14, 0, 1, 2, 6, 7, 8, 6, 7, 8}, DType::kF32));
  });
}

TEST(NnLayers, MlpAndSwiGlu) {
  on_every_schedule([&] {
    const int64_t R = 3, D = 4, F = 8;
    const Shape xs(DType::kF32, {R, D}, {"b", "d"}), up(DType::kF32, {D, F}, {"d", "f"}), down(DType::kF32, {F, D}, {"f", "d"});
    const Shape bf(DType::kF32, {F}), bd(DType::kF32, {D});
    Vals x = quantize(DType::kF32, rand_vals(R * D, -1, 1, 51)), wu = quantize(DType::kF32, rand_vals(D * F, -1, 1, 52));
    Vals wg = quantize(DType::kF32, rand_vals(D * F, -1, 1, 53)), wd = quantize(DType::kF32, rand_vals(F * D, -1, 1, 54));
    Vals b1 = quantize(DType::kF32, rand_vals(F, -1, 1, 55)), b2 = quantize(DType::kF32, rand_vals(D, -1, 1, 56));
    Outs o = run([](Tensor x, Tensor wu, Tensor wg, Tensor wd, Tensor b1, Tensor b2) {
      return std::vector<Tensor>{nn::mlp(x, wu, wd, nn::Activation::kSilu), nn::mlp(x, wu, b1, wd, b2),
                                 nn::swiglu_mlp(x, wg, wu, wd)};
    }, {x, wu, wg, wd, b1, b2}, xs, up, up, down, bf, bd);
    EXPECT_EQ(o.shapes[2], xs);
    EXPECT_TRUE(close(o.values[0], naive_linear(map(naive_linear(x, wu, nullptr, R, D, F), silu_d), wd, nullptr, R, F, D),
                      DType::kF32, 1e-5, 1e-5));
    EXPECT_TRUE(close(o.values[1], naive_linear(map(naive_linear(x, wu, &b1, R, D, F), gelu_d), wd, &b2, R, F, D),
                      DType::kF32, 1e-5, 1e-5));
    Vals g = map(naive_linear(x, wg, nullptr, R, D, F), silu_d), u = naive_linear(x, wu, nullptr, R, D, F);
    for (size_t i = 0; i < g.size(); ++i) g[i] *= u[i];
    EXPECT_TRUE(close(o.values[2], naive_linear(g, wd, nullptr, R, F, D), DType::kF32, 1e-5, 1e-5));
  });
}

TEST(NnLayers, Conv2dBlockAddsBiasAndActivates) {
  on_every_schedule([&] {
    // NHWC x[1, 4, 4, 2], HWIO kernel [3, 3, 2, 3], "same" padding, relu.
    const int64_t H = 4, W = 4, C = 2, O = 3, K = 3;
    const Shape xs(DType::kF32, {1, H, W, C}), ks(DType::kF32, {K, K, C, O}), bs(DType::kF32, {O});
    Vals x = quantize(DType::kF32, rand_vals(H * W * C, -1, 1, 61)), k = quantize(DType::kF32, rand_vals(K * K * C * O, -1, 1, 62));
    Vals b = quantize(DType::kF32, rand_vals(O, -1, 1, 63));
    ConvOptions co;
    co.padding = Padding::same();
    Outs o = run([&](Tensor x, Tensor k, Tensor b) { return nn::conv2d_block(x, k, b, nn::Activation::kRelu, co); },
                 {x, k, b}, xs, ks, bs);
    Vals want;
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < W; ++j)
        for (int64_t oc = 0; oc < O; ++oc) {
          double acc = static_cast<double>(b[oc]);
          for (int64_t di = 0; di < K; ++di)
            for (int64_t dj = 0; dj < K; ++dj)
              for (int64_t c = 0; c < C; ++c) {
                const int64_t y = i + di - 1, xx = j + dj - 1;
                if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
                acc += static_cast<double>(x[(y * W + xx) * C + c]) * static_cast<double>(k[((di * K + dj) * C + c) * O + oc]);
              }
          want.push_back(std::max(acc, 0.0));
        }
    EXPECT_TRUE(close(o.values[0], want, DType::kF32, 1e-5, 1e-5));
  });
}

TEST(NnLayers, MasksMatchDefinitions) {
  on_every_schedule([&] {
    Tensor off_unused;
    Outs o = run([](Tensor off) {
      return std::vector<Tensor>{nn::causal_mask(3, 5, 2), nn::sliding_window_mask(3, 5, 2, 2), nn::causal_mask(3, 5, off),
                                 nn::causal_mask(3, 5, off, 2)};
    }, {{2}}, Shape(DType::kI32));
    EXPECT_EQ(o.shapes[0], Shape(DType::kBool, {3, 5}, {"s", "t"}));
    Vals causal, window;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        causal.push_back(j <= i + 2);
        window.push_back(j <= i + 2 && j > i + 2 - 2);
      }
    EXPECT_TRUE(close(o.values[0], causal, DType::kBool));
    EXPECT_TRUE(close(o.values[1], window, DType::kBool));
    EXPECT_TRUE(close(o.values[2], causal, DType::kBool));
    EXPECT_TRUE(close(o.values[3], window, DType::kBool));
  });
}

TEST(NnLayers, BadInputNamesLayerAndShapes) {
  auto e = compile_fn(testing::cpu(), [](Tensor x, Tensor w) { return nn::linear(x, w); },
                      Shape(DType::kF32, {2, 5}, {"b", "d"}), Shape(DType::kF32, {4, 3}, {"d", "o"}));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("nn::linear(f32[b=2,d=5], f32[d=4,o=3])"), std::string::npos) << e.status().message();
  auto e2 = compile_fn(testing::cpu(), [](Tensor x, Tensor g, Tensor d) { return nn::swiglu_mlp(x, g, g, d); },
                       Shape(DType::kF32, {2, 4}), Shape(DType::kF32, {4, 8}), Shape(DType::kF32, {6, 4}));
  ASSERT_FALSE(e2.ok());
  EXPECT_NE(e2.status().message().find("nn::swiglu_mlp: nn::linear(f32[2,8], f32[6,4])"), std::string::npos)
      << e2.status().message();
}

}  // namespace
}  // namespace radix
