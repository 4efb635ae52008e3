// Cumulative ops and the generic reduce against references written from
// their definitions, on every schedule: several shapes (size-1 and odd axes),
// dtypes, inclusive / exclusive, forward / reverse; shape inference and
// errors alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

enum class Op { kSum, kProd, kMax, kMin };
const Op kOps[] = {Op::kSum, Op::kProd, Op::kMax, Op::kMin};

// The identity of op in dtype d, as the exclusive scan's first element.
Val identity(Op op, DType d) {
  if (op == Op::kSum) return 0;
  if (op == Op::kProd) return 1;
  const bool mx = op == Op::kMax;
  if (is_float(d)) return mx ? -std::numeric_limits<Val>::infinity() : std::numeric_limits<Val>::infinity();
  return with_host_type(d, [&]<class T>() -> Val {
    return mx ? static_cast<Val>(std::numeric_limits<T>::lowest()) : static_cast<Val>(std::numeric_limits<T>::max());
  });
}

// One step in the accumulation type (f32 for f16 / bf16 / f32, f64 for f64;
// integers wrap to d).
Val step(Op op, DType d, Val acc, Val x) {
  Val r = 0;
  switch (op) {
    case Op::kSum: r = acc + x; break;
    case Op::kProd: r = acc * x; break;
    case Op::kMax: r = std::isnan(acc) || std::isnan(x) ? NAN : std::max(acc, x); break;
    case Op::kMin: r = std::isnan(acc) || std::isnan(x) ? NAN : std::min(acc, x); break;
  }
  if (d == DType::kF64) return static_cast<double>(r);
  if (is_float(d)) return static_cast<float>(r);
  return wrap(d, r);
}

Vals scan_ref(Op op, DType d, const Vals& x, const std::vector<int64_t>& dims, int axis, ScanOptions o) {
  Vals out(x.size());
  const std::vector<int64_t> st = strides_of(dims);
  const int64_t n = dims[static_cast<size_t>(axis)];
  for (int64_t lin = 0; lin < count_of(dims); ++lin) {
    std::vector<int64_t> at = unravel(lin, dims);
    if (at[static_cast<size_t>(axis)] != 0) continue;  // one line per start
    Val acc = identity(op, d);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = o.reverse ? n - 1 - k : k;
      const size_t p = static_cast<size_t>(lin + i * st[static_cast<size_t>(axis)]);
      if (o.exclusive) out[p] = quantize(d, acc);
      acc = step(op, d, acc, x[p]);
      if (!o.exclusive) out[p] = quantize(d, acc);
    }
  }
  return out;
}

Tensor apply(Op op, const Tensor& x, int axis, ScanOptions o) {
  switch (op) {
    case Op::kSum: return cumsum(x, axis, o);
    case Op::kProd: return cumprod(x, axis, o);
    case Op::kMax: return cummax(x, axis, o);
    case Op::kMin: return cummin(x, axis, o);
  }
  return x;
}

// Input values that keep every product in range: near 1 for floats, small
// for integers (they may still wrap, which the reference does too).
Vals scan_input(DType d, size_t n, uint32_t seed) {
  if (is_float(d)) return quantize(d, rand_vals(n, 0.5, 1.5, seed));
  Vals v = rand_vals(n, is_signed_int(d) ? -4 : 0, 5, seed);
  for (Val& x : v) x = std::floor(x);
  return v;
}

TEST(ScanOps, CumulativeMatchReference) {
  struct Case {
    DType d;
    std::vector<int64_t> dims;
    int axis;
  };
  const Case cases[] = {
      {DType::kF32, {1}, 0},        {DType::kF32, {7}, 0},     {DType::kF32, {3, 5}, 1},
      {DType::kF32, {9, 17}, 0},    {DType::kF64, {2, 1, 5}, 2}, {DType::kI32, {4, 3}, 0},
      {DType::kI64, {3, 1}, 1},     {DType::kU8, {2, 9}, 1},   {DType::kI8, {5, 2, 3}, 1},
      {DType::kF16, {3, 6}, 1},     {DType::kBF16, {5}, 0},    {DType::kF32, {1, 1}, 0},
      {DType::kF32, {3, 4, 5}, 1},  {DType::kBF16, {4, 3}, 0},
  };
  const ScanOptions opts[] = {{false, false}, {true, false}, {false, true}, {true, true}};
  on_every_schedule([&] {
    uint32_t seed = 1;
    for (const Case& c : cases) {
      const Shape s = shape_of(c.d, c.dims);
      SCOPED_TRACE(s.to_string() + " axis " + std::to_string(c.axis));
      const Vals x = scan_input(c.d, static_cast<size_t>(s.count()), seed++);
      Outs o = run([&](Tensor t) {
        std::vector<Tensor> r;
        for (Op op : kOps)
          for (ScanOptions so : opts) r.push_back(apply(op, t, c.axis, so));
        return r;
      }, {x}, s);
      size_t k = 0;
      for (Op op : kOps)
        for (ScanOptions so : opts) {
          SCOPED_TRACE("op " + std::to_string(static_cast<int>(op)) + " exclusive " + std::to_string(so.exclusive) +
                       " reverse " + std::to_string(so.reverse));
          EXPECT_EQ(o.shapes[k], s);
          // f16 / bf16 accumulate in f32 as the reference does: one rounding apart at most.
          const double rtol = c.d == DType::kF32 ? 1e-6 : c.d == DType::kF64 ? 1e-14 : is_float(c.d) ? eps(c.d) : 0;
          EXPECT_TRUE(close(o.values[k], scan_ref(op, c.d, x, c.dims, c.axis, so), c.d, rtol));
          ++k;
        }
    }
  });
}

TEST(ScanOps, TaggedAxisHalfPrecisionAndNaN) {
  on_every_schedule([] {
    // A long f16 cumsum accumulates in f32: 3000 ones count past 2048, where
    // an f16 accumulator would stall (2048 + 1 rounds to 2048).
    const Shape h(DType::kF16, {2, 3000}, {"b", "t"});
    Outs o = run([](Tensor t) { return cumsum(t, "t"); }, {Vals(6000, 1)}, h);
    EXPECT_EQ(o.shapes[0], h);
    Vals w;
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < 3000; ++i) w.push_back(quantize(DType::kF16, i + 1));
    EXPECT_TRUE(close(o.values[0], w, DType::kF16));

    const Shape f(DType::kF32, {5});
    Outs m = run([](Tensor t) { return std::vector<Tensor>{cummax(t, 0), cummin(t, 0)}; },
                 {{1, 3, NAN, 0, 5}}, f);
    EXPECT_TRUE(close(m.values[0], {1, 3, NAN, NAN, NAN}, DType::kF32));
    EXPECT_TRUE(close(m.values[1], {1, 1, NAN, NAN, NAN}, DType::kF32));
  });
}

// A reduce over rank-0 tensors traced into the linalg.generic region.
Vals reduce_ref(const Vals& x, const std::vector<int64_t>& dims, const std::vector<bool>& red, Val init,
                const std::function<Val(Val, Val)>& f) {
  std::vector<int64_t> out_dims;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!red[i]) out_dims.push_back(dims[i]);
  Vals out(static_cast<size_t>(count_of(out_dims)), init);
  const std::vector<int64_t> ost = strides_of(out_dims);
  for (int64_t lin = 0; lin < count_of(dims); ++lin) {
    std::vector<int64_t> at = unravel(lin, dims);
    int64_t o = 0;
    for (size_t i = 0, j = 0; i < dims.size(); ++i)
      if (!red[i]) o += at[i] * ost[j++];
    out[static_cast<size_t>(o)] = f(out[static_cast<size_t>(o)], x[static_cast<size_t>(lin)]);
  }
  return out;
}

TEST(ScanOps, GenericReduceBodies) {
  on_every_schedule([] {
    // max |x| over the last axis, and over every axis.
    const std::vector<int64_t> dims = {5, 7};
    const Shape s = shape_of(DType::kF32, dims, {"r", "c"});
    const Vals x = quantize(DType::kF32, rand_vals(35, -3, 3, 7));
    auto max_abs = [](const Tensor& acc, const Tensor& v) { return maximum(acc, abs(v)); };
    Outs o = run([&](Tensor t) {
      return std::vector<Tensor>{reduce(t, {"c"}, 0.0, max_abs), reduce(t, {}, 0.0, max_abs)};
    }, {x}, s);
    auto f_max_abs = [](Val a, Val v) { return std::max(a, std::fabs(v)); };
    EXPECT_EQ(o.shapes[0], Shape(DType::kF32, {5}, {"r"}));
    EXPECT_TRUE(close(o.values[0], reduce_ref(x, dims, {false, true}, 0, f_max_abs), DType::kF32));
    EXPECT_EQ(o.shapes[1], Shape(DType::kF32));
    EXPECT_TRUE(close(o.values[1], reduce_ref(x, dims, {true, true}, 0, f_max_abs), DType::kF32));

    // A product of i32 over axes {0, 2} (wrapping), and a count of positives
    // into an i64 accumulator (the result takes init's dtype).
    const std::vector<int64_t> d3 = {3, 1, 5};
    const Shape s3 = shape_of(DType::kI32, d3);
    Vals xi = rand_vals(15, -9, 9, 3);
    for (Val& v : xi) v = std::floor(v);
    Outs p = run([](Tensor t) {
      auto count = [](const Tensor& acc, const Tensor& v) {
        return select(gt(v, scalar(0, DType::kI32)), acc + 1.0, acc);
      };
      return std::vector<Tensor>{reduce(t, {0, 2}, 1.0, [](const Tensor& a, const Tensor& v) { return a * v; }),
                                 reduce(t, {2}, scalar(0, DType::kI64), count)};
    }, {xi}, s3);
    EXPECT_TRUE(close(p.values[0], reduce_ref(xi, d3, {true, false, true}, 1,
                                              [](Val a, Val v) { return wrap(DType::kI32, a * v); }),
                      DType::kI32));
    EXPECT_EQ(p.shapes[1], Shape(DType::kI64, {3, 1}));
    EXPECT_TRUE(close(p.values[1], reduce_ref(xi, d3, {false, false, true}, 0,
                                              [](Val a, Val v) { return v > 0 ? a + 1 : a; }),
                      DType::kI64));

    // logsumexp, stable form, in f64 over an odd axis; the init is finite.
    const std::vector<int64_t> d2 = {3, 11};
    const Shape s2 = shape_of(DType::kF64, d2);
    const Vals y = rand_vals(33, -20, 20, 11);
    Outs q = run([](Tensor t) {
      return reduce(t, {1}, -1e300, [](const Tensor& acc, const Tensor& v) {
        Tensor m = maximum(acc, v);
        return m + log(exp(acc - m) + exp(v - m));
      });
    }, {y}, s2);
    auto lse = [](Val a, Val v) {
      const Val m = std::max(a, v);
      return m + std::log(std::exp(a - m) + std::exp(v - m));
    };
    EXPECT_TRUE(close(q.values[0], reduce_ref(y, d2, {false, true}, -1e300, lse), DType::kF64, 1e-13));
  });
}

TEST(ScanOps, ReduceBodyBecomesScalarOps) {
  const std::string dir = ::testing::TempDir() + "radix_reduce_dump";
  std::filesystem::remove_all(dir);
  CompileFnOptions opts;
  opts.compile.diagnostics.dump = {"traced"};
  opts.compile.diagnostics.dump_dir = dir;
  auto exe = compile_fn(cpu(), opts, [](Tensor t) {
    return reduce(t, {1}, 1.0, [](const Tensor& a, const Tensor& v) { return maximum(a * v, abs(v) + 1.0); });
  }, Shape(DType::kF32, {4, 6}));
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  std::string text;
  text = testing::all_stage_dumps(dir);
  // One linalg.generic (the reduction), its body plain arith / math ops.
  EXPECT_EQ(testing::count_of(text, "linalg.generic"), 1u) << text;
  EXPECT_EQ(text.find("tensor.from_elements"), std::string::npos) << text;
  EXPECT_NE(text.find("arith.maximumf"), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

TEST(ScanOps, ShapeInferenceAndErrors) {
  const Shape x(DType::kF32, {4, 6}, {"r", "c"});
  EXPECT_EQ(infer::cumulative("cumsum", x, "c"), x);
  EXPECT_EQ(infer::reduce(x, {"c"}, Shape(DType::kI64)), Shape(DType::kI64, {4}, {"r"}));
  EXPECT_EQ(infer::reduce(x, {}, Shape(DType::kF32)), Shape(DType::kF32));
  auto throws = [](auto&& f, std::initializer_list<const char*> needles) {
    try {
      f();
      ADD_FAILURE() << "no TraceError";
    } catch (const TraceError& e) {
      for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  };
  throws([&] { infer::cumulative("cumprod", x, "q"); }, {"cumprod(f32[r=4,c=6])", "'q'"});
  throws([&] { infer::cumulative("cummax", x, 2); }, {"cummax(f32[r=4,c=6])", "axis 2"});
  throws([&] { infer::cumulative("cumsum", Shape(DType::kBool, {3}), 0); }, {"cumsum(bool[3])", "bool"});
  throws([&] { infer::reduce(x, {"c"}, Shape(DType::kF32, {1})); }, {"reduce(f32[r=4,c=6], f32[1])", "rank-0"});
  throws([&] { infer::reduce(x, {"c", 1}, Shape(DType::kF32)); }, {"reduce(f32[r=4,c=6], f32[])", "twice"});
  throws([&] { infer::reduce(x, {"z"}, Shape(DType::kF32)); }, {"reduce(f32[r=4,c=6], f32[])", "'z'"});

  auto bad = compile_fn(cpu(), [](Tensor t) {
    return reduce(t, {0}, 0.0, [](const Tensor& a, const Tensor& v) { return convert(a + v, DType::kF64); });
  }, x);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("reduce(f32[r=4,c=6], f32[]): the body must return a rank-0 f32 tensor, got f64[]"),
            std::string::npos) << bad.status().message();
  auto bad2 = compile_fn(cpu(), [](Tensor t) { return cumsum(t, "nope"); }, x);
  ASSERT_FALSE(bad2.ok());
  EXPECT_NE(bad2.status().message().find("cumsum(f32[r=4,c=6]): axis 'nope' does not exist"), std::string::npos)
      << bad2.status().message();
}

}  // namespace
}  // namespace radix
