// Numerics of the shape ops (broadcast_to, broadcast, reshape, transpose,
// expand_dims, squeeze) against index arithmetic done here. Pure data
// movement: every comparison is exact.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "radix/core/half.h"
#include "trace/op_test_helpers.h"

namespace radix {
namespace {


// Distinct, exactly representable values 0, 1, 2, ... (bool: alternating).
Vals seq(DType d, int64_t n) {
  Vals v;
  for (int64_t i = 0; i < n; ++i) v.push_back(is_bool(d) ? i % 3 == 0 : wrap(d, i % 100 + (is_float(d) ? 0.5 : 0)));
  return v;
}

// out[o] = x[src(o)] where src maps a result multi-index to an operand one.
template <class Src>
Vals gather(const Shape& out, const Shape& in, const Vals& x, Src src) {
  std::vector<int64_t> od(out.dims().begin(), out.dims().end()), id(in.dims().begin(), in.dims().end());
  auto st = strides_of(id);
  Vals r;
  for (int64_t l = 0; l < count_of(od); ++l) {
    std::vector<int64_t> ii = src(unravel(l, od));
    int64_t lin = 0;
    for (size_t k = 0; k < ii.size(); ++k) lin += ii[k] * st[k];
    r.push_back(x[lin]);
  }
  return r;
}

// Reference broadcast: operand axis i reads result axis map[i] (index 0 if size 1).
Vals broadcast_ref(const Shape& out, const Shape& in, const Vals& x, const std::vector<int>& map) {
  return gather(out, in, x, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> i(static_cast<size_t>(in.rank()));
    for (int k = 0; k < in.rank(); ++k) i[k] = in.dim(k) == 1 ? 0 : o[map[k]];
    return i;
  });
}

constexpr DType kDataTypes[] = {DType::kF32, DType::kI64, DType::kBool, DType::kF16, DType::kU8};

// ------------------------------------------------------------ broadcast_to

struct BroadcastToCase {
  Shape in, target;
  std::vector<int> map;  // expected operand axis -> target axis
};

TEST(ShapeOps, BroadcastTo) {
  const std::vector<BroadcastToCase> cases = {
      {Shape(DType::kF32, {3}), Shape(DType::kF32, {2, 3}), {1}},
      {Shape(DType::kF32, {2, 1}), Shape(DType::kF32, {2, 4}), {0, 1}},
      {Shape(DType::kF32), Shape(DType::kF32, {2, 3}), {}},
      {Shape(DType::kF32, {1, 3, 1}), Shape(DType::kF32, {2, 4, 3, 8}), {1, 2, 3}},
      {Shape(DType::kF32, {3}, {"d"}), Shape(DType::kF32, {2, 3}, {"b", "d"}), {1}},
      // by tag: operand axes may be in another order than the target's
      {Shape(DType::kF32, {3, 1}, {"d", "b"}), Shape(DType::kF32, {2, 3}, {"b", "d"}), {1, 0}},
      {Shape(DType::kF32, {4}, {"c"}), Shape(DType::kF32, {4, 2}, {"c", "a"}), {0}},
  };
  for (DType d : {DType::kF32, DType::kI32, DType::kBool}) {
    ScalarLoops scalar_loops;  // bool buffers: see the elementwise test's BoolVectorized
    for (const auto& c0 : cases) {
      const Shape in = c0.in.with_dtype(d), target = c0.target.with_dtype(d);
      SCOPED_TRACE(in.to_string() + " -> " + target.to_string());
      const Vals x = seq(d, in.count());
      Outs o = run([target](Tensor x) { return broadcast_to(x, target); }, {x}, in);
      EXPECT_EQ(o.shapes[0], target);
      EXPECT_TRUE(close(o.values[0], broadcast_ref(target, in, x, c0.map), d));
    }
  }
  // Vectorized path (inner dim 16), float data.
  const Shape in(DType::kF32, {3, 1}), target(DType::kF32, {2, 3, 16});
  const Vals x = seq(DType::kF32, 3);
  Outs o = run([target](Tensor x) { return broadcast_to(x, target); }, {x}, in);
  EXPECT_TRUE(close(o.values[0], broadcast_ref(target, in, x, {1, 2}), DType::kF32));
}

// ------------------------------------------------------------ broadcast (explicit axes)

TEST(ShapeOps, BroadcastExplicitAxes) {
  struct Case {
    Shape in, target;
    Axes axes;
    std::vector<int> map;
  };
  const DType f = DType::kF32;
  const std::vector<Case> cases = {
      {Shape(f, {3}), Shape(f, {2, 3, 4}), {1}, {1}},
      {Shape(f, {2, 4}), Shape(f, {2, 3, 4}), {0, 2}, {0, 2}},
      {Shape(f, {4, 2}), Shape(f, {2, 3, 4}), {2, 0}, {2, 0}},      // transposing broadcast
      {Shape(f, {1, 3}), Shape(f, {5, 3}), {0, 1}, {0, 1}},          // size-1 axis
      {Shape(f, {3}), Shape(f, {3, 16}), {-2}, {0}},                  // negative index, vectorized
      {Shape(f, {4}), Shape(f, {2, 3, 4}, {"a", "b", "c"}), {"c"}, {2}},           // by tag
      {Shape(f, {4, 2}), Shape(f, {2, 3, 4}, {"a", "b", "c"}), {"c", "a"}, {2, 0}}, // by tag, reordered
      {Shape(f), Shape(f, {2, 2}), {}, {}},
  };
  for (DType d : {DType::kF32, DType::kI64, DType::kF16}) {
    for (const Case& c : cases) {
      const Shape in = c.in.with_dtype(d), target = c.target.with_dtype(d);
      SCOPED_TRACE(in.to_string() + " -> " + target.to_string());
      const Vals x = seq(d, in.count());
      Axes axes = c.axes;
      Outs o = run([target, axes](Tensor x) { return broadcast(x, target, axes); }, {x}, in);
      EXPECT_EQ(o.shapes[0], target);
      EXPECT_TRUE(close(o.values[0], broadcast_ref(target, in, x, c.map), d));
    }
  }
}

// ------------------------------------------------------------ reshape

TEST(ShapeOps, Reshape) {
  struct Case {
    std::vector<int64_t> in, dims, want;  // dims may hold one -1
  };
  const std::vector<Case> cases = {
      {{2, 3, 4}, {4, 6}, {4, 6}},
      {{2, 3, 4}, {3, -1}, {3, 8}},
      {{24}, {2, -1, 4}, {2, 3, 4}},
      {{6, 4}, {-1}, {24}},
      {{2, 3, 4}, {4, 3, 2}, {4, 3, 2}},
      {{}, {1, 1}, {1, 1}},          // rank 0 -> rank n
      {{}, {-1}, {1}},
      {{1, 1}, {}, {}},              // rank n -> rank 0
      {{1}, {}, {}},
      {{5}, {1, 5, 1}, {1, 5, 1}},
  };
  for (DType d : {DType::kF32, DType::kI16, DType::kBool, DType::kBF16}) {
    for (const Case& c : cases) {
      const Shape in = shape_of(d, c.in);
      SCOPED_TRACE(in.to_string());
      const Vals x = seq(d, in.count());
      const std::vector<int64_t> dims = c.dims;
      Outs o = run([dims](Tensor x) { return reshape(x, std::span<const int64_t>(dims)); }, {x}, in);
      EXPECT_EQ(o.shapes[0], shape_of(d, c.want));
      EXPECT_TRUE(close(o.values[0], x, d));  // row-major order is preserved
    }
  }
  // Tags: dropped by default, set when given; reshape of a transposed value.
  const Shape in(DType::kF32, {2, 3}, {"a", "b"});
  const Vals x = seq(DType::kF32, 6);
  Outs o = run([](Tensor x) {
    const int64_t d1[] = {3, 2};
    const Tag t1[] = {"p", "q"};
    return std::vector<Tensor>{reshape(x, {2, 3}), reshape(x, {6}), reshape(x, d1, t1), reshape(transpose(x, {1, 0}), {6})};
  }, {x}, in);
  EXPECT_EQ(o.shapes[0], Shape(DType::kF32, {2, 3}));
  EXPECT_EQ(o.shapes[1], Shape(DType::kF32, {6}));
  EXPECT_EQ(o.shapes[2], Shape(DType::kF32, {3, 2}, {"p", "q"}));
  EXPECT_EQ(o.shapes[3], Shape(DType::kF32, {6}));
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(close(o.values[k], x, DType::kF32)) << k;
  const Shape tr(DType::kF32, {3, 2});
  EXPECT_TRUE(close(o.values[3], gather(tr, in, x, [](const std::vector<int64_t>& i) {
                      return std::vector<int64_t>{i[1], i[0]};
                    }), DType::kF32));
}

// ------------------------------------------------------------ transpose

TEST(ShapeOps, Transpose) {
  struct Case {
    Shape in;
    Axes perm;
    std::vector<int> p;  // resolved: result axis i is operand axis p[i]
  };
  const DType f = DType::kF32;
  const std::vector<Case> cases = {
      {Shape(f, {2, 3}), {1, 0}, {1, 0}},
      {Shape(f, {2, 3, 4}), {2, 0, 1}, {2, 0, 1}},
      {Shape(f, {2, 3, 4}), {-1, 0, 1}, {2, 0, 1}},
      {Shape(f, {2, 3, 4}), {0, 1, 2}, {0, 1, 2}},  // identity
      {Shape(f, {2, 3, 4, 5}), {3, 1, 0, 2}, {3, 1, 0, 2}},
      {Shape(f, {2, 3, 16, 4}), {0, 1, 3, 2}, {0, 1, 3, 2}},
      {Shape(f, {2, 3, 4}, {"a", "b", "c"}), {"c", "a", "b"}, {2, 0, 1}},
      {Shape(f, {2, 3, 4, 5}, {"a", "b", "c", "d"}), {"b", "d", "a", "c"}, {1, 3, 0, 2}},
  };
  for (DType d : kDataTypes) {
    ScalarLoops scalar_loops;  // bool buffers: see the elementwise test's BoolVectorized
    for (const Case& c : cases) {
      const Shape in = c.in.with_dtype(d);
      SCOPED_TRACE(in.to_string());
      const Vals x = seq(d, in.count());
      std::vector<int64_t> od;
      std::vector<Tag> ot;
      for (int a : c.p) {
        od.push_back(in.dim(a));
        ot.push_back(in.tag(a));
      }
      const Shape want_shape = shape_of(d, od, in.has_tags() ? ot : std::vector<Tag>{});
      Axes perm = c.perm;
      Outs o = run([perm](Tensor x) { return transpose(x, perm); }, {x}, in);
      EXPECT_EQ(o.shapes[0], want_shape);
      EXPECT_TRUE(close(o.values[0], gather(want_shape, in, x, [&](const std::vector<int64_t>& oi) {
                          std::vector<int64_t> ii(oi.size());
                          for (size_t k = 0; k < oi.size(); ++k) ii[c.p[k]] = oi[k];
                          return ii;
                        }), d));
    }
  }
  // Vectorized transposes of float data.
  for (const Case& c : {cases[4], cases[5]}) {
    const Vals x = seq(f, c.in.count());
    Axes perm = c.perm;
    Outs o = run([perm](Tensor x) { return transpose(x, perm); }, {x}, c.in);
    EXPECT_TRUE(close(o.values[0], gather(o.shapes[0], c.in, x, [&](const std::vector<int64_t>& oi) {
                        std::vector<int64_t> ii(oi.size());
                        for (size_t k = 0; k < oi.size(); ++k) ii[c.p[k]] = oi[k];
                        return ii;
                      }), f));
  }
}

// ------------------------------------------------------------ expand_dims / squeeze

TEST(ShapeOps, ExpandDimsAndSqueeze) {
  for (DType d : {DType::kF32, DType::kU64, DType::kF16}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    const Shape in(d, {2, 3});
    const Vals x = seq(d, 6);
    Outs o = run([](Tensor x) {
      return std::vector<Tensor>{expand_dims(x, 0), expand_dims(x, 1), expand_dims(x, 2), expand_dims(x, -1),
                                 expand_dims(x, 1, "n"), squeeze(expand_dims(x, 1), 1)};
    }, {x}, in);
    const std::vector<Shape> want = {Shape(d, {1, 2, 3}), Shape(d, {2, 1, 3}), Shape(d, {2, 3, 1}),
                                     Shape(d, {2, 3, 1}), Shape(d, {2, 1, 3}, {Tag(), "n", Tag()}), in};
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ(o.shapes[k], want[k]) << k;
      EXPECT_TRUE(close(o.values[k], x, d)) << k;
    }
    const Shape t(d, {2, 1, 3, 1}, {"a", "b", "c", "e"});
    const Vals y = seq(d, 6);
    Outs p = run([](Tensor y) {
      return std::vector<Tensor>{squeeze(y, 1), squeeze(y, "e"), squeeze(y, -1), squeeze(squeeze(y, "b"), "e"),
                                 expand_dims(y, 4, "z")};
    }, {y}, t);
    const std::vector<Shape> want2 = {Shape(d, {2, 3, 1}, {"a", "c", "e"}), Shape(d, {2, 1, 3}, {"a", "b", "c"}),
                                      Shape(d, {2, 1, 3}, {"a", "b", "c"}), Shape(d, {2, 3}, {"a", "c"}),
                                      Shape(d, {2, 1, 3, 1, 1}, {"a", "b", "c", "e", "z"})};
    for (size_t k = 0; k < want2.size(); ++k) {
      EXPECT_EQ(p.shapes[k], want2[k]) << k;
      EXPECT_TRUE(close(p.values[k], y, d)) << k;
    }
    Outs q = run([](Tensor z) { return std::vector<Tensor>{squeeze(z, 0), expand_dims(squeeze(z, 0), 0)}; },
                 {{wrap(d, 7)}}, Shape(d, {1}));
    EXPECT_EQ(q.shapes[0], Shape(d));
    EXPECT_EQ(q.shapes[1], Shape(d, {1}));
    EXPECT_TRUE(close(q.values[0], {wrap(d, 7)}, d));
    EXPECT_TRUE(close(q.values[1], {wrap(d, 7)}, d));
  }
}

}  // namespace
}  // namespace radix
