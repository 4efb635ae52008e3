// Layout ops against references written from their definitions with explicit
// index arithmetic, on every schedule (SSE / AVX2 / AVX-512 tilings and plain
// loops); shape inference and bad input on their own. All results are exact.
#include <gtest/gtest.h>

#include <functional>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

// x[i] = i, as a [d0, d1, d2] f32 tensor; element (a, b, c) is at a*d1*d2 + b*d2 + c.

// Reference gather: out element at multi-index o reads x at src(o) (or `fill` when src returns -1).
Vals ref(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& x_dims,
         const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& src, Val fill = 0) {
  Vals r;
  auto st = strides_of(x_dims);
  for (int64_t l = 0; l < count_of(out_dims); ++l) {
    auto s = src(unravel(l, out_dims));
    if (s.empty()) {
      r.push_back(fill);
      continue;
    }
    int64_t off = 0;
    for (size_t k = 0; k < s.size(); ++k) off += s[k] * st[k];
    r.push_back(static_cast<Val>(off));
  }
  return r;
}

TEST(LayoutOps, SliceSplitChunk) {
  on_every_schedule([] {
    const std::vector<int64_t> dims = {4, 5, 18};
    const Shape s = shape_of(DType::kF32, dims, {"a", "b", "c"});
    Outs o = run([](Tensor x) {
      std::vector<Tensor> r = {slice(x, {{"c", 2, 17, 3}, {"a", -3, -1}}), slice(x, "b", 1, 100),
                               slice(x, 2, 16, 10)};  // end before start: empty
      for (Tensor& t : split(x, "c", {5, 0, 13})) r.push_back(t);
      for (Tensor& t : chunk(x, "a", 2)) r.push_back(t);
      return r;
    }, {iota_vals(s.count())}, s);
    EXPECT_EQ(o.shapes[0], shape_of(DType::kF32, {2, 5, 5}, {"a", "b", "c"}));
    EXPECT_TRUE(close(o.values[0], ref({2, 5, 5}, dims, [](auto i) { return std::vector<int64_t>{i[0] + 1, i[1], 2 + 3 * i[2]}; }),
                      DType::kF32));
    EXPECT_TRUE(close(o.values[1], ref({4, 4, 18}, dims, [](auto i) { return std::vector<int64_t>{i[0], i[1] + 1, i[2]}; }),
                      DType::kF32));
    EXPECT_EQ(o.values[2].size(), 0u);
    EXPECT_TRUE(close(o.values[3], ref({4, 5, 5}, dims, [](auto i) { return i; }), DType::kF32));
    EXPECT_EQ(o.values[4].size(), 0u);
    EXPECT_TRUE(close(o.values[5], ref({4, 5, 13}, dims, [](auto i) { return std::vector<int64_t>{i[0], i[1], i[2] + 5}; }),
                      DType::kF32));
    EXPECT_TRUE(close(o.values[7], ref({2, 5, 18}, dims, [](auto i) { return std::vector<int64_t>{i[0] + 2, i[1], i[2]}; }),
                      DType::kF32));
  });
}

TEST(LayoutOps, ConcatenateStackPad) {
  on_every_schedule([] {
    const Shape a = shape_of(DType::kF32, {2, 3}), b = shape_of(DType::kF32, {2, 5});
    Vals va = iota_vals(6), vb;
    for (int i = 0; i < 10; ++i) vb.push_back(100 + i);
    Outs o = run([](Tensor x, Tensor y) {
      return std::vector<Tensor>{concatenate({x, y, x}, 1), stack({x, x * 2.0, x + 1.0}, 1, "k"),
                                 pad(y, {{0, 1, 2, 0}, {1, 0, 2, 1}}, -7.0)};
    }, {va, vb}, a, b);
    Vals wc;
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 3; ++c) wc.push_back(va[r * 3 + c]);
      for (int c = 0; c < 5; ++c) wc.push_back(vb[r * 5 + c]);
      for (int c = 0; c < 3; ++c) wc.push_back(va[r * 3 + c]);
    }
    EXPECT_EQ(o.shapes[0], shape_of(DType::kF32, {2, 11}));
    EXPECT_TRUE(close(o.values[0], wc, DType::kF32));
    Vals ws;
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < 3; ++k)
        for (int c = 0; c < 3; ++c) ws.push_back(k == 0 ? va[r * 3 + c] : k == 1 ? va[r * 3 + c] * 2 : va[r * 3 + c] + 1);
    EXPECT_EQ(o.shapes[1], shape_of(DType::kF32, {2, 3, 3}, {Tag(), "k", Tag()}));
    EXPECT_TRUE(close(o.values[1], ws, DType::kF32));
    // Axis 0: 1 row before, 2 after; axis 1: 1 interior between columns, 2 after.
    const int64_t R = 1 + 2 + 2, C = 5 + 4 + 2;
    Vals wp;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t sr = r - 1;
        const bool on = sr >= 0 && sr < 2 && c % 2 == 0 && c / 2 < 5;
        wp.push_back(on ? vb[static_cast<size_t>(sr * 5 + c / 2)] : -7);
      }
    EXPECT_EQ(o.shapes[2], shape_of(DType::kF32, {R, C}));
    EXPECT_TRUE(close(o.values[2], wp, DType::kF32));
  });
}

TEST(LayoutOps, ReverseRepeatTileRegroup) {
  on_every_schedule([] {
    const std::vector<int64_t> dims = {3, 4, 17};
    const Shape s = shape_of(DType::kI32, dims, {"a", "b", "c"});
    Outs o = run([](Tensor x) {
      return std::vector<Tensor>{reverse(x, {"a", "c"}), repeat(x, "b", 2), tile(x, "a", 3), flatten(x, "all"),
                                 merge_axes(x, "a", "b", "ab"), split_axis(x, "b", {2, -1}, {"b0", "b1"}),
                                 swap_axes(x, "a", "c")};
    }, {iota_vals(s.count())}, s);
    const DType d = DType::kI32;
    EXPECT_TRUE(close(o.values[0], ref(dims, dims, [](auto i) { return std::vector<int64_t>{2 - i[0], i[1], 16 - i[2]}; }), d));
    EXPECT_EQ(o.shapes[1], shape_of(d, {3, 8, 17}, {"a", "b", "c"}));
    EXPECT_TRUE(close(o.values[1], ref({3, 8, 17}, dims, [](auto i) { return std::vector<int64_t>{i[0], i[1] / 2, i[2]}; }), d));
    EXPECT_EQ(o.shapes[2], shape_of(d, {9, 4, 17}, {"a", "b", "c"}));
    EXPECT_TRUE(close(o.values[2], ref({9, 4, 17}, dims, [](auto i) { return std::vector<int64_t>{i[0] % 3, i[1], i[2]}; }), d));
    EXPECT_EQ(o.shapes[3], shape_of(d, {204}, {"all"}));
    EXPECT_TRUE(close(o.values[3], iota_vals(204), d));
    EXPECT_EQ(o.shapes[4], shape_of(d, {12, 17}, {"ab", "c"}));
    EXPECT_EQ(o.shapes[5], shape_of(d, {3, 2, 2, 17}, {"a", "b0", "b1", "c"}));
    EXPECT_TRUE(close(o.values[5], iota_vals(204), d));
    EXPECT_EQ(o.shapes[6], shape_of(d, {17, 4, 3}, {"c", "b", "a"}));
    EXPECT_TRUE(close(o.values[6], ref({17, 4, 3}, dims, [](auto i) { return std::vector<int64_t>{i[2], i[1], i[0]}; }), d));
  });
}

TEST(LayoutOps, ShapeInferenceAndErrors) {
  const Shape x(DType::kF32, {4, 6}, {"r", "c"});
  EXPECT_EQ(infer::slice(x, {{"c", -4, 100, 2}}), Shape(DType::kF32, {4, 2}, {"r", "c"}));
  EXPECT_EQ(infer::slice(x, {{"c", 5, 2}}), Shape(DType::kF32, {4, 0}, {"r", "c"}));
  EXPECT_EQ(infer::pad(x, {{"r", 1, 2, 3}}), Shape(DType::kF32, {4 + 3 + 9, 6}, {"r", "c"}));
  EXPECT_EQ(infer::concatenate({x, x.with_dim(1, 2)}, "c"), Shape(DType::kF32, {4, 8}, {"r", "c"}));
  auto throws = [](auto&& f, std::initializer_list<const char*> needles) {
    try {
      f();
      ADD_FAILURE() << "no TraceError";
    } catch (const TraceError& e) {
      for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  };
  throws([&] { infer::slice(x, {{"z", 0, 1}}); }, {"slice(f32[r=4,c=6])", "'z'"});
  throws([&] { infer::slice(x, {{"c", 0, 1, 0}}); }, {"slice(f32[r=4,c=6])", "stride 0"});
  throws([&] { infer::pad(x, {{0, -1, 0}}); }, {"pad(f32[r=4,c=6])", "negative"});
  throws([&] { infer::concatenate({x, Shape(DType::kF32, {3, 6}, {"r", "c"})}, "c"); },
         {"concatenate(f32[r=4,c=6], f32[r=3,c=6])", "sizes off that axis"});
  throws([&] { infer::concatenate({x, x.with_dtype(DType::kF16)}, 0); }, {"f16[r=4,c=6]", "dtype"});
  throws([&] { infer::repeat(x, "c", 0, "repeat"); }, {"repeat(f32[r=4,c=6])", "times 0"});
  // Traced errors name the op and shapes too.
  auto bad = compile_fn(testing::cpu(), [](Tensor a) { return split(a, "c", {2, 2})[0]; }, x);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("split(f32[r=4,c=6]): piece sizes sum to 4"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace radix
