// sort / argsort / top_k against std::stable_sort and a naive top-k: several
// shapes (size-1 and odd axes, 32000-long rows, inner and outer axes, tags),
// every numeric dtype, both directions, ties (stability), NaNs and signed
// zeros; user comparators and multi-operand sorts; the plain-loop path and
// three schedule ISAs; the shape-inference functions alone; error messages.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

const Val kNaN = std::numeric_limits<Val>::quiet_NaN();

// The documented order: by value, NaNs last in both directions.
bool ref_before(Val a, Val b, bool desc) {
  if (std::isnan(a) || std::isnan(b)) return !std::isnan(a) && std::isnan(b);
  return desc ? a > b : a < b;
}

// Stable sort of x (dims) along `axis` under `before`: sorted values and the
// input positions (argsort), both in row-major order of dims.
template <class Before>
std::pair<Vals, Vals> ref_sort(const std::vector<int64_t>& dims, int axis, const Vals& x, Before before) {
  const auto st = strides_of(dims);
  const int64_t n = dims[static_cast<size_t>(axis)], total = count_of(dims);
  Vals vals(x.size()), idx(x.size());
  for (int64_t lin = 0; lin < total; ++lin) {
    auto ii = unravel(lin, dims);
    if (ii[static_cast<size_t>(axis)] != 0) continue;  // one row per start position
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    auto at = [&](int64_t i) { return x[static_cast<size_t>(lin + i * st[static_cast<size_t>(axis)])]; };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return before(at(a), at(b)); });
    for (int64_t i = 0; i < n; ++i) {
      const size_t o = static_cast<size_t>(lin + i * st[static_cast<size_t>(axis)]);
      vals[o] = at(order[static_cast<size_t>(i)]);
      idx[o] = static_cast<Val>(order[static_cast<size_t>(i)]);
    }
  }
  return {vals, idx};
}

// Naive top-k: repeatedly the first best remaining element.
std::pair<Vals, Vals> ref_top_k(const std::vector<int64_t>& dims, int axis, const Vals& x, int64_t k) {
  const auto st = strides_of(dims);
  std::vector<int64_t> od = dims;
  od[static_cast<size_t>(axis)] = k;
  const auto ost = strides_of(od);
  const int64_t n = dims[static_cast<size_t>(axis)];
  Vals vals(static_cast<size_t>(count_of(od))), idx(vals.size());
  for (int64_t lin = 0; lin < count_of(dims); ++lin) {
    auto ii = unravel(lin, dims);
    if (ii[static_cast<size_t>(axis)] != 0) continue;
    int64_t olin = 0;
    for (size_t d = 0; d < dims.size(); ++d) olin += ii[d] * ost[d];
    std::vector<bool> used(static_cast<size_t>(n));
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      for (int64_t i = 0; i < n; ++i) {
        if (used[static_cast<size_t>(i)]) continue;
        Val v = x[static_cast<size_t>(lin + i * st[static_cast<size_t>(axis)])];
        if (best < 0 || ref_before(v, x[static_cast<size_t>(lin + best * st[static_cast<size_t>(axis)])], true))
          best = i;
      }
      used[static_cast<size_t>(best)] = true;
      const size_t o = static_cast<size_t>(olin + j * ost[static_cast<size_t>(axis)]);
      vals[o] = x[static_cast<size_t>(lin + best * st[static_cast<size_t>(axis)])];
      idx[o] = static_cast<Val>(best);
    }
  }
  return {vals, idx};
}

// Exact comparison that also tells -0.0 from 0.0 and matches NaN with NaN.
::testing::AssertionResult same(const Vals& got, const Vals& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = (std::isnan(got[i]) && std::isnan(want[i])) ||
                    (got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]));
    if (!ok) return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// Values with many ties; floats add NaNs, -0.0 and 0.0 and infinities.
Vals tie_data(DType d, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Vals x(static_cast<size_t>(n));
  for (auto& v : x) {
    int r = static_cast<int>(rng() % 23);
    if (is_float(d)) {
      if (r == 0) v = kNaN;
      else if (r == 1) v = -0.0;
      else if (r == 2) v = 0.0;
      else if (r == 3) v = std::numeric_limits<Val>::infinity();
      else if (r == 4) v = -std::numeric_limits<Val>::infinity();
      else v = quantize(d, static_cast<Val>(static_cast<int>(rng() % 15) - 7) * 0.5);
    } else if (is_signed_int(d)) {
      v = r == 0 ? -std::ldexp(Val(1), dtype_bits(d) - 1) : static_cast<Val>(static_cast<int>(rng() % 15) - 7);
    } else {
      v = r == 0 ? std::pow(Val(2), dtype_bits(d)) - 1 : static_cast<Val>(rng() % 9);
    }
  }
  return x;
}

struct Case {
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  Axis axis;
  int resolved;
};

const std::vector<Case> kCases = {
    {{1}, {}, 0, 0},           {{7}, {}, -1, 0},        {{2, 1}, {}, 1, 1},      {{3, 17}, {}, 1, 1},
    {{3, 17}, {}, 0, 0},       {{2, 5, 4}, {"a", "b", "c"}, "b", 1},              {{64}, {}, 0, 0},
    {{2, 3, 33}, {}, -1, 2},
};

void check_sort_case(DType d, const Case& c, bool desc, uint32_t seed) {
  const Shape in = shape_of(d, c.dims, c.tags);
  SCOPED_TRACE(in.to_string() + " axis " + c.axis.to_string() + (desc ? " descending" : " ascending"));
  const Vals x = tie_data(d, count_of(c.dims), seed);
  const Axis axis = c.axis;
  Outs o = run([axis, desc](Tensor x) {
    return std::vector<Tensor>{sort(x, axis, SortOptions{.descending = desc}),
                               argsort(x, axis, SortOptions{.descending = desc, .index_dtype = DType::kI64})};
  }, {x}, in);
  auto [vals, idx] = ref_sort(c.dims, c.resolved, x, [desc](Val a, Val b) { return ref_before(a, b, desc); });
  EXPECT_EQ(o.shapes[0], in);
  EXPECT_EQ(o.shapes[1], in.with_dtype(DType::kI64));
  EXPECT_TRUE(same(o.values[0], vals));
  EXPECT_TRUE(same(o.values[1], idx));
}

TEST(Sort, Floats) {
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16})
    for (const Case& c : kCases)
      for (bool desc : {false, true}) check_sort_case(d, c, desc, 7);
}

TEST(Sort, Integers) {
  for (DType d : {DType::kI8, DType::kI16, DType::kI32, DType::kI64, DType::kU8, DType::kU16, DType::kU32,
                  DType::kU64})
    for (size_t ci : {1, 3, 4, 5, 7})
      for (bool desc : {false, true}) check_sort_case(d, kCases[ci], desc, 11);
}

TEST(Sort, LongRows) {
  // 32000 and an odd 32001 along the axis, random values (f32) and ties (i32).
  for (int64_t n : {32000, 32001})
    for (bool desc : {false, true}) {
      Case c{{n}, {}, 0, 0};
      check_sort_case(DType::kI32, c, desc, 3);
      const Shape in(DType::kF32, {1, n});
      Vals x = quantize(DType::kF32, rand_vals(static_cast<size_t>(n), -100, 100, 5));
      Outs o = run([desc](Tensor x) { return sort(x, 1, SortOptions{.descending = desc}); }, {x}, in);
      std::vector<long double> want(x);
      std::stable_sort(want.begin(), want.end(), [desc](Val a, Val b) { return desc ? a > b : a < b; });
      EXPECT_TRUE(same(o.values[0], want));
    }
}

TEST(Sort, ArgsortIndexDtypes) {
  const Shape in(DType::kF32, {2, 100});
  const Vals x = tie_data(DType::kF32, 200, 9);
  auto [vals, idx] = ref_sort({2, 100}, 1, x, [](Val a, Val b) { return ref_before(a, b, false); });
  for (DType id : {DType::kI8, DType::kU8, DType::kI16, DType::kI32, DType::kU64}) {
    Outs o = run([id](Tensor x) { return argsort(x, 1, SortOptions{.index_dtype = id}); }, {x}, in);
    EXPECT_EQ(o.shapes[0], in.with_dtype(id));
    EXPECT_TRUE(same(o.values[0], idx)) << dtype_name(id);
  }
}

TEST(Sort, Comparator) {
  // By absolute value (stable: -2 and 2 keep their order), and descending via
  // the comparator, with argsort under the same comparator.
  const Shape in(DType::kF32, {3, 41});
  Vals x = tie_data(DType::kF32, 3 * 41, 4);
  for (Val& v : x)
    if (std::isnan(v)) v = 3;  // the comparators below are strict weak orders only without NaNs
  auto by_abs = [](const Tensor& a, const Tensor& b) { return lt(abs(a), abs(b)); };
  auto desc = [](const Tensor& a, const Tensor& b) { return gt(a, b); };
  Outs o = run([&](Tensor x) {
    return std::vector<Tensor>{sort(x, 1, by_abs), argsort(x, 1, by_abs), sort(x, 1, desc),
                               argsort(x, -1, desc, DType::kI16)};
  }, {x}, in);
  auto [av, ai] = ref_sort({3, 41}, 1, x, [](Val a, Val b) { return std::fabs(a) < std::fabs(b); });
  auto [dv, di] = ref_sort({3, 41}, 1, x, [](Val a, Val b) { return a > b; });
  EXPECT_TRUE(same(o.values[0], av));
  EXPECT_TRUE(same(o.values[1], ai));
  EXPECT_TRUE(same(o.values[2], dv));
  EXPECT_TRUE(same(o.values[3], di));
  EXPECT_EQ(o.shapes[3], in.with_dtype(DType::kI16));
}

TEST(Sort, ComparatorCapturesAndMixesDtypes) {
  // The comparator may use outer rank-0 tensors and convert: sort i32 keys
  // by their distance to a threshold computed outside, as f32.
  const Shape in(DType::kI32, {50});
  Vals x;
  for (int i = 0; i < 50; ++i) x.push_back((i * 37) % 23 - 11);
  Outs o = run([](Tensor x) {
    Tensor center = convert(reduce_max(x), DType::kF32) * 0.5;
    return sort(x, 0, [center](const Tensor& a, const Tensor& b) {
      return lt(abs(convert(a, DType::kF32) - center), abs(convert(b, DType::kF32) - center));
    });
  }, {x}, in);
  const Val center = *std::max_element(x.begin(), x.end()) * 0.5;
  auto [want, _] =
      ref_sort({50}, 0, x, [center](Val a, Val b) { return std::fabs(a - center) < std::fabs(b - center); });
  EXPECT_TRUE(same(o.values[0], want));
}

TEST(Sort, BoolKeysWithComparator) {
  ScalarLoops scalar_loops;  // bool buffers: see the elementwise test's BoolVectorized
  const Shape in(DType::kBool, {9});
  const Vals x = {1, 0, 1, 1, 0, 0, 1, 0, 1};
  Outs o = run([](Tensor x) {
    return argsort(x, 0, [](const Tensor& a, const Tensor& b) {
      return gt(convert(a, DType::kI8), convert(b, DType::kI8));
    });
  }, {x}, in);
  EXPECT_TRUE(same(o.values[0], {0, 2, 3, 6, 8, 1, 4, 5, 7}));
}

TEST(Sort, MultiOperand) {
  // i32 keys (ties) carry an f32 and an i64 payload; descending; by tag.
  const Shape keys(DType::kI32, {3, 20}, {"b", "s"});
  const Shape p1(DType::kF32, {3, 20}, {"b", "s"});
  const Shape p2(DType::kI64, {3, 20});
  const Vals k = tie_data(DType::kI32, 60, 2);
  Vals a, c;
  for (int i = 0; i < 60; ++i) {
    a.push_back(i * 0.25);
    c.push_back(1000 - i);
  }
  Outs o = run([](Tensor k, Tensor a, Tensor c) { return sort({k, a, c}, "s", SortOptions{.descending = true}); },
               {k, a, c}, keys, p1, p2);
  auto [kv, ki] = ref_sort({3, 20}, 1, k, [](Val x, Val y) { return x > y; });
  Vals av(60), cv(60);
  for (size_t i = 0; i < 60; ++i) {
    const size_t src = (i / 20) * 20 + static_cast<size_t>(ki[i]);
    av[i] = a[src];
    cv[i] = c[src];
  }
  EXPECT_TRUE(same(o.values[0], kv));
  EXPECT_TRUE(same(o.values[1], av));
  EXPECT_TRUE(same(o.values[2], cv));
  EXPECT_EQ(o.shapes[1], p1);
  EXPECT_EQ(o.shapes[2], p2);
  // With a comparator: ascending by key via the comparator.
  Outs q = run([](Tensor k, Tensor a) {
    return sort({k, a}, 1, [](const Tensor& x, const Tensor& y) { return lt(x, y); });
  }, {k, a}, keys, p1);
  auto [qk, qi] = ref_sort({3, 20}, 1, k, [](Val x, Val y) { return x < y; });
  EXPECT_TRUE(same(q.values[0], qk));
  for (size_t i = 0; i < 60; ++i) EXPECT_EQ(q.values[1][i], a[(i / 20) * 20 + static_cast<size_t>(qi[i])]);
}

void check_top_k(DType d, std::vector<int64_t> dims, int axis, int64_t k, const Vals& x) {
  const Shape in = shape_of(d, dims);
  SCOPED_TRACE(in.to_string() + " axis " + std::to_string(axis) + " k " + std::to_string(k));
  Outs o = run([axis, k](Tensor x) {
    TopK t = top_k(x, k, axis);
    return std::vector<Tensor>{t.values, t.indices};
  }, {x}, in);
  auto [vals, idx] = ref_top_k(dims, axis, x, k);
  std::vector<int64_t> od = dims;
  od[static_cast<size_t>(axis)] = k;
  EXPECT_EQ(o.shapes[0], shape_of(d, od));
  EXPECT_EQ(o.shapes[1], shape_of(DType::kI32, od));
  EXPECT_TRUE(same(o.values[0], vals));
  EXPECT_TRUE(same(o.values[1], idx));
}

TEST(TopK, Small) {
  for (DType d : {DType::kF32, DType::kF16, DType::kI32, DType::kU8, DType::kI64}) {
    check_top_k(d, {4, 10}, 1, 1, tie_data(d, 40, 1));
    check_top_k(d, {4, 10}, 1, 3, tie_data(d, 40, 2));
    check_top_k(d, {4, 10}, 1, 10, tie_data(d, 40, 3));  // k = n
    check_top_k(d, {9, 3}, 0, 4, tie_data(d, 27, 4));    // outer axis
    check_top_k(d, {1}, 0, 1, tie_data(d, 1, 5));
  }
}

TEST(TopK, LongRowsAndLargeK) {
  // 32000 logits with k = 40 and 300 (the heap path) and k = 1500 (the
  // sorting path); an ascending ramp with ties (every element enters the
  // heap) and a descending one.
  Vals logits = quantize(DType::kF32, rand_vals(32000, -10, 10, 8));
  check_top_k(DType::kF32, {32000}, 0, 40, logits);
  check_top_k(DType::kF32, {2, 16000}, 1, 300, logits);
  check_top_k(DType::kF32, {16, 2000}, 1, 1500, logits);
  Vals ramp(5000), down(5000);
  for (size_t i = 0; i < ramp.size(); ++i) {
    ramp[i] = static_cast<Val>(i / 3);
    down[i] = static_cast<Val>(-static_cast<int64_t>(i / 3));
  }
  check_top_k(DType::kF32, {5000}, 0, 128, ramp);
  check_top_k(DType::kF32, {5000}, 0, 1024, ramp);
  check_top_k(DType::kF32, {5000}, 0, 1025, ramp);
  check_top_k(DType::kI32, {5000}, 0, 33, down);
  check_top_k(DType::kF32, {4, 200}, 1, 7, tie_data(DType::kF32, 800, 6));
}

TEST(TopK, ReturnedAsStruct) {
  // A traced function may return the TopK itself; the call gives TopKResult<Buffer>.
  const Shape s(DType::kF32, {6});
  auto exe = must(compile_fn(cpu(), [](Tensor x) { return top_k(x, 2); }, s));
  TopKResult<Buffer> r = must(exe.call(must(cpu().buffer(s, std::vector<float>{1, 5, 3, 5, -1, 4}))));
  EXPECT_EQ(must(r.values.to_host<float>()), (std::vector<float>{5, 5}));
  EXPECT_EQ(must(r.indices.to_host<int32_t>()), (std::vector<int32_t>{1, 3}));
}

// The plain-loop path and the schedules of three ISAs give the same results.
TEST(Sort, SchedulesAndPlainLoops) {
  auto all = [] {
    check_sort_case(DType::kF32, kCases[3], false, 1);
    check_sort_case(DType::kI64, kCases[5], true, 2);
    check_top_k(DType::kF32, {3, 50}, 1, 5, tie_data(DType::kF32, 150, 3));
  };
  {
    ScalarLoops scalar_loops;
    all();
  }
  for (VectorIsa isa : {VectorIsa{4, 16}, VectorIsa{8, 16}, VectorIsa{16, 32}}) {
    SCOPED_TRACE("isa " + std::to_string(isa.f32_lanes) + "x" + std::to_string(isa.registers));
    g_opts.compile.codegen.cpu.schedule_isa = isa;
    all();
  }
  g_opts.compile.codegen.cpu.schedule_isa = {};
}

// Bufferized IR: the loops load and store in place; no allocation or copy
// of the work tensors happens inside any loop (only at the top level of @main).
TEST(Sort, BufferizesInPlace) {
  const std::string dir = ::testing::TempDir() + "radix_sort_dump";
  std::filesystem::remove_all(dir);
  CompileFnOptions opts;
  opts.compile.diagnostics.dump = {"bufferize"};
  opts.compile.diagnostics.dump_dir = dir;
  auto exe = compile_fn(cpu(), opts, [](Tensor x, Tensor y) {
    TopK t = top_k(y, 5, 1);
    auto by_abs = [](const Tensor& a, const Tensor& b) { return lt(abs(a), abs(b)); };
    return std::vector<Tensor>{argsort(x, 0), sort(x, 0, by_abs), t.values, t.indices};
  }, Shape(DType::kF32, {100, 3}), Shape(DType::kF32, {3, 100}));
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  std::string text;
  text = testing::all_stage_dumps(dir);
  std::filesystem::remove_all(dir);
  ASSERT_NE(text.find("scf.for"), std::string::npos);
  std::istringstream lines(text);
  int depth = 0, loops = 0;
  for (std::string line; std::getline(lines, line);) {
    const bool opens = line.find("scf.for") != std::string::npos || line.find("scf.while") != std::string::npos ||
                       line.find("scf.if") != std::string::npos;
    if (depth > 0) {
      EXPECT_EQ(line.find("memref.alloc"), std::string::npos) << line;
      EXPECT_EQ(line.find("memref.copy"), std::string::npos) << line;
      EXPECT_EQ(line.find("linalg."), std::string::npos) << line;
    }
    loops += opens;
    // Region nesting by braces (the loops' bodies are the only regions inside @main).
    for (char ch : line) depth += ch == '{' && (opens || depth > 0) ? 1 : ch == '}' && depth > 0 ? -1 : 0;
  }
  EXPECT_GE(loops, 6);
}

// ---------------------------------------------------------------- shape inference alone
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SortShapes, Results) {
  const Shape x(DType::kF32, {4, 10}, {"b", "v"});
  const Shape p(DType::kI64, {4, 10});
  const std::vector<Shape> ops = {x, p};
  EXPECT_EQ(sort_shapes::sort(ops, "v"), ops);
  EXPECT_EQ(sort_shapes::argsort(x, 0, DType::kI32), x.with_dtype(DType::kI32));
  auto [v, i] = sort_shapes::top_k(x, 3, "v", DType::kI64);
  EXPECT_EQ(v, Shape(DType::kF32, {4, 3}, {"b", "v"}));
  EXPECT_EQ(i, Shape(DType::kI64, {4, 3}, {"b", "v"}));
  EXPECT_EQ(sort_shapes::top_k(x, 10, -1, DType::kI32).first.dim(1), 10);
  EXPECT_EQ(sort_shapes::sort(std::vector<Shape>{Shape(DType::kBool, {3})}, 0, /*has_comparator=*/true)[0],
            Shape(DType::kBool, {3}));
  EXPECT_NO_THROW(sort_shapes::check_comparator("sort", Shape(DType::kF32, {3}), Shape(DType::kBool)));
}

TEST(SortShapes, Errors) {
  const Shape x(DType::kF32, {4, 10}, {"b", "v"});
  auto has = [](const std::string& msg, std::initializer_list<const char*> parts) {
    for (const char* p : parts)
      if (msg.find(p) == std::string::npos) return ::testing::AssertionFailure() << "'" << p << "' not in: " << msg;
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(has(error_of([&] { sort_shapes::top_k(x, 11, 1, DType::kI32); }), {"top_k(f32[b=4,v=10])", "k = 11"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::top_k(x, 0, 1, DType::kI32); }), {"top_k(f32[b=4,v=10])", "k = 0"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::top_k(x, -2, 1, DType::kI32); }), {"top_k(", "k = -2"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::top_k(x, 2, "q", DType::kI32); }), {"top_k(f32[b=4,v=10])", "axis 'q'"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::top_k(x, 2, 1, DType::kF32); }), {"top_k(f32[b=4,v=10])", "f32"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::top_k(Shape(DType::kBool, {5}), 2, 0, DType::kI32); }),
                  {"top_k(bool[5])", "bool"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::argsort(x, 2, DType::kI32); }), {"argsort(f32[b=4,v=10])", "axis 2"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::argsort(Shape(DType::kF32, {300}), 0, DType::kI8); }),
                  {"argsort(f32[300])", "i8", "299"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::argsort(Shape(DType::kBool, {3}), 0, DType::kI32); }),
                  {"argsort(bool[3])", "comparator"}));
  const std::vector<Shape> mism = {x, Shape(DType::kI32, {4, 9})};
  EXPECT_TRUE(has(error_of([&] { sort_shapes::sort(mism, 1); }), {"sort(f32[b=4,v=10], i32[4,9])", "same dims"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::sort(std::vector<Shape>{x}, -3); }), {"sort(f32[b=4,v=10])", "-3"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::check_comparator("sort", x, Shape(DType::kF32)); }),
                  {"sort(f32[b=4,v=10])", "rank-0 bool", "got f32[]"}));
  EXPECT_TRUE(has(error_of([&] { sort_shapes::check_comparator("argsort", x, Shape(DType::kBool, {4})); }),
                  {"argsort(f32[b=4,v=10])", "bool[4]"}));
  // Sizes that fit exactly: i8 holds 127, u8 255.
  EXPECT_NO_THROW(sort_shapes::argsort(Shape(DType::kF32, {128}), 0, DType::kI8));
  EXPECT_NO_THROW(sort_shapes::argsort(Shape(DType::kF32, {256}), 0, DType::kU8));
}

// The ops report the same errors while tracing, as a Status from compile_fn.
TEST(Sort, OpErrorsNameOpAndShapes) {
  auto msg = [](auto fn, const Shape& s) {
    auto r = compile_fn(cpu(), fn, s);
    return r.ok() ? std::string("(compiled)") : r.status().message();
  };
  const Shape x(DType::kF32, {4, 10});
  std::string m = msg([](Tensor x) { return top_k(x, 11, 1).values; }, x);
  EXPECT_NE(m.find("top_k(f32[4,10])"), std::string::npos) << m;
  m = msg([](Tensor x) { return sort(x, 1, [](const Tensor& a, const Tensor& b) { return a - b; }); }, x);
  EXPECT_NE(m.find("sort(f32[4,10])"), std::string::npos) << m;
  EXPECT_NE(m.find("rank-0 bool"), std::string::npos) << m;
  m = msg([](Tensor x) { return sort(x, 1, [x](const Tensor& a, const Tensor&) { return lt(a, x); }); }, x);
  EXPECT_NE(m.find("sort(f32[4,10])"), std::string::npos) << m;
  m = msg([](Tensor x) { return argsort(x, "t"); }, x);
  EXPECT_NE(m.find("argsort(f32[4,10])"), std::string::npos) << m;
}

}  // namespace
}  // namespace radix
