// Model structs: nested layers (struct, std::vector, std::array) traced with
// one visit(), compiled once, prepared with weights once, called many times.
#include <gtest/gtest.h>

#include "examples/mlp.h"
#include "test_util.h"

namespace radix {
namespace {

using examples::HostMlp;
using examples::Mlp;
using examples::MlpConfig;
using testing::cpu;
using testing::must;

TEST(Model, MlpPreparedOnceCalledManyTimes) {
  MlpConfig cfg{.in = 24, .hidden = 40, .out = 10, .n_hidden = 3, .seed = 7};
  HostMlp host = examples::make_host_mlp(cfg);
  Mlp<Buffer> weights = must(examples::upload_mlp(cpu(), host));
  ASSERT_EQ(weights.hidden.size(), 3u);
  const int64_t batch = 6;
  Shape xs(DType::kF32, {batch, cfg.in}, {"b", "d"});

  auto exe = must(compile_model(cpu(), tensors_like(weights), &Mlp<Tensor>::forward, xs));
  const Signature& sig = exe.executable().signature();
  EXPECT_EQ(sig.n_model, 2u * 5);
  EXPECT_EQ(sig.input_names[2], "hidden.0.w");
  EXPECT_EQ(sig.input_names.back(), "arg0");
  auto ready = must(exe.prepare(std::move(weights)));

  for (uint32_t seed = 0; seed < 4; ++seed) {
    std::vector<float> x = testing::random_vec<float>(static_cast<size_t>(batch * cfg.in), -2, 2, seed);
    Buffer xb = must(cpu().buffer(xs, x));
    Buffer y = must(ready.call(xb));
    EXPECT_EQ(y.shape().to_string(), "f32[b=6,d=10]");
    std::vector<float> want = examples::mlp_reference(host, x, batch);
    // f32 accumulation over <= 40 terms vs a double reference.
    EXPECT_TRUE(testing::all_close(must(y.to_host<float>()), want, 1e-4, 1e-5)) << "seed " << seed;
  }
}

TEST(Model, PrepareChecksWeights) {
  MlpConfig cfg{.in = 8, .hidden = 8, .out = 4, .n_hidden = 1};
  HostMlp host = examples::make_host_mlp(cfg);
  Shape xs(DType::kF32, {2, 8}, {"b", "d"});
  auto exe = must(compile_model(cpu(), tensors_like(must(examples::upload_mlp(cpu(), host))),
                                &Mlp<Tensor>::forward, xs));
  // A weight set of another shape.
  MlpConfig other = cfg;
  other.hidden = 9;
  auto bad = exe.prepare(must(examples::upload_mlp(cpu(), examples::make_host_mlp(other))));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("input.w"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("f32[d=8,o=8]"), std::string::npos) << bad.status().message();
  // A weight set with a different number of layers.
  other = cfg;
  other.n_hidden = 2;
  auto bad2 = exe.prepare(must(examples::upload_mlp(cpu(), examples::make_host_mlp(other))));
  ASSERT_FALSE(bad2.ok());
  EXPECT_NE(bad2.status().message().find("traced with 6 weight tensors, got 8"), std::string::npos)
      << bad2.status().message();
}

// A model with an std::array of layers and a struct result.
template <class T>
struct Pair {
  T lo, hi;
  template <class V> void visit(V&& v) { v("lo", lo); v("hi", hi); }
};

template <class T>
struct Scaler {
  std::array<T, 2> scales;  // f32[d]
  template <class V> void visit(V&& v) { v("scales", scales); }
  Pair<Tensor> forward(Tensor x, Tensor y) const { return {x * scales[0] + y, x * scales[1] - y}; }
};

TEST(Model, ArraysOfLayersAndStructResults) {
  Shape d(DType::kF32, {5}, {"d"});
  Scaler<Buffer> w;
  w.scales[0] = must(cpu().buffer(d, std::vector<float>{1, 2, 3, 4, 5}));
  w.scales[1] = must(cpu().buffer(d, std::vector<float>{-1, -1, 0, 1, 1}));
  auto exe = must(compile_model(cpu(), tensors_like(w), &Scaler<Tensor>::forward, d, d));
  auto ready = must(exe.prepare(std::move(w)));
  std::vector<float> x{1, 1, 2, 2, 3}, y{0.5, 0.25, 0, -1, 2};
  Buffer xb = must(cpu().buffer(d, x)), yb = must(cpu().buffer(d, y));
  for (int rep = 0; rep < 3; ++rep) {
    Pair<Buffer> out = must(ready.call(xb, yb));
    std::vector<float> lo = must(out.lo.to_host<float>()), hi = must(out.hi.to_host<float>());
    const float s0[] = {1, 2, 3, 4, 5}, s1[] = {-1, -1, 0, 1, 1};
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_FLOAT_EQ(lo[i], x[i] * s0[i] + y[i]);
      EXPECT_FLOAT_EQ(hi[i], x[i] * s1[i] - y[i]);
    }
  }
}

TEST(Model, FunctionsReturningVectorsAndArraysOfTensors) {
  Shape s(DType::kF32, {3});
  auto exe = must(compile_fn(cpu(), [](std::array<Tensor, 2> in) {
    return std::vector<Tensor>{in[0] + in[1], in[0] * in[1], in[0] - in[1]};
  }, std::array<Tensor, 2>{Tensor::placeholder(s), Tensor::placeholder(s)}));
  std::array<Buffer, 2> in{must(cpu().buffer(s, std::vector<float>{1, 2, 3})),
                           must(cpu().buffer(s, std::vector<float>{4, 5, 6}))};
  std::vector<Buffer> out = must(exe.call(in));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(must(out[0].to_host<float>()), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(must(out[1].to_host<float>()), (std::vector<float>{4, 10, 18}));
  EXPECT_EQ(must(out[2].to_host<float>()), (std::vector<float>{-3, -3, -3}));
}

TEST(Model, SharedWeightsAcrossExecutables) {
  MlpConfig cfg{.in = 8, .hidden = 16, .out = 4, .n_hidden = 1};
  HostMlp host = examples::make_host_mlp(cfg);
  auto weights = std::make_shared<const Mlp<Buffer>>(must(examples::upload_mlp(cpu(), host)));
  for (int64_t batch : {1, 3}) {
    Shape xs(DType::kF32, {batch, cfg.in}, {"b", "d"});
    auto exe = must(compile_model(cpu(), tensors_like(*weights), &Mlp<Tensor>::forward, xs));
    auto ready = must(exe.prepare_shared(weights));
    std::vector<float> x = testing::random_vec<float>(static_cast<size_t>(batch * cfg.in), -1, 1, 3);
    Buffer y = must(ready.call(must(cpu().buffer(xs, x))));
    EXPECT_TRUE(testing::all_close(must(y.to_host<float>()), examples::mlp_reference(host, x, batch), 1e-4, 1e-5));
  }
}

}  // namespace
}  // namespace radix
