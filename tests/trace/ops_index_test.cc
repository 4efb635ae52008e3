// Indexing ops against references written from their definitions (exact), on
// every schedule, including out-of-range positions (clamped as documented).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

TEST(IndexOps, DynamicSliceAndUpdateClampLikeStableHlo) {
  on_every_schedule([] {
    // A KV-cache step: cache [s=10, d=16], write a [1, 16] row at pos, read a window.
    const Shape cache(DType::kF32, {10, 16}, {"s", "d"}), row(DType::kF32, {1, 16}, {"s", "d"});
    for (int p : {0, 3, 9, 12, -4})
    for (DType pd : {DType::kI32, DType::kI64, DType::kU64, DType::kI8}) {  // every width of start
      if (p < 0 && pd == DType::kU64) continue;
      const Shape pos(pd);
      SCOPED_TRACE("pos " + std::to_string(p) + " " + std::string(dtype_name(pd)));
      Vals c = iota_vals(160), r;
      for (int j = 0; j < 16; ++j) r.push_back(1000 + j);
      Outs o = run([](Tensor kv, Tensor x, Tensor at) {
        Tensor updated = dynamic_update_slice(kv, x, {{"s", at}});
        return std::vector<Tensor>{updated, dynamic_slice(updated, {{"s", at, 4}, {"d", at, 8}})};
      }, {c, r, {static_cast<Val>(p)}}, cache, row, pos);
      const int64_t at = clampi(p, 0, 9);
      Vals w = c;
      for (int j = 0; j < 16; ++j) w[static_cast<size_t>(at * 16 + j)] = r[static_cast<size_t>(j)];
      EXPECT_TRUE(close(o.values[0], w, DType::kF32));
      const int64_t s0 = clampi(p, 0, 6), d0 = clampi(p, 0, 8);
      Vals ws;
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 8; ++j) ws.push_back(w[static_cast<size_t>((s0 + i) * 16 + d0 + j)]);
      EXPECT_EQ(o.shapes[1], Shape(DType::kF32, {4, 8}, {"s", "d"}));
      EXPECT_TRUE(close(o.values[1], ws, DType::kF32));
    }
  });
}

TEST(IndexOps, TakeEmbeddingAndTakeAlongAxis) {
  on_every_schedule([] {
    const std::vector<int64_t> dims = {3, 7, 5};
    const Shape x(DType::kF32, {3, 7, 5}, {"a", "v", "c"}), ids(DType::kI32, {2, 3}, {"b", "s"});
    const Vals id_vals = {6, 0, 3, -2, 9, 1};  // -2 and 9 are clamped to 0 and 6
    Outs o = run([](Tensor t, Tensor i) {
      Tensor table = reshape(slice(t, "a", 0, 1), {7, 5});
      return std::vector<Tensor>{take(t, i, "v"), embedding(table.with_tags({"v", "d"}), i), take(t, i, "c")};
    }, {iota_vals(105), id_vals}, x, ids);
    auto id_at = [&](int64_t k, int64_t n) { return clampi(static_cast<int64_t>(id_vals[static_cast<size_t>(k)]), 0, n - 1); };
    Vals w0, w1, w2;
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t k = 0; k < 6; ++k)
        for (int64_t c = 0; c < 5; ++c) w0.push_back(a * 35 + id_at(k, 7) * 5 + c);
    for (int64_t k = 0; k < 6; ++k)
      for (int64_t c = 0; c < 5; ++c) w1.push_back(id_at(k, 7) * 5 + c);
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t v = 0; v < 7; ++v)
        for (int64_t k = 0; k < 6; ++k) w2.push_back(a * 35 + v * 5 + id_at(k, 5));
    EXPECT_EQ(o.shapes[0], Shape(DType::kF32, {3, 2, 3, 5}, {"a", "b", "s", "c"}));
    EXPECT_TRUE(close(o.values[0], w0, DType::kF32));
    EXPECT_EQ(o.shapes[1], Shape(DType::kF32, {2, 3, 5}, {"b", "s", "d"}));
    EXPECT_TRUE(close(o.values[1], w1, DType::kF32));
    EXPECT_TRUE(close(o.values[2], w2, DType::kF32));

    const Shape xs(DType::kI32, {4, 6}), is(DType::kI64, {4, 2});
    const Vals iv = {5, 0, 1, 1, -3, 2, 7, 4};
    Outs p = run([](Tensor t, Tensor i) { return take_along_axis(t, i, 1); }, {iota_vals(24), iv}, xs, is);
    Vals wp;
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t k = 0; k < 2; ++k) wp.push_back(r * 6 + clampi(static_cast<int64_t>(iv[static_cast<size_t>(r * 2 + k)]), 0, 5));
    EXPECT_TRUE(close(p.values[0], wp, DType::kI32));
  });
}

TEST(IndexOps, LargeEmbeddingLookup) {
  // 32000 x 64 table, ids spanning the vocabulary: rows copied exactly.
  const Shape table(DType::kF32, {32000, 64}, {"v", "d"}), ids(DType::kI32, {1, 7}, {"b", "s"});
  Vals t;
  for (int64_t i = 0; i < 32000 * 64; ++i) t.push_back(static_cast<Val>(i % 1000003));
  const Vals id_vals = {0, 31999, 17, 20000, 5, 31998, 1};
  Outs o = run([](Tensor tb, Tensor i) { return embedding(tb, i); }, {t, id_vals}, table, ids);
  Vals w;
  for (Val id : id_vals)
    for (int64_t j = 0; j < 64; ++j) w.push_back(t[static_cast<size_t>(static_cast<int64_t>(id) * 64 + j)]);
  EXPECT_TRUE(close(o.values[0], w, DType::kF32));
}

TEST(IndexOps, ShapeInferenceAndErrors) {
  const Shape x(DType::kF32, {4, 6}, {"r", "c"}), ids(DType::kI32, {2}, {"k"});
  EXPECT_EQ(infer::take(x, ids, "c"), Shape(DType::kF32, {4, 2}, {"r", "k"}));
  EXPECT_EQ(infer::take_along_axis(x, Shape(DType::kI32, {4, 9}), "c"), Shape(DType::kF32, {4, 9}, {"r", "c"}));
  auto throws = [](auto&& f, std::initializer_list<const char*> needles) {
    try {
      f();
      ADD_FAILURE() << "no TraceError";
    } catch (const TraceError& e) {
      for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  };
  throws([&] { infer::take(x, Shape(DType::kF32, {2}), 0); }, {"take(f32[r=4,c=6], f32[2])", "integer dtype"});
  throws([&] { infer::take(x, ids, "q"); }, {"take(", "'q'"});
  throws([&] { infer::take_along_axis(x, Shape(DType::kI32, {3, 2}), "c"); }, {"take_along_axis(f32[r=4,c=6], i32[3,2])", "sizes 4 and 3"});
  throws([&] { infer::dynamic_slice(x, {{"r", 5}}, {Shape(DType::kI32)}); }, {"dynamic_slice(f32[r=4,c=6], i32[])", "window size 5"});
  throws([&] { infer::dynamic_slice(x, {{"r", 1}}, {Shape(DType::kI32, {1})}); }, {"must be rank 0"});
  auto bad = compile_fn(testing::cpu(), [](Tensor a, Tensor u) { return dynamic_update_slice(a, u, {}); }, x,
                        Shape(DType::kF32, {5, 6}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("dynamic_update_slice(f32[r=4,c=6], f32[5,6]): the update is larger"),
            std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace radix
