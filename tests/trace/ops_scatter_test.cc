// gather / scatter against references written from StableHLO's definitions,
// on every schedule: rows, elements and windows, several dtypes, size-1
// shapes, out-of-range indices (gather clamps, scatter drops the window),
// duplicate indices (applied in order), user combinations; shape inference
// and errors alone; scatter bufferizes in place.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "trace/op_test_helpers.h"

namespace radix {
namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }
int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

// StableHLO gather, index vector on the last axis, starts clamped.
Vals gather_ref(const Vals& x, const std::vector<int64_t>& xd, const Vals& idx, const std::vector<int64_t>& id,
                const GatherDims& g, const std::vector<int64_t>& out_dims) {
  Vals out;
  const std::vector<int64_t> xs = strides_of(xd);
  const int64_t k_count = id.back();
  for (int64_t lin = 0; lin < count_of(out_dims); ++lin) {
    std::vector<int64_t> at = unravel(lin, out_dims), batch, offs;
    for (size_t r = 0; r < at.size(); ++r) (contains(g.offset_dims, static_cast<int64_t>(r)) ? offs : batch).push_back(at[r]);
    int64_t row = 0;
    for (size_t i = 0; i < batch.size(); ++i) row = row * id[i] + batch[i];
    int64_t p = 0;
    size_t next = 0;
    for (size_t d = 0; d < xd.size(); ++d) {
      int64_t c = contains(g.collapsed_slice_dims, static_cast<int64_t>(d)) ? 0 : offs[next++];
      for (int64_t k = 0; k < k_count; ++k)
        if (g.start_index_map[static_cast<size_t>(k)] == static_cast<int64_t>(d))
          c += clampi(static_cast<int64_t>(idx[static_cast<size_t>(row * k_count + k)]), 0,
                      xd[d] - g.slice_sizes[d]);
      p += c * xs[d];
    }
    out.push_back(x[static_cast<size_t>(p)]);
  }
  return out;
}

// StableHLO scatter, updates applied in order; a window that does not fit is dropped.
Vals scatter_ref(Vals x, const std::vector<int64_t>& xd, const Vals& idx, const std::vector<int64_t>& id,
                 const Vals& upd, const std::vector<int64_t>& ud, const ScatterDims& s,
                 const std::function<Val(Val, Val)>& f) {
  const std::vector<int64_t> xs = strides_of(xd);
  const int64_t k_count = id.back();
  // Window sizes per axis of x.
  std::vector<int64_t> win(xd.size(), 1);
  for (size_t d = 0, next = 0; d < xd.size(); ++d)
    if (!contains(s.inserted_window_dims, static_cast<int64_t>(d))) win[d] = ud[static_cast<size_t>(s.update_window_dims[next++])];
  // Updates visited batch-major, then window-major: that is the order the op applies them.
  std::vector<int64_t> batch_axes;
  for (int64_t u = 0; u < static_cast<int64_t>(ud.size()); ++u)
    if (!contains(s.update_window_dims, u)) batch_axes.push_back(u);
  int64_t n_count = 1, w_count = 1;
  for (int64_t u : batch_axes) n_count *= ud[static_cast<size_t>(u)];
  for (int64_t w : win) w_count *= w;
  const std::vector<int64_t> us = strides_of(ud);
  for (int64_t n = 0; n < n_count; ++n) {
    std::vector<int64_t> start(xd.size(), 0);
    bool fits = true;
    for (int64_t k = 0; k < k_count; ++k) {
      const size_t a = static_cast<size_t>(s.scatter_dims_to_operand_dims[static_cast<size_t>(k)]);
      const Val v = idx[static_cast<size_t>(n * k_count + k)];
      fits &= v >= 0 && v <= static_cast<Val>(xd[a] - win[a]);
      start[a] = static_cast<int64_t>(v);
    }
    if (!fits) continue;
    std::vector<int64_t> bat(batch_axes.size());
    for (int64_t r = n, i = static_cast<int64_t>(bat.size()) - 1; i >= 0; --i) {
      bat[static_cast<size_t>(i)] = r % ud[static_cast<size_t>(batch_axes[static_cast<size_t>(i)])];
      r /= ud[static_cast<size_t>(batch_axes[static_cast<size_t>(i)])];
    }
    for (int64_t w = 0; w < w_count; ++w) {
      std::vector<int64_t> wat = unravel(w, win);
      int64_t xp = 0, up = 0;
      for (size_t d = 0; d < xd.size(); ++d) xp += (start[d] + wat[d]) * xs[d];
      for (size_t i = 0; i < bat.size(); ++i) up += bat[i] * us[static_cast<size_t>(batch_axes[i])];
      for (size_t d = 0, next = 0; d < xd.size(); ++d)
        if (!contains(s.inserted_window_dims, static_cast<int64_t>(d)))
          up += wat[d] * us[static_cast<size_t>(s.update_window_dims[next++])];
      x[static_cast<size_t>(xp)] = f(x[static_cast<size_t>(xp)], upd[static_cast<size_t>(up)]);
    }
  }
  return x;
}

Vals ints(size_t n, double lo, double hi, uint32_t seed) {
  Vals v = rand_vals(n, lo, hi, seed);
  for (Val& x : v) x = std::floor(x);
  return v;
}

TEST(ScatterOps, GatherRowsElementsAndWindows) {
  on_every_schedule([] {
    for (DType d : {DType::kF32, DType::kI64, DType::kF16, DType::kU8}) {
      SCOPED_TRACE(dtype_name(d));
      // Rows of x[5, 3] by ids [4, 1] (-1 and 7 clamp to rows 0 and 4);
      // elements of x by [6, 2] coordinates; 2x3 windows by [2, 2] starts.
      const std::vector<int64_t> xd = {5, 3};
      const Shape x = shape_of(d, xd, {"n", "d"});
      const Vals xv = quantize(d, ints(15, 0, 100, 5));
      // Window starts: 4 clamps to 3 (= 5 - 2), -2 to 0.
      const Vals rows = {2, -1, 7, 4}, elems = {0, 0, 4, 2, -3, 1, 9, 9, 2, 1, 3, 0}, wins = {1, 1, 4, -2};
      const Shape ri(DType::kI32, {4, 1}, {"k", "c"}), ei(DType::kI64, {6, 2}), wi(DType::kI16, {2, 2});
      GatherDims wg{{1, 2}, {}, {0, 1}, {2, 2}};
      Outs o = run([&](Tensor t, Tensor r, Tensor e, Tensor w) {
        return std::vector<Tensor>{gather(t, r, {"n"}), gather(t, e, {0, 1}), gather(t, w, wg),
                                   gather(t, e, {1, 0})};
      }, {xv, rows, elems, wins}, x, ri, ei, wi);
      const GatherDims rg = infer::gather_dims(x, ri, {"n"});
      EXPECT_EQ(o.shapes[0], shape_of(d, {4, 3}, {"k", "d"}));
      EXPECT_TRUE(close(o.values[0], gather_ref(xv, xd, rows, {4, 1}, rg, {4, 3}), d));
      const GatherDims eg = infer::gather_dims(x, ei, {0, 1});
      EXPECT_EQ(o.shapes[1], shape_of(d, {6}));
      EXPECT_TRUE(close(o.values[1], gather_ref(xv, xd, elems, {6, 2}, eg, {6}), d));
      EXPECT_EQ(o.shapes[2], shape_of(d, {2, 2, 2}, {"", "n", "d"}));
      EXPECT_TRUE(close(o.values[2], gather_ref(xv, xd, wins, {2, 2}, wg, {2, 2, 2}), d));
      const GatherDims eg2 = infer::gather_dims(x, ei, {1, 0});
      EXPECT_TRUE(close(o.values[3], gather_ref(xv, xd, elems, {6, 2}, eg2, {6}), d));
    }
    // Size one everywhere, and a batch of rank 2.
    const Shape one(DType::kF32, {1}), oi(DType::kI32, {1, 1});
    Outs p = run([](Tensor t, Tensor i) { return gather(t, i, {0}); }, {{3.5}, {5}}, one, oi);
    EXPECT_TRUE(close(p.values[0], {3.5}, DType::kF32));
    const Shape t3(DType::kF32, {3, 4, 5}), bi(DType::kI32, {2, 3, 1});
    const Vals tv = ints(60, -50, 50, 9), bv = {0, 2, 1, 3, -1, 2};
    Outs q = run([](Tensor t, Tensor i) { return gather(t, i, {1}); }, {tv, bv}, t3, bi);
    const GatherDims qg = infer::gather_dims(t3, bi, {1});
    EXPECT_EQ(q.shapes[0], Shape(DType::kF32, {2, 3, 3, 5}));
    EXPECT_TRUE(close(q.values[0], gather_ref(tv, {3, 4, 5}, bv, {2, 3, 1}, qg, {2, 3, 3, 5}), DType::kF32));
  });
}

TEST(ScatterOps, ScatterModesDuplicatesAndDroppedUpdates) {
  on_every_schedule([] {
    for (DType d : {DType::kF32, DType::kI32, DType::kU8, DType::kF64}) {
      SCOPED_TRACE(dtype_name(d));
      const std::vector<int64_t> xd = {5, 3};
      const Shape x = shape_of(d, xd);
      const Vals xv = quantize(d, ints(15, 0, 50, 2));
      // Rows 1 and 3 twice (in order), -1 and 5 dropped.
      const Vals rows = {1, 3, -1, 1, 5, 3, 0};
      const Shape ri(DType::kI32, {7, 1}), ru = shape_of(d, {7, 3});
      const Vals uv = quantize(d, ints(21, 0, 40, 4));
      const ScatterMode modes[] = {ScatterMode::kSet, ScatterMode::kAdd, ScatterMode::kMin, ScatterMode::kMax};
      Outs o = run([&](Tensor t, Tensor i, Tensor u) {
        std::vector<Tensor> r;
        for (ScatterMode m : modes) r.push_back(scatter(t, i, u, {0}, m));
        r.push_back(scatter(t, i, u, {0}, [](const Tensor& old, const Tensor& up) { return old * 2.0 + up; }));
        return r;
      }, {xv, rows, uv}, x, ri, ru);
      const ScatterDims sd = infer::scatter_dims(x, ri, ru, {0});
      const std::function<Val(Val, Val)> fs[] = {
          [](Val, Val u) { return u; },
          [d](Val a, Val u) { return wrap(d, a + u); },
          [](Val a, Val u) { return std::min(a, u); },
          [](Val a, Val u) { return std::max(a, u); },
          [d](Val a, Val u) { return wrap(d, a * 2 + u); },
      };
      for (size_t k = 0; k < 5; ++k) {
        SCOPED_TRACE("mode " + std::to_string(k));
        EXPECT_EQ(o.shapes[k], x);
        EXPECT_TRUE(close(o.values[k], scatter_ref(xv, xd, rows, {7, 1}, uv, {7, 3}, sd, fs[k]), d, 1e-6));
      }
    }
  });
}

TEST(ScatterOps, ScatterElementsWindowsAndUserCombination) {
  on_every_schedule([] {
    // Elements of x[4, 6] by [6, 2] coordinates (duplicates accumulate, out
    // of range dropped), in f32 with a user max-abs combination too.
    const std::vector<int64_t> xd = {4, 6};
    const Shape x(DType::kF32, {4, 6}, {"r", "c"}), ei(DType::kI64, {6, 2}), eu(DType::kF32, {6});
    const Vals xv = quantize(DType::kF32, rand_vals(24, -5, 5, 1));
    const Vals elems = {0, 0, 3, 5, 0, 0, 4, 1, 2, -1, 3, 5};
    const Vals uv = quantize(DType::kF32, rand_vals(6, -9, 9, 2));
    // 2x3 windows into x at [3, 2] starts (the last one runs past the end: dropped).
    const Shape wi(DType::kI32, {3, 2}), wu(DType::kF32, {3, 2, 3});
    const Vals wins = {0, 0, 2, 3, 1, 4};
    const Vals wv = quantize(DType::kF32, rand_vals(18, -9, 9, 3));
    const ScatterDims wd{{1, 2}, {}, {0, 1}};
    Outs o = run([&](Tensor t, Tensor e, Tensor u, Tensor w, Tensor wu_) {
      auto max_abs = [](const Tensor& old, const Tensor& up) { return select(gt(abs(up), abs(old)), up, old); };
      return std::vector<Tensor>{scatter(t, e, u, {"r", "c"}, ScatterMode::kAdd), scatter(t, e, u, {0, 1}, max_abs),
                                 scatter(t, w, wu_, wd, ScatterMode::kSet), scatter(t, w, wu_, wd, ScatterMode::kAdd)};
    }, {xv, elems, uv, wins, wv}, x, ei, eu, wi, wu);
    const ScatterDims ed = infer::scatter_dims(x, ei, eu, {0, 1});
    auto add = [](Val a, Val u) { return static_cast<Val>(static_cast<float>(a + u)); };
    auto max_abs = [](Val a, Val u) { return std::fabs(u) > std::fabs(a) ? u : a; };
    EXPECT_EQ(o.shapes[0], x);
    EXPECT_TRUE(close(o.values[0], scatter_ref(xv, xd, elems, {6, 2}, uv, {6}, ed, add), DType::kF32));
    EXPECT_TRUE(close(o.values[1], scatter_ref(xv, xd, elems, {6, 2}, uv, {6}, ed, max_abs), DType::kF32));
    EXPECT_TRUE(close(o.values[2], scatter_ref(xv, xd, wins, {3, 2}, wv, {3, 2, 3}, wd, [](Val, Val u) { return u; }),
                      DType::kF32));
    EXPECT_TRUE(close(o.values[3], scatter_ref(xv, xd, wins, {3, 2}, wv, {3, 2, 3}, wd, add), DType::kF32));

    // Window axes first in updates (update_window_dims = {0}), a bool x,
    // and size-1 shapes.
    const Shape bx(DType::kBool, {3, 4}), bi(DType::kU8, {2, 1}), bu(DType::kBool, {3, 2});
    const ScatterDims bd{{0}, {1}, {1}};
    const Vals bxv = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}, biv = {3, 0}, buv = {1, 0, 1, 1, 0, 0};
    Outs p = run([&](Tensor t, Tensor i, Tensor u) { return scatter(t, i, u, bd, ScatterMode::kSet); },
                 {bxv, biv, buv}, bx, bi, bu);
    EXPECT_TRUE(close(p.values[0], scatter_ref(bxv, {3, 4}, biv, {2, 1}, buv, {3, 2}, bd, [](Val, Val u) { return u; }),
                      DType::kBool));
    const Shape one(DType::kI32, {1}), oi(DType::kI32, {1, 1});
    Outs q = run([](Tensor t, Tensor i, Tensor u) { return scatter(t, i, u, {0}, ScatterMode::kAdd); }, {{4}, {0}, {3}},
                 one, oi, one);
    EXPECT_TRUE(close(q.values[0], {7}, DType::kI32));
  });
}

TEST(ScatterOps, MiddleAxisAndUnbatchedIndices) {
  on_every_schedule([] {
    // Slices along the middle axis of x[3, 4, 5]: gather gives [k, 3, 5];
    // scatter-add writes them back (index 2 twice, 4 dropped).
    const std::vector<int64_t> xd = {3, 4, 5};
    const Shape x(DType::kI32, {3, 4, 5}, {"a", "b", "c"}), ki(DType::kI32, {4, 1}), ku(DType::kI32, {4, 3, 5});
    const Vals xv = ints(60, -20, 20, 12), kv = {2, 0, 4, 2}, uv = ints(60, -9, 9, 13);
    // Unbatched: one coordinate vector (indices [2]) selects one element.
    const Shape pi(DType::kI64, {2});
    const Vals pv = {2, 3};
    Outs o = run([](Tensor t, Tensor k, Tensor u, Tensor p) {
      return std::vector<Tensor>{scatter(t, k, u, {"b"}, ScatterMode::kAdd), gather(t, k, {"b"}),
                                 gather(reshape(t, {12, 5}), p, {0, 1}),
                                 scatter(t, k, u, {1}, ScatterMode::kMax)};
    }, {xv, kv, uv, pv}, x, ki, ku, pi);
    const ScatterDims sd = infer::scatter_dims(x, ki, ku, {1});
    EXPECT_TRUE(close(o.values[0], scatter_ref(xv, xd, kv, {4, 1}, uv, {4, 3, 5}, sd,
                                               [](Val a, Val u) { return a + u; }), DType::kI32));
    EXPECT_EQ(o.shapes[1], Shape(DType::kI32, {4, 3, 5}, {"", "a", "c"}));
    EXPECT_TRUE(close(o.values[1], gather_ref(xv, xd, kv, {4, 1}, infer::gather_dims(x, ki, {1}), {4, 3, 5}),
                      DType::kI32));
    EXPECT_EQ(o.shapes[2], Shape(DType::kI32));
    EXPECT_TRUE(close(o.values[2], {xv[13]}, DType::kI32));
    EXPECT_TRUE(close(o.values[3], scatter_ref(xv, xd, kv, {4, 1}, uv, {4, 3, 5}, sd,
                                               [](Val a, Val u) { return std::max(a, u); }), DType::kI32));
  });
}

std::string read_dumps(const std::string& dir) {
  std::string text;
  text = testing::all_stage_dumps(dir);
  return text;
}

using testing::count_of;

TEST(ScatterOps, ScatterBufferizesInPlace) {
  // After bufferization the loops load and store one buffer directly: x (a
  // read-only input) is copied once before them, never inside.
  const std::string dir = ::testing::TempDir() + "radix_scatter_dump";
  std::filesystem::remove_all(dir);
  CompileFnOptions opts;
  opts.compile.diagnostics.dump = {"bufferize"};
  opts.compile.diagnostics.dump_dir = dir;
  auto exe = compile_fn(cpu(), opts, [](Tensor t, Tensor i, Tensor u) {
    return scatter(t, i, u, {0}, [](const Tensor& a, const Tensor& b) { return maximum(a, b) + 1.0; });
  }, Shape(DType::kF32, {64, 16}), Shape(DType::kI32, {100, 1}), Shape(DType::kF32, {100, 16}));
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  const std::string text = read_dumps(dir);
  const size_t loop = text.find("scf.for"), end = text.rfind("memref.copy");
  ASSERT_NE(loop, std::string::npos) << text;
  ASSERT_TRUE(end != std::string::npos && end > loop) << text;
  const std::string loops = text.substr(loop, end - loop);
  EXPECT_EQ(count_of(loops, "memref.alloc"), 0u) << text;
  EXPECT_EQ(count_of(loops, "memref.copy") + count_of(loops, "linalg.copy"), 0u) << text;
  EXPECT_EQ(count_of(loops, "memref.store"), 1u) << text;
  EXPECT_LE(count_of(text, "memref.alloc"), 1u) << text;
  std::filesystem::remove_all(dir);
}

TEST(ScatterOps, ShapeInferenceAndErrors) {
  const Shape x(DType::kF32, {4, 6}, {"r", "c"}), ids(DType::kI32, {2, 1}, {"k", ""});
  EXPECT_EQ(infer::gather(x, ids, infer::gather_dims(x, ids, {"c"})), Shape(DType::kF32, {2, 4}, {"k", "r"}));
  EXPECT_EQ(infer::gather(x, Shape(DType::kI32, {3, 2}), GatherDims{{1, 2}, {}, {0, 1}, {2, 3}}),
            Shape(DType::kF32, {3, 2, 3}, {"", "r", "c"}));
  EXPECT_EQ(infer::scatter(x, ids, Shape(DType::kF32, {2, 4}), infer::scatter_dims(x, ids, Shape(DType::kF32, {2, 4}), {1})), x);
  auto throws = [](auto&& f, std::initializer_list<const char*> needles) {
    try {
      f();
      ADD_FAILURE() << "no TraceError";
    } catch (const TraceError& e) {
      for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  };
  throws([&] { infer::gather_dims(x, Shape(DType::kF32, {2, 1}), {0}); }, {"gather(f32[r=4,c=6], f32[2,1])", "integer dtype"});
  throws([&] { infer::gather_dims(x, Shape(DType::kI32, {2, 2}), {0}); }, {"gather(f32[r=4,c=6], i32[2,2])", "has size 2 but 1"});
  throws([&] { infer::gather_dims(x, ids, {"q"}); }, {"gather(f32[r=4,c=6], i32[k=2,1])", "'q'"});
  throws([&] { infer::gather(x, Shape(DType::kI32, {3, 2}), GatherDims{{1, 2}, {}, {0, 1}, {5, 3}}); },
         {"gather(f32[r=4,c=6], i32[3,2])", "slice size 5 on axis 0"});
  throws([&] { infer::gather(x, Shape(DType::kI32, {3, 2}), GatherDims{{1}, {0}, {0, 1}, {2, 3}}); },
         {"gather(f32[r=4,c=6], i32[3,2])", "collapsed axis 0 needs slice size 1"});
  throws([&] { infer::gather(x, Shape(DType::kI32, {3, 2}), GatherDims{{1, 2}, {}, {0, 0}, {2, 3}}); },
         {"start_index_map [0, 0]"});
  throws([&] { infer::scatter_dims(x, ids, Shape(DType::kF32, {2, 5}), {1}); },
         {"scatter(f32[r=4,c=6], i32[k=2,1], f32[2,5])", "updates must have dims [2, 4]"});
  throws([&] { infer::scatter(x, ids, Shape(DType::kF32, {3, 4}), ScatterDims{{1}, {1}, {1}}); },
         {"scatter(f32[r=4,c=6], i32[k=2,1], f32[3,4])", "axis 0 of updates has size 3 but batch axis 0 of indices has 2"});
  throws([&] { infer::scatter(x, ids, Shape(DType::kF32, {2, 7}), ScatterDims{{1}, {1}, {1}}); },
         {"window axis 1 of updates (size 7) is larger than axis 0 of x"});
  throws([&] { infer::scatter(x, ids, Shape(DType::kI32, {2, 4}), ScatterDims{{1}, {1}, {1}}); }, {"updates need x's dtype"});
  throws([&] { infer::scatter(x, ids, Shape(DType::kF32, {2, 4}), ScatterDims{{1}, {}, {1}}); },
         {"must cover the 2 axes of x"});

  auto bad = compile_fn(cpu(), [](Tensor t, Tensor i, Tensor u) {
    return scatter(t, i, u, {0}, [](const Tensor& a, const Tensor&) { return convert(a, DType::kI32); });
  }, x, Shape(DType::kI32, {2, 1}), Shape(DType::kF32, {2, 6}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("scatter(f32[r=4,c=6], i32[2,1], f32[2,6]): the body must return a rank-0 f32 tensor"),
            std::string::npos) << bad.status().message();
  auto bad2 = compile_fn(cpu(), [](Tensor t, Tensor i, Tensor u) { return scatter(t, i, u, {0}, ScatterMode::kAdd); },
                         Shape(DType::kBool, {3}), Shape(DType::kI32, {2, 1}), Shape(DType::kBool, {2}));
  ASSERT_FALSE(bad2.ok());
  EXPECT_NE(bad2.status().message().find("scatter(bool[3], i32[2,1], bool[2])"), std::string::npos)
      << bad2.status().message();
}

}  // namespace
}  // namespace radix
