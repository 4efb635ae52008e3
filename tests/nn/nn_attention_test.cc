// nn::attention (grouped-query heads, masks) and nn::cached_attention against
// a naive loop written from the definition (the chunked, flash-decoding path
// of cached_attention too, at many cache positions). Tolerance: f32 outputs within
// 2e-5 relative + 2e-6 absolute (the polynomial exp is within 5 ulp, and the
// softmax and value sums reassociate); f16 within 4e-3 (two f16 roundings of
// the inputs dominate).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <regex>

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

// ---- The chunked (flash-decoding) path of cached_attention ----
// One configuration: shapes, options (chunk > 0 forces the chunked path, < 0
// the full one) and the positions to run at (pos + S <= MAXT).
struct ChunkCase {
  int64_t B = 1, S = 1, HQ = 4, HKV = 2, D = 16, MAXT = 32, chunk = 8;
  bool causal = true;
  int64_t window = 0;
  DType dtype = DType::kF32;
  nn::CacheLayout layout = nn::CacheLayout::kHeadMajor;
  std::vector<int64_t> positions;
  DType pos_dtype = DType::kI32;
  std::optional<DType> cache_dtype;  // unset: dtype
};

// Compiles cached_attention for `c` once and runs it at each position on a
// cache pre-filled with random values (entries at and past pos + S are
// garbage that must not be read), against naive_attention in double over the
// cache as written; also checks the written key cache exactly.
void check_cached(const ChunkCase& c, double rtol, double atol) {
  const bool hm = c.layout == nn::CacheLayout::kHeadMajor;
  nn::CachedAttentionOptions opts;
  opts.layout = c.layout;
  opts.chunk = c.chunk;
  opts.causal = c.causal;
  opts.window = c.window;
  const Shape qs(c.dtype, {c.B, c.S, c.HQ, c.D}), ks(c.dtype, {c.B, c.S, c.HKV, c.D});
  const DType cd = c.cache_dtype.value_or(c.dtype);
  const Shape cs = hm ? Shape(cd, {c.B, c.HKV, c.MAXT, c.D}) : Shape(cd, {c.B, c.MAXT, c.HKV, c.D});
  auto exe = compile_fn(cpu(), g_opts, [opts](Tensor q, Tensor k, Tensor v, Tensor ck, Tensor cv, Tensor p) {
    nn::CachedAttention<> r = nn::cached_attention(q, k, v, ck, cv, p, opts);
    return std::vector<Tensor>{r.out, r.cache_k};
  }, qs, ks, ks, cs, cs, Shape(c.pos_dtype));
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  // Index of (b, token j, head h, d) in a cache of this layout.
  auto at = [&](int64_t b, int64_t j, int64_t h, int64_t d) {
    return static_cast<size_t>(hm ? ((b * c.HKV + h) * c.MAXT + j) * c.D + d : ((b * c.MAXT + j) * c.HKV + h) * c.D + d);
  };
  for (int64_t pos : c.positions) {
    SCOPED_TRACE("pos " + std::to_string(pos));
    const uint32_t seed = static_cast<uint32_t>(100 + pos);
    Vals q = quantize(c.dtype, rand_vals(static_cast<size_t>(qs.count()), -2, 2, seed));
    Vals k = quantize(c.dtype, rand_vals(static_cast<size_t>(ks.count()), -2, 2, seed + 1000));
    Vals v = quantize(c.dtype, rand_vals(static_cast<size_t>(ks.count()), -1, 1, seed + 2000));
    Vals ck = quantize(cd, rand_vals(static_cast<size_t>(cs.count()), -2, 2, seed + 3000));
    Vals cv = quantize(cd, rand_vals(static_cast<size_t>(cs.count()), -1, 1, seed + 4000));
    std::vector<Buffer> out = must(exe->call(to_device(qs, q), to_device(ks, k), to_device(ks, v), to_device(cs, ck),
                                             to_device(cs, cv), to_device(Shape(c.pos_dtype), {static_cast<Val>(pos)})));
    // The caches as written (the new entries rounded to the cache's dtype),
    // token-major for the reference.
    const Vals k_in_cache = quantize(cd, k), v_in_cache = quantize(cd, v);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < c.S; ++i)
        for (int64_t h = 0; h < c.HKV; ++h)
          for (int64_t d = 0; d < c.D; ++d) {
            const size_t src = static_cast<size_t>(((b * c.S + i) * c.HKV + h) * c.D + d);
            ck[at(b, pos + i, h, d)] = k_in_cache[src];
            cv[at(b, pos + i, h, d)] = v_in_cache[src];
          }
    Vals kt(ck.size()), vt(cv.size());
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.MAXT; ++j)
        for (int64_t h = 0; h < c.HKV; ++h)
          for (int64_t d = 0; d < c.D; ++d) {
            const size_t tm = static_cast<size_t>(((b * c.MAXT + j) * c.HKV + h) * c.D + d);
            kt[tm] = ck[at(b, j, h, d)];
            vt[tm] = cv[at(b, j, h, d)];
          }
    const Vals want = naive_attention(q, kt, vt, c.B, c.S, c.MAXT, c.HQ, c.HKV, c.D, [&](auto, int64_t i, int64_t j) {
      if (j >= pos + c.S) return false;
      if (!c.causal) return true;
      return j <= pos + i && (c.window == 0 || j > pos + i - c.window);
    });
    EXPECT_TRUE(close(to_host(out[0]), want, c.dtype, rtol, atol));
    EXPECT_TRUE(close(to_host(out[1]), ck, cd));
  }
}

// f32: 2e-5 relative + 2e-6 absolute, as above (the online softmax rescales
// by exp(m_old - m_new): a few more roundings, same order). bf16 inputs
// (rounded before the reference sees them) compute in f32 and round the
// output once: within 2^-8 relative (twice bf16's half-ulp) + 1e-5.
constexpr double kF32Rtol = 2e-5, kF32Atol = 2e-6, kBf16Rtol = 0x1p-8, kBf16Atol = 1e-5;

TEST(NnAttention, ChunkedDecodeStepMatchesNaiveLoop) {
  // One token; chunks of 8 over 32 entries: pos 0, in the middle of a chunk,
  // the last of a chunk, at a chunk boundary, and the last position.
  on_every_schedule([&] {
    check_cached({.S = 1, .positions = {0, 5, 7, 8, 13, 31}}, kF32Rtol, kF32Atol);
  });
  // Query heads = kv heads (an i64 position); batch 2 with 3 query heads per kv head.
  check_cached({.S = 1, .HQ = 2, .HKV = 2, .positions = {0, 9, 31}, .pos_dtype = DType::kI64}, kF32Rtol, kF32Atol);
  check_cached({.B = 2, .S = 1, .HQ = 6, .HKV = 2, .positions = {0, 16, 30}}, kF32Rtol, kF32Atol);
}

TEST(NnAttention, ChunkedPrefillMatchesNaiveLoop) {
  // Several new tokens: within one chunk, across a boundary, ending at a
  // boundary, ending at max_t; and 12 tokens spanning two or three chunks.
  on_every_schedule([&] {
    check_cached({.S = 3, .positions = {0, 5, 6, 8, 29}}, kF32Rtol, kF32Atol);
  });
  check_cached({.S = 12, .positions = {0, 3, 20}}, kF32Rtol, kF32Atol);
  // A chunk as long as the cache (one step), and longer (cut to max_t).
  check_cached({.S = 3, .MAXT = 8, .chunk = 8, .positions = {0, 5}}, kF32Rtol, kF32Atol);
  check_cached({.S = 2, .MAXT = 6, .chunk = 16, .positions = {0, 3, 4}}, kF32Rtol, kF32Atol);
}

TEST(NnAttention, ChunkedWithMaxTNotAMultipleOfTheChunk) {
  // 30 entries in chunks of 8: the fourth chunk [24, 32) is moved back to
  // [22, 30), and keys 22, 23 (seen by the third) are masked in it.
  check_cached({.S = 1, .MAXT = 30, .positions = {0, 21, 23, 24, 26, 29}}, kF32Rtol, kF32Atol);
  check_cached({.S = 3, .MAXT = 30, .positions = {0, 22, 23, 27}}, kF32Rtol, kF32Atol);
  check_cached({.S = 7, .MAXT = 30, .chunk = 7, .positions = {0, 20, 23}}, kF32Rtol, kF32Atol);
}

TEST(NnAttention, ChunkedNonCausalAndSlidingWindow) {
  // Not causal: every new token sees [0, pos + s).
  check_cached({.S = 3, .causal = false, .positions = {0, 6, 14, 29}}, kF32Rtol, kF32Atol);
  // A window of 3: the loop starts at the chunk of query 0's oldest key.
  check_cached({.S = 1, .window = 3, .positions = {0, 1, 2, 9, 10, 20, 31}}, kF32Rtol, kF32Atol);
  check_cached({.S = 4, .window = 5, .positions = {0, 6, 13, 28}}, kF32Rtol, kF32Atol);
  // A window of 2 over 12 new tokens: late queries see nothing of the first
  // chunk, whose step must leave their sums at zero (not NaN).
  check_cached({.S = 12, .window = 2, .positions = {0, 7, 20}}, kF32Rtol, kF32Atol);
  // A window wider than the cache is plain causal.
  check_cached({.S = 2, .window = 100, .positions = {0, 17, 30}}, kF32Rtol, kF32Atol);
}

TEST(NnAttention, ChunkedBf16Inputs) {
  check_cached({.S = 1, .dtype = DType::kBF16, .positions = {0, 8, 19, 31}}, kBf16Rtol, kBf16Atol);
  check_cached({.S = 5, .MAXT = 30, .dtype = DType::kBF16, .positions = {0, 6, 25}}, kBf16Rtol, kBf16Atol);
  check_cached({.S = 2, .window = 4, .dtype = DType::kBF16, .positions = {3, 30}}, kBf16Rtol, kBf16Atol);
}

// A bf16 / f16 cache under f32 q, k, v: the new entries are rounded to the
// cache's dtype as they are written (the written cache is checked exactly),
// and attention over it is computed in f32 with the chunks widened inside
// the products: the f32 tolerance against the reference over the rounded
// cache. Chunked decode and prefill, both layouts, and the full path.
TEST(NnAttention, HalfCacheUnderF32Activations) {
  for (DType cd : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(dtype_name(cd));
    on_every_schedule([&] {
      check_cached({.S = 1, .positions = {0, 7, 8, 31}, .cache_dtype = cd}, kF32Rtol, kF32Atol);
    });
    check_cached({.S = 5, .MAXT = 30, .positions = {0, 6, 25}, .cache_dtype = cd}, kF32Rtol, kF32Atol);
    check_cached({.S = 1, .HQ = 6, .HKV = 2, .layout = nn::CacheLayout::kTokenMajor, .positions = {0, 19},
                  .cache_dtype = cd},
                 kF32Rtol, kF32Atol);
    check_cached({.S = 2, .chunk = -1, .positions = {0, 13, 30}, .cache_dtype = cd}, kF32Rtol, kF32Atol);
    // stories260K's layer shape, the automatic chunk.
    check_cached({.S = 1, .HQ = 8, .HKV = 4, .D = 8, .MAXT = 512, .chunk = 0, .positions = {0, 1, 2, 3},
                  .cache_dtype = cd},
                 kF32Rtol, kF32Atol);
  }
}

TEST(NnAttention, ChunkedPrefillLargeEnoughForThreads) {
  // The automatic choice for a 128-token prefill: chunks of 128, whose
  // [4 heads, 128, 128] scores are large enough to be split over threads
  // (run() compiles for every core).
  check_cached({.S = 128, .HQ = 4, .HKV = 4, .D = 64, .MAXT = 256, .chunk = 0, .positions = {0, 100, 128}}, kF32Rtol,
               kF32Atol);
}

// A decode step over a head-major cache in chunks of 64 keys of 64 values
// (16 KiB per head and chunk, stories110M's head shape): both products of
// each chunk, q·kᵀ and the probabilities times V, prefetch the next head's
// rows of the chunk (radix-prefetch-next-batch: the prefetched buffer is the
// chunk's [heads, 64, 64] view, head stride 256 * 64); a 128-token prefill,
// which reads each key row once per tile of queries, does not. Results
// against the naive loop at chunk edges, on one and two threads.
TEST(NnAttention, ChunkedDecodePrefetchesTheNextHeadsRows) {
  const std::regex next_head(R"(memref\.prefetch [^\n]*x64xf32, strided<\[16384, 64, 1\])");
  const CompileFnOptions saved = g_opts;
  for (int threads : {1, 2})
    for (int64_t S : {1, 128}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " S " + std::to_string(S));
      const std::filesystem::path dir =
          std::filesystem::temp_directory_path() / ("radix-nexthead-" + std::to_string(::getpid()));
      std::filesystem::remove_all(dir);
      g_opts.compile.codegen.cpu.threads = threads;
      g_opts.compile.diagnostics.dump = {"bufferize"};
      g_opts.compile.diagnostics.dump_dir = dir.string();
      check_cached({.S = S, .HQ = 4, .HKV = 4, .D = 64, .MAXT = 256, .chunk = 0,
                    .positions = S == 1 ? std::vector<int64_t>{0, 63, 64, 200, 255} : std::vector<int64_t>{0, 128}},
                   kF32Rtol, kF32Atol);
      g_opts = saved;
      const std::string ir = testing::stage_dump(dir, "bufferize.mlir");
      std::filesystem::remove_all(dir);
      ASSERT_FALSE(ir.empty());
      const auto n = std::distance(std::sregex_iterator(ir.begin(), ir.end(), next_head), std::sregex_iterator());
      // Keys and values, two cache lines per 32-value read each.
      if (S == 1)
        EXPECT_GE(n, 4) << ir;
      else
        EXPECT_EQ(n, 0) << ir;
    }
}

TEST(NnAttention, ChunkedTokenMajorAndFullPathAgree) {
  // The chunked path on a token-major cache; the full path (chunk < 0) and
  // the automatic choice on both layouts, through the same reference.
  check_cached({.S = 3, .layout = nn::CacheLayout::kTokenMajor, .positions = {0, 6, 29}}, kF32Rtol, kF32Atol);
  check_cached({.S = 3, .window = 4, .layout = nn::CacheLayout::kTokenMajor, .positions = {0, 6, 29}}, kF32Rtol,
               kF32Atol);
  for (int64_t chunk : {-1, 0})
    for (nn::CacheLayout layout : {nn::CacheLayout::kHeadMajor, nn::CacheLayout::kTokenMajor}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk));
      check_cached({.S = 2, .MAXT = 300, .chunk = chunk, .layout = layout, .positions = {0, 130, 298}}, kF32Rtol,
                   kF32Atol);
    }
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
