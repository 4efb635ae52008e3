// nn::greedy / nn::sample / nn::filter_logits: greedy is argmax, top-k = 1 is
// greedy, the same seed gives the same tokens, and top-p keeps exactly the
// smallest most-likely set with probability >= p (checked on the filtered
// logits and over many draws). Exact checks (integers and -inf patterns).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

Vals state_of(uint64_t seed) {
  auto s = rng_state_from_seed(seed);
  return Vals(s.begin(), s.end());
}

TEST(NnSampler, GreedyAndTopKOneAreArgmax) {
  on_every_schedule([&] {
    const int64_t N = 6, V = 11;
    const Shape ls(DType::kF32, {N, V}, {"b", "v"});
    Vals l = quantize(DType::kF32, rand_vals(N * V, -3, 3, 71));
    Vals want;
    for (int64_t r = 0; r < N; ++r)
      want.push_back(std::max_element(l.begin() + r * V, l.begin() + (r + 1) * V) - (l.begin() + r * V));
    for (uint64_t seed : {1u, 2u, 3u}) {
      Outs o = run([](Tensor st, Tensor l) {
        auto topk1 = nn::sample(st, l, {.temperature = 0.7, .top_k = 1}, "v");
        auto t0 = nn::sample(st, l, {.temperature = 0});
        return std::vector<Tensor>{nn::greedy(l, "v"), topk1.samples, t0.samples, t0.state};
      }, {state_of(seed), l}, rng_state_shape(), ls);
      EXPECT_EQ(o.shapes[0], Shape(DType::kI32, {N}, {"b"}));
      EXPECT_TRUE(close(o.values[0], want, DType::kI32));
      EXPECT_TRUE(close(o.values[1], want, DType::kI32));
      EXPECT_TRUE(close(o.values[2], want, DType::kI32));
      EXPECT_TRUE(close(o.values[3], state_of(seed), DType::kU32));  // greedy leaves the state alone
    }
  });
}

TEST(NnSampler, SameSeedSameTokensAndStateAdvances) {
  on_every_schedule([&] {
    const Shape ls(DType::kF32, {64, 16});
    Vals l = quantize(DType::kF32, rand_vals(64 * 16, -2, 2, 72));
    auto draw = [&](uint64_t seed) {
      return run([](Tensor st, Tensor l) {
        auto r = nn::sample(st, l, {.temperature = 1.3, .top_k = 8, .top_p = 0.9});
        auto r2 = nn::sample(r.state, l, {.temperature = 1.3, .top_k = 8, .top_p = 0.9});
        return std::vector<Tensor>{r.samples, r2.samples, r2.state};
      }, {state_of(seed), l}, rng_state_shape(), ls);
    };
    Outs a = draw(5), b = draw(5), c = draw(6);
    EXPECT_EQ(a.values[0], b.values[0]);
    EXPECT_EQ(a.values[1], b.values[1]);
    EXPECT_NE(a.values[0], a.values[1]);  // the threaded state gives a new draw
    EXPECT_NE(a.values[0], c.values[0]);
    EXPECT_NE(a.values[2], state_of(5));
  });
}

TEST(NnSampler, TopPKeepsTheSmallestNucleus) {
  on_every_schedule([&] {
    // Probabilities (after softmax) 0.4, 0.25, 0.15, 0.1, 0.06, 0.04, in a shuffled order.
    const std::vector<double> probs = {0.1, 0.4, 0.04, 0.25, 0.06, 0.15};
    const int64_t V = 6, N = 4000;
    Vals row;
    for (double p : probs) row.push_back(static_cast<float>(std::log(p)));
    struct Case { double p; std::set<int> nucleus; };
    // Sorted: 0.4 (1), 0.25 (3), 0.15 (5), 0.1 (0), 0.06 (4), 0.04 (2).
    const std::vector<Case> cases = {{0.3, {1}}, {0.6, {1, 3}}, {0.75, {1, 3, 5}}, {0.85, {1, 3, 5, 0}}, {0.95, {1, 3, 5, 0, 4}}};
    // (No p on a boundary such as 0.8 = 0.4 + 0.25 + 0.15: f32 sums may land either side.)
    for (const Case& c : cases) {
      SCOPED_TRACE("top_p " + std::to_string(c.p));
      Vals l;
      for (int64_t r = 0; r < N; ++r) l.insert(l.end(), row.begin(), row.end());
      const double p = c.p;
      Outs o = run([p](Tensor st, Tensor l) {
        auto r = nn::sample(st, l, {.top_p = p});
        return std::vector<Tensor>{nn::filter_logits(slice(l, 0, 0, 1), {.top_p = p}), r.samples};
      }, {state_of(9), l}, rng_state_shape(), Shape(DType::kF32, {N, V}));
      for (int64_t j = 0; j < V; ++j) {
        const bool kept = c.nucleus.count(static_cast<int>(j)) > 0;
        const double f = static_cast<double>(o.values[0][static_cast<size_t>(j)]);
        EXPECT_EQ(kept, !std::isinf(f)) << "token " << j;
        if (kept) EXPECT_FLOAT_EQ(f, static_cast<float>(row[static_cast<size_t>(j)]));
      }
      std::vector<int> hist(V, 0);
      for (Val t : o.values[1]) hist[static_cast<size_t>(t)]++;
      for (int64_t j = 0; j < V; ++j) {
        if (c.nucleus.count(static_cast<int>(j))) EXPECT_GT(hist[j], 0) << "token " << j << " never drawn";
        else EXPECT_EQ(hist[j], 0) << "token " << j << " outside the nucleus was drawn";
      }
    }
  });
}

TEST(NnSampler, TopKKeepsTheKLargest) {
  on_every_schedule([&] {
    const int64_t N = 5, V = 9, K = 3;
    const Shape ls(DType::kF32, {N, V});
    Vals l = quantize(DType::kF32, rand_vals(N * V, -3, 3, 73));
    Outs o = run([](Tensor l) { return nn::filter_logits(l, {.temperature = 2.0, .top_k = K}); }, {l}, ls);
    for (int64_t r = 0; r < N; ++r) {
      std::vector<double> row(l.begin() + r * V, l.begin() + (r + 1) * V);
      std::vector<double> sorted = row;
      std::sort(sorted.rbegin(), sorted.rend());
      for (int64_t j = 0; j < V; ++j) {
        const double got = static_cast<double>(o.values[0][static_cast<size_t>(r * V + j)]);
        if (row[j] >= sorted[K - 1]) EXPECT_FLOAT_EQ(got, static_cast<float>(row[j] / 2.0)) << r << "," << j;
        else EXPECT_TRUE(std::isinf(got) && got < 0) << r << "," << j;
      }
    }
  });
}

TEST(NnSampler, BadInputNamesLayerAndShapes) {
  auto e = compile_fn(testing::cpu(), [](Tensor st, Tensor l) { return nn::sample(st, l).samples; },
                      Shape(DType::kU32, {3}), Shape(DType::kF32, {2, 5}));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("nn::sample(f32[2,5], u32[3]): state must be u32[4]"), std::string::npos)
      << e.status().message();
}

}  // namespace
}  // namespace radix
