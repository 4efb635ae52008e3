// nn::attention (grouped-query heads, masks) and nn::cached_attention against
// a naive loop written from the definition. Tolerance: f32 outputs within
// 2e-5 relative + 2e-6 absolute (the polynomial exp is within 5 ulp, and the
// softmax and value sums reassociate); f16 within 4e-3 (two f16 roundings of
// the inputs dominate).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

// out[b, i, h, e] = sum_j softmax_j(scale * q[b,i,h,:] . k[b,j,h/g,:] | mask) v[b,j,h/g,e]
Vals naive_attention(const Vals& q, const Vals& k, const Vals& v, int64_t B, int64_t S, int64_t T, int64_t HQ,
                     int64_t HKV, int64_t D, const std::function<bool(int64_t b, int64_t i, int64_t j)>& visible) {
  const int64_t G = HQ / HKV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Vals out(static_cast<size_t>(B * S * HQ * D));
  auto at = [](const Vals& x, int64_t i) { return static_cast<double>(x[static_cast<size_t>(i)]); };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t h = 0; h < HQ; ++h) {
        const int64_t kh = h / G;
        std::vector<double> sc(static_cast<size_t>(T), -INFINITY);
        double m = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          if (!visible(b, i, j)) continue;
          double dotp = 0;
          for (int64_t d = 0; d < D; ++d)
            dotp += at(q, ((b * S + i) * HQ + h) * D + d) * at(k, ((b * T + j) * HKV + kh) * D + d);
          sc[static_cast<size_t>(j)] = dotp * scale;
          m = std::max(m, dotp * scale);
        }
        double sum = 0;
        for (double& s : sc) sum += (s = std::exp(s - m));
        for (int64_t e = 0; e < D; ++e) {
          double o = 0;
          for (int64_t j = 0; j < T; ++j) o += sc[static_cast<size_t>(j)] / sum * at(v, ((b * T + j) * HKV + kh) * D + e);
          out[static_cast<size_t>(((b * S + i) * HQ + h) * D + e)] = o;
        }
      }
  return out;
}

TEST(NnAttention, GroupedQueryMatchesNaiveLoop) {
  on_every_schedule([&] {
    const int64_t B = 2, S = 3, T = 5, HQ = 4, HKV = 2, D = 8;
    const Shape qs(DType::kF32, {B, S, HQ, D}, {"b", "s", "h", "d"}), ks(DType::kF32, {B, T, HKV, D}, {"b", "t", "h", "d"});
    Vals q = quantize(DType::kF32, rand_vals(static_cast<size_t>(qs.count()), -1, 1, 1));
    Vals k = quantize(DType::kF32, rand_vals(static_cast<size_t>(ks.count()), -1, 1, 2));
    Vals v = quantize(DType::kF32, rand_vals(static_cast<size_t>(ks.count()), -1, 1, 3));
    Outs o = run([](Tensor q, Tensor k, Tensor v) {
      // Causal with the queries at the last S positions of T (offset T - S).
      return std::vector<Tensor>{nn::attention(q, k, v),
                                 nn::attention(q, k, v, {.mask = nn::causal_mask(S, T, T - S)}),
                                 nn::attention(q, k, v, {.mask = nn::sliding_window_mask(S, T, 2, T - S)})};
    }, {q, k, v}, qs, ks, ks);
    EXPECT_EQ(o.shapes[0], qs);
    EXPECT_TRUE(close(o.values[0], naive_attention(q, k, v, B, S, T, HQ, HKV, D, [](auto, auto, auto) { return true; }),
                      DType::kF32, 2e-5, 2e-6));
    EXPECT_TRUE(close(o.values[1],
                      naive_attention(q, k, v, B, S, T, HQ, HKV, D, [](auto, int64_t i, int64_t j) { return j <= i + T - S; }),
                      DType::kF32, 2e-5, 2e-6));
    EXPECT_TRUE(close(o.values[2], naive_attention(q, k, v, B, S, T, HQ, HKV, D, [](auto, int64_t i, int64_t j) {
                        return j <= i + T - S && j > i + T - S - 2;
                      }), DType::kF32, 2e-5, 2e-6));
  });
}

TEST(NnAttention, HalfInputsComputeInF32) {
  on_every_schedule([&] {
    const int64_t B = 1, S = 4, HQ = 2, HKV = 1, D = 16;
    const Shape qs(DType::kF16, {B, S, HQ, D}), ks(DType::kF16, {B, S, HKV, D});
    Vals q = quantize(DType::kF16, rand_vals(static_cast<size_t>(qs.count()), -2, 2, 4));
    Vals k = quantize(DType::kF16, rand_vals(static_cast<size_t>(ks.count()), -2, 2, 5));
    Vals v = quantize(DType::kF16, rand_vals(static_cast<size_t>(ks.count()), -2, 2, 6));
    Outs o = run([](Tensor q, Tensor k, Tensor v) {
      return nn::attention(q, k, v, {.mask = nn::causal_mask(S, S)});
    }, {q, k, v}, qs, ks, ks);
    EXPECT_EQ(o.shapes[0], qs);
    EXPECT_TRUE(close(o.values[0],
                      naive_attention(q, k, v, B, S, S, HQ, HKV, D, [](auto, int64_t i, int64_t j) { return j <= i; }),
                      DType::kF16, 4e-3, 4e-3));
  });
}

// Token rows [from, from + n) of a [1, T, H, D] host tensor.
Vals token_rows(const Vals& x, int64_t H, int64_t D, int64_t from, int64_t n) {
  return Vals(x.begin() + from * H * D, x.begin() + (from + n) * H * D);
}

// Feeds q / k / v ([1, 5, HQ or HKV, D] host tensors) through
// nn::cached_attention with `opts` into a zeroed cache of shape `cache`: a
// 3-token prefill, then two one-token steps. Returns every step's output, in
// order, and the key cache after the last step.
struct CacheSteps {
  Vals out, cache_k;
};
CacheSteps run_cache_steps(const Vals& q, const Vals& k, const Vals& v, const Shape& cache, int64_t HQ, int64_t HKV,
                           int64_t D, const nn::CachedAttentionOptions& opts) {
  const Shape pos(DType::kI32);
  auto step = [opts](Tensor q, Tensor k, Tensor v, Tensor ck, Tensor cv, Tensor p) {
    nn::CachedAttention<> r = nn::cached_attention(q, k, v, ck, cv, p, opts);
    return std::vector<Tensor>{r.out, r.cache_k, r.cache_v};
  };
  Vals ck(static_cast<size_t>(cache.count()), 0), cv = ck;
  CacheSteps got;
  int64_t at = 0;
  for (int64_t n : {3, 1, 1}) {
    SCOPED_TRACE("step at " + std::to_string(at));
    const Shape qs(DType::kF32, {1, n, HQ, D}), ks(DType::kF32, {1, n, HKV, D});
    Outs o = run(step,
                 {token_rows(q, HQ, D, at, n), token_rows(k, HKV, D, at, n), token_rows(v, HKV, D, at, n), ck, cv,
                  {static_cast<Val>(at)}},
                 qs, ks, ks, cache, cache, pos);
    got.out.insert(got.out.end(), o.values[0].begin(), o.values[0].end());
    ck = o.values[1], cv = o.values[2];
    at += n;
  }
  got.cache_k = ck;
  return got;
}

TEST(NnAttention, KvCacheDecodeEqualsFullAttention) {
  on_every_schedule([&] {
    // Prefill 3 tokens, then decode 2 one at a time, into a cache of 8 entries.
    const int64_t B = 1, TOTAL = 5, MAXT = 8, HQ = 4, HKV = 2, D = 8;
    const Shape qall(DType::kF32, {B, TOTAL, HQ, D}), kall(DType::kF32, {B, TOTAL, HKV, D});
    Vals q = quantize(DType::kF32, rand_vals(static_cast<size_t>(qall.count()), -1, 1, 7));
    Vals k = quantize(DType::kF32, rand_vals(static_cast<size_t>(kall.count()), -1, 1, 8));
    Vals v = quantize(DType::kF32, rand_vals(static_cast<size_t>(kall.count()), -1, 1, 9));
    Outs full = run([](Tensor q, Tensor k, Tensor v) {
      return nn::attention(q, k, v, {.mask = nn::causal_mask(TOTAL, TOTAL)});
    }, {q, k, v}, qall, kall, kall);
    EXPECT_TRUE(close(full.values[0],
                      naive_attention(q, k, v, B, TOTAL, TOTAL, HQ, HKV, D, [](auto, int64_t i, int64_t j) { return j <= i; }),
                      DType::kF32, 2e-5, 2e-6));

    const Shape cache(DType::kF32, {B, MAXT, HKV, D}, {"b", "t", "h", "d"});
    CacheSteps got = run_cache_steps(q, k, v, cache, HQ, HKV, D, {});
    // Written entries are the keys; the rest stay zero.
    Vals want_k = token_rows(k, HKV, D, 0, TOTAL);
    want_k.resize(static_cast<size_t>(cache.count()), 0);
    EXPECT_TRUE(close(got.cache_k, want_k, DType::kF32));
    EXPECT_TRUE(close(got.out, full.values[0], DType::kF32, 2e-5, 2e-6));
  });
}

// A head-major cache [b, hkv, max_t, d] gives the same outputs as full
// attention, step by step (prefill 3, then 2 decode steps), and holds each
// head's keys contiguously: entry [0, h, j, :] is key j of head h.
TEST(NnAttention, HeadMajorCacheDecodeEqualsFullAttention) {
  on_every_schedule([&] {
    const int64_t B = 1, TOTAL = 5, MAXT = 8, HQ = 4, HKV = 2, D = 8;
    const Shape qall(DType::kF32, {B, TOTAL, HQ, D}), kall(DType::kF32, {B, TOTAL, HKV, D});
    Vals q = quantize(DType::kF32, rand_vals(static_cast<size_t>(qall.count()), -1, 1, 17));
    Vals k = quantize(DType::kF32, rand_vals(static_cast<size_t>(kall.count()), -1, 1, 18));
    Vals v = quantize(DType::kF32, rand_vals(static_cast<size_t>(kall.count()), -1, 1, 19));
    Vals want = naive_attention(q, k, v, B, TOTAL, TOTAL, HQ, HKV, D, [](auto, int64_t i, int64_t j) { return j <= i; });
    const Shape cache(DType::kF32, {B, HKV, MAXT, D});
    nn::CachedAttentionOptions opts;
    opts.layout = nn::CacheLayout::kHeadMajor;
    CacheSteps got = run_cache_steps(q, k, v, cache, HQ, HKV, D, opts);
    Vals want_k(static_cast<size_t>(cache.count()), 0);
    for (int64_t j = 0; j < TOTAL; ++j)
      for (int64_t h = 0; h < HKV; ++h)
        for (int64_t d = 0; d < D; ++d)
          want_k[static_cast<size_t>((h * MAXT + j) * D + d)] = k[static_cast<size_t>((j * HKV + h) * D + d)];
    EXPECT_TRUE(close(got.cache_k, want_k, DType::kF32));
    EXPECT_TRUE(close(got.out, want, DType::kF32, 2e-5, 2e-6));
  });
  // A token-major cache under the head-major option is refused with the layout.
  auto r = compile_fn(testing::cpu(), [](Tensor q, Tensor k, Tensor v, Tensor ck, Tensor cv, Tensor p) {
    nn::CachedAttentionOptions o;
    o.layout = nn::CacheLayout::kHeadMajor;
    return nn::cached_attention(q, k, v, ck, cv, p, o).out;
  }, Shape(DType::kF32, {1, 1, 4, 8}), Shape(DType::kF32, {1, 1, 2, 8}), Shape(DType::kF32, {1, 1, 2, 8}),
     Shape(DType::kF32, {1, 8, 2, 8}), Shape(DType::kF32, {1, 8, 2, 8}), Shape(DType::kI32));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("[b, hkv, max_t, hd]"), std::string::npos) << r.status().message();
}

TEST(NnAttention, NonCausalCacheSeesOnlyWrittenEntries) {
  on_every_schedule([&] {
    const int64_t S = 2, MAXT = 6, H = 1, D = 4;
    const Shape qs(DType::kF32, {1, S, H, D}), cache(DType::kF32, {1, MAXT, H, D});
    Vals q = quantize(DType::kF32, rand_vals(S * D, -1, 1, 10)), k = quantize(DType::kF32, rand_vals(S * D, -1, 1, 11));
    Vals v = quantize(DType::kF32, rand_vals(S * D, -1, 1, 12));
    Vals ck = quantize(DType::kF32, rand_vals(MAXT * D, -1, 1, 13)), cv = quantize(DType::kF32, rand_vals(MAXT * D, -1, 1, 14));
    Outs o = run([](Tensor q, Tensor k, Tensor v, Tensor ck, Tensor cv, Tensor p) {
      return nn::cached_attention(q, k, v, ck, cv, p, {.causal = false}).out;
    }, {q, k, v, ck, cv, {2}}, qs, qs, qs, cache, cache, Shape(DType::kI64));
    // Keys 0..1 from the old cache, 2..3 new: positions [0, 4) visible to both queries.
    for (int64_t i = 0; i < S * D; ++i) ck[static_cast<size_t>(2 * D + i)] = k[static_cast<size_t>(i)], cv[static_cast<size_t>(2 * D + i)] = v[static_cast<size_t>(i)];
    EXPECT_TRUE(close(o.values[0], naive_attention(q, ck, cv, 1, S, MAXT, H, H, D, [](auto, auto, int64_t j) { return j < 4; }),
                      DType::kF32, 2e-5, 2e-6));
  });
}

TEST(NnAttention, SlidingWindowCacheStep) {
  on_every_schedule([&] {
    // 3 new tokens at pos 2 of a 6-entry cache, window 2: query i (position
    // 2 + i) sees keys 1 + i and 2 + i.
    const int64_t S = 3, MAXT = 6, HQ = 2, HKV = 1, D = 4;
    const Shape qs(DType::kF32, {1, S, HQ, D}), ks(DType::kF32, {1, S, HKV, D}), cache(DType::kF32, {1, MAXT, HKV, D});
    Vals q = quantize(DType::kF32, rand_vals(S * HQ * D, -1, 1, 15)), k = quantize(DType::kF32, rand_vals(S * D, -1, 1, 16));
    Vals v = quantize(DType::kF32, rand_vals(S * D, -1, 1, 17));
    Vals ck = quantize(DType::kF32, rand_vals(MAXT * D, -1, 1, 18)), cv = quantize(DType::kF32, rand_vals(MAXT * D, -1, 1, 19));
    Outs o = run([](Tensor q, Tensor k, Tensor v, Tensor ck, Tensor cv, Tensor p) {
      return nn::cached_attention(q, k, v, ck, cv, p, {.window = 2}).out;
    }, {q, k, v, ck, cv, {2}}, qs, ks, ks, cache, cache, Shape(DType::kI32));
    for (int64_t i = 0; i < S * D; ++i) ck[static_cast<size_t>(2 * D + i)] = k[static_cast<size_t>(i)], cv[static_cast<size_t>(2 * D + i)] = v[static_cast<size_t>(i)];
    EXPECT_TRUE(close(o.values[0], naive_attention(q, ck, cv, 1, S, MAXT, HQ, HKV, D, [](auto, int64_t i, int64_t j) {
                        return j <= 2 + i && j > i;
                      }), DType::kF32, 2e-5, 2e-6));
  });
}

TEST(NnAttention, BadInputNamesLayerAndShapes) {
  auto err = [](auto fn, const Shape& a, const Shape& b) {
    auto e = compile_fn(testing::cpu(), fn, a, b);
    return e.ok() ? std::string("(compiled)") : e.status().message();
  };
  const std::string m = err([](Tensor q, Tensor k) { return nn::attention(q, k, k); },
                            Shape(DType::kF32, {1, 2, 3, 4}), Shape(DType::kF32, {1, 2, 2, 4}));
  EXPECT_NE(m.find("nn::attention(f32[1,2,3,4], f32[1,2,2,4], f32[1,2,2,4])"), std::string::npos) << m;
  EXPECT_NE(m.find("multiple of hkv"), std::string::npos) << m;
  const std::string m2 = err([](Tensor q, Tensor k) { return nn::attention(q, k, k, {.mask = nn::causal_mask(3, 3)}); },
                             Shape(DType::kF32, {1, 2, 2, 4}), Shape(DType::kF32, {1, 2, 2, 4}));
  EXPECT_NE(m2.find("bool[s=3,t=3]"), std::string::npos) << m2;
}

}  // namespace
}  // namespace radix
