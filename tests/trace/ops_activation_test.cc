// Activations and the softmax family against double-precision formulas
// written from their definitions, on every schedule. Tolerances: f32 results
// within 8 eps relative (a few roundings plus the polynomial exp / tanh / erf
// of the default math), with an absolute floor of 1e-6 near zero.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

double sigm(double x) { return 1 / (1 + std::exp(-x)); }

TEST(Activations, ElementwiseAgainstFormulas) {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<double(double)> ref;
  };
  const std::vector<Case> cases = {
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }, [](double x) { return x > 0 ? x : 0.2 * x; }},
      {"elu", [](const Tensor& x) { return elu(x, 1.5); }, [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, GeluForm::kTanh); },
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
      {"quick_gelu", [](const Tensor& x) { return quick_gelu(x); }, [](double x) { return x * sigm(1.702 * x); }},
      {"silu", [](const Tensor& x) { return silu(x); }, [](double x) { return x * sigm(x); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }, [](double x) { return std::log1p(std::exp(x)); }},
  };
  on_every_schedule([&] {
    for (const Case& c : cases)
      for (std::vector<int64_t> dims : {std::vector<int64_t>{1}, {5, 19}, {64}}) {
        SCOPED_TRACE(c.name);
        const Shape s = shape_of(DType::kF32, dims);
        Vals x = quantize(DType::kF32, rand_vals(static_cast<size_t>(s.count()), -8, 8, 5));
        if (x.size() > 2) x[0] = 80, x[1] = -80;  // tails: no overflow, no NaN
        Outs o = run([&](Tensor t) { return c.op(t); }, {x}, s);
        Vals w;
        for (Val v : x) w.push_back(c.ref(static_cast<double>(v)));
        EXPECT_TRUE(close(o.values[0], quantize(DType::kF32, w), DType::kF32, 8 * eps(DType::kF32), 1e-6));
      }
  });
}

TEST(Activations, SwigluBothForms) {
  on_every_schedule([] {
    const Shape s(DType::kF32, {3, 8}, {"b", "f"});
    Vals x = quantize(DType::kF32, rand_vals(24, -4, 4, 9));
    Outs o = run([](Tensor t) {
      auto halves = split(t, "f", {4, 4});
      return std::vector<Tensor>{swiglu(t, "f"), swiglu(halves[0], halves[1])};
    }, {x}, s);
    Vals w;
    for (int r = 0; r < 3; ++r)
      for (int j = 0; j < 4; ++j) {
        double g = static_cast<double>(x[r * 8 + j]), u = static_cast<double>(x[r * 8 + 4 + j]);
        w.push_back(g * sigm(g) * u);
      }
    EXPECT_EQ(o.shapes[0], Shape(DType::kF32, {3, 4}, {"b", "f"}));
    EXPECT_TRUE(close(o.values[0], quantize(DType::kF32, w), DType::kF32, 8 * eps(DType::kF32), 1e-6));
    EXPECT_TRUE(close(o.values[1], o.values[0], DType::kF32));
  });
}

TEST(Activations, SoftmaxFamilyIsStable) {
  on_every_schedule([] {
    const int64_t R = 4, C = 37;
    const Shape s(DType::kF32, {R, C}, {"r", "c"});
    Vals x = quantize(DType::kF32, rand_vals(R * C, -20, 20, 3));
    x[0] = 1000;                                      // huge logit: no overflow
    for (int64_t j = 0; j < C; ++j) x[2 * C + j] = -INFINITY;  // an all -inf row
    x[3 * C + 5] = -INFINITY;                          // one -inf entry
    Outs o = run([](Tensor t) {
      return std::vector<Tensor>{softmax(t, "c"), log_softmax(t, "c"), logsumexp(t, "c"), softmax(t, "r")};
    }, {x}, s);
    Vals sm, lsm, lse;
    for (int64_t r = 0; r < R; ++r) {
      double m = -INFINITY;
      for (int64_t j = 0; j < C; ++j) m = std::max(m, double(x[r * C + j]));
      double sum = 0;
      for (int64_t j = 0; j < C; ++j) sum += std::exp(double(x[r * C + j]) - (std::isinf(m) ? 0 : m));
      const double l = (std::isinf(m) ? 0 : m) + std::log(sum);
      lse.push_back(l);
      for (int64_t j = 0; j < C; ++j) {
        const double v = double(x[r * C + j]);
        sm.push_back(std::isinf(m) && m < 0 ? NAN : std::exp(v - l));
        lsm.push_back(std::isinf(m) && m < 0 ? NAN : v - l);
      }
    }
    EXPECT_TRUE(close(o.values[0], sm, DType::kF32, 16 * eps(DType::kF32), 1e-7));
    EXPECT_TRUE(close(o.values[1], lsm, DType::kF32, 16 * eps(DType::kF32), 1e-5));
    EXPECT_TRUE(close(o.values[2], lse, DType::kF32, 8 * eps(DType::kF32), 1e-6));
    EXPECT_EQ(o.shapes[2], Shape(DType::kF32, {R}, {"r"}));
    EXPECT_TRUE(std::isinf(static_cast<double>(o.values[2][2])) && o.values[2][2] < 0);  // all -inf -> -inf
    // Softmax over the other axis: every column sums to 1 (where finite).
    for (int64_t j = 0; j < C; ++j) {
      double sum = 0;
      for (int64_t r = 0; r < R; ++r) sum += static_cast<double>(o.values[3][r * C + j]);
      EXPECT_NEAR(sum, 1.0, 1e-5) << "column " << j;
    }
  });
}

TEST(Activations, BadInputNamesOpAndShapes) {
  auto err = [](auto fn, const Shape& s) {
    auto e = compile_fn(testing::cpu(), fn, s);
    return e.ok() ? std::string("(compiled)") : e.status().message();
  };
  EXPECT_NE(err([](Tensor x) { return softmax(x, "q"); }, Shape(DType::kF32, {2, 3}, {"a", "b"})).find("'q'"),
            std::string::npos);
  EXPECT_NE(err([](Tensor x) { return gelu(x); }, Shape(DType::kI32, {4})).find("gelu(i32[4])"), std::string::npos);
  EXPECT_NE(err([](Tensor x) { return swiglu(x, 0); }, Shape(DType::kF32, {5})).find("swiglu(f32[5]): axis 0 has odd size 5"),
            std::string::npos);
}

}  // namespace
}  // namespace radix
