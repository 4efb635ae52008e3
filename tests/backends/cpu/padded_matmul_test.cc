// Matmuls whose sizes no register tile, panel or cache block divides
// (odd prompt lengths, 129³, K = 1023, attention over 301 tokens) are split
// at their last whole tile into products writing their parts of one result,
// or computed on zero-padded operands with their results sliced back out
// (fit_matmuls_to_tiles): every ISA's tiling, 1 and 2 threads, A · B and
// x · Wᵀ, against double loops; the schedule summary says the op was split
// or padded, and tiled.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::IsaCase;
using testing::kIsas;
using testing::must;
namespace fs = std::filesystem;

struct Case {
  int64_t m, n, k;
  bool bt;  // W stored [n, k] (x · Wᵀ), else B [k, n]
};

// The schedule summary says the product was split or padded.
bool fitted(const std::string& summary) { return summary.find("0 padded, 0 split") == std::string::npos; }

std::string name(const Case& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + (s.bt ? " W[n,k]" : " B[k,n]");
}

// x[m, k] times W (as `s.bt` says), plus bias[n] and relu when `bias` is
// non-empty, in doubles.
std::vector<float> reference(const Case& s, const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& bias) {
  std::vector<float> y(size_t(s.m * s.n));
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = bias.empty() ? 0.0 : bias[size_t(j)];
      for (int64_t c = 0; c < s.k; ++c) acc += double(x[size_t(i * s.k + c)]) * w[size_t(s.bt ? j * s.k + c : c * s.n + j)];
      if (!bias.empty()) acc = acc > 0 ? acc : 0;
      y[size_t(i * s.n + j)] = float(acc);
    }
  return y;
}

// Compiles x · W (+ bias, relu) for one ISA and thread count, checks it
// against the reference and returns the schedule summary (and the whole
// schedule script in `whole`, when given).
std::string run(const Case& s, const IsaCase& c, int threads, bool with_bias, std::string* whole = nullptr) {
  SCOPED_TRACE(name(s) + " " + c.name + " threads " + std::to_string(threads) + (with_bias ? " +bias relu" : ""));
  const Shape xs(DType::kF32, {s.m, s.k}), bs(DType::kF32, {s.n});
  const Shape ws = s.bt ? Shape(DType::kF32, {s.n, s.k}) : Shape(DType::kF32, {s.k, s.n});
  std::vector<float> x = testing::random_vec<float>(size_t(s.m * s.k), -1, 1, 61);
  std::vector<float> w = testing::random_vec<float>(size_t(s.n * s.k), -1, 1, 62);
  std::vector<float> bias = with_bias ? testing::random_vec<float>(size_t(s.n), -1, 1, 63) : std::vector<float>{};
  fs::path dir = fs::temp_directory_path() / ("radix-pad-" + std::to_string(::getpid()) + "-" + c.name);
  CompileFnOptions o = testing::isa_options(c, threads, {"schedule-script"}, dir);
  const DotDims dims{{}, {}, {1}, {s.bt ? 1 : 0}};
  Buffer out;
  if (with_bias) {
    auto exe = must(compile_fn(
        cpu(), o, [dims](Tensor a, Tensor b, Tensor bb) { return relu(dot_general(a, b, dims) + bb); }, xs, ws, bs));
    EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
    out = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w)), must(cpu().buffer(bs, bias))));
  } else {
    auto exe = must(compile_fn(cpu(), o, [dims](Tensor a, Tensor b) { return dot_general(a, b, dims); }, xs, ws));
    EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
    out = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w))));
  }
  EXPECT_EQ(out.shape().to_string(), "f32[" + std::to_string(s.m) + "," + std::to_string(s.n) + "]");
  // f32 sums of k products of magnitude <= 1 against double.
  EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), reference(s, x, w, bias), 1e-5, 2e-6 * double(s.k)));
  const std::string script = testing::stage_dump(dir, "schedule-script.mlir");
  fs::remove_all(dir);
  if (whole) *whole = script;
  return script.substr(0, script.find('\n'));
}

// Sizes with no whole tiles, each split or padded: register-tiled (a prime
// M, N not a multiple of 4), packed (129³, a 257 x 255 x 257 product, 301- and
// 17-row prompts times weights), dot products (odd rows of x, an odd
// number of weight rows, K = 1023 — for a single row of x too; 6 rows of
// x, 2 past a 4-row tile, in a product large enough to pad).
TEST(PaddedMatmul, OddSizesMatchTheLoopOnEveryIsa) {
  const Case cases[] = {{7, 5, 13, false},   {129, 129, 129, false}, {257, 255, 257, false}, {31, 100, 7, false},
                        {129, 129, 129, true}, {301, 96, 40, true},  {17, 2048, 64, true},   {5, 37, 1023, true},
                        {1, 33, 1023, true},   {3, 31, 64, true},     {6, 2048, 64, true}};
  for (const Case& s : cases)
    for (const IsaCase& c : kIsas)
      for (int threads : {1, 2}) {
        const std::string sum = run(s, c, threads, /*with_bias=*/false);
        EXPECT_TRUE(fitted(sum)) << name(s) << " " << c.name << ": " << sum;
        // The product tiled (a fill of an odd width may stay a loop; a
        // prompt a few rows past whole panels is split in two products).
        EXPECT_EQ(sum.find("// schedule: 0 matmuls"), std::string::npos) << name(s) << " " << c.name << ": " << sum;
      }
}

// A batched product, attention's q[b,s,d] · k[b,t,d] -> [b,s,t] (`keys`)
// or p[b,s,t] · v[b,t,d] -> [b,s,d]: its operands' shapes, its name and
// its double loop.
struct Batched {
  int64_t b, s, t, d;
  bool keys;
  int64_t inner() const { return keys ? d : t; }
  int64_t cols() const { return keys ? t : d; }
  Shape a_shape() const { return Shape(DType::kF32, {b, s, inner()}, {"b", "s", "c"}); }
  Shape b_shape() const {
    return keys ? Shape(DType::kF32, {b, cols(), inner()}, {"b", "t", "c"})
                : Shape(DType::kF32, {b, inner(), cols()}, {"b", "c", "t"});
  }
  std::string name() const {
    return std::to_string(b) + "x" + std::to_string(s) + "x" + std::to_string(cols()) + "x" + std::to_string(inner()) +
           (keys ? " q.k" : " p.v");
  }
  std::vector<float> reference(const std::vector<float>& a, const std::vector<float>& w) const {
    const int64_t n = cols(), k = inner();
    std::vector<float> y(size_t(b * s * n));
    for (int64_t bb = 0; bb < b; ++bb)
      for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < k; ++c)
            acc += double(a[size_t((bb * s + i) * k + c)]) * w[size_t(keys ? (bb * n + j) * k + c : (bb * k + c) * n + j)];
          y[size_t((bb * s + i) * n + j)] = float(acc);
        }
    return y;
  }
};

// Batched products with odd sizes (attention over a prompt of 131 or 7
// tokens and a cache of 129 or 301): q[b,s,d] · k[b,t,d] (per batch x · Wᵀ)
// and p[b,s,t] · v[b,t,d], each batch's rows (a prime count: one-row
// tiles) and columns split or padded.
TEST(PaddedMatmul, BatchedOddSizesMatchTheLoopOnEveryIsa) {
  struct Bmk { int64_t b, s, t, d; };
  for (Bmk z : {Bmk{3, 131, 129, 40}, Bmk{2, 7, 301, 24}, Bmk{2, 37, 5, 16}})
    for (bool keys : {true, false})
      for (const IsaCase& c : kIsas)
        for (int threads : {1, 2}) {
          const Batched p{z.b, z.s, z.t, z.d, keys};
          const int64_t inner = p.inner();
          SCOPED_TRACE(p.name() + " " + c.name + " threads " + std::to_string(threads));
          const Shape as = p.a_shape(), bs = p.b_shape();
          std::vector<float> a = testing::random_vec<float>(size_t(z.b * z.s * inner), -1, 1, 64);
          std::vector<float> w = testing::random_vec<float>(size_t(z.b * p.cols() * inner), -1, 1, 65);
          const std::vector<float> want = p.reference(a, w);
          fs::path dir = fs::temp_directory_path() / ("radix-padb-" + std::to_string(::getpid()) + "-" + c.name);
          auto exe = must(compile_fn(cpu(), testing::isa_options(c, threads, {"schedule-script"}, dir),
                                     [](Tensor x, Tensor y) { return dot(x, y, "c"); }, as, bs));
          EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
          Buffer out = must(exe.call(must(cpu().buffer(as, a)), must(cpu().buffer(bs, w))));
          EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-5, 2e-6 * double(inner)));
          const std::string script = testing::stage_dump(dir, "schedule-script.mlir");
          EXPECT_TRUE(fitted(script.substr(0, script.find('\n')))) << script.substr(0, script.find('\n'));
          fs::remove_all(dir);
        }
}

// On threads, a batched product that is split or padded is first split by
// its batch, one scf.forall iteration per thread (batched_products_by_thread):
// each thread pads, multiplies and copies out its own batches, in one
// parallel region, and the parts write the result in place (no buffer of a
// thread's share of the result; q · kᵀ's transposed keys in rows padded to
// whole cache lines). Batches that the threads divide, odd sizes, q · kᵀ
// and p · v, every ISA, 2-4 threads, against the double loop and bit for bit
// against one thread; a batch the threads do not divide keeps the per-part
// foralls.
TEST(PaddedMatmul, BatchedOddSizesSplitByThreadFirst) {
  const std::regex alloc(R"(memref\.alloc\(\)[^\n]*?: memref<([0-9x]+)xf32>)");
  struct Bmk { int64_t b, s, t, d; int threads; bool by_thread; };
  for (Bmk z : {Bmk{12, 301, 301, 64, 2, true}, Bmk{6, 131, 129, 40, 3, true}, Bmk{8, 37, 101, 24, 4, true},
                Bmk{5, 131, 129, 40, 2, false}})
    for (bool keys : {true, false})
      for (const IsaCase& c : kIsas) {
        const Batched p{z.b, z.s, z.t, z.d, keys};
        const int64_t inner = p.inner(), cols = p.cols(), stride = (cols + 15) / 16 * 16;
        SCOPED_TRACE(p.name() + " " + c.name + " threads " + std::to_string(z.threads));
        const Shape as = p.a_shape(), bs = p.b_shape();
        std::vector<float> a = testing::random_vec<float>(size_t(z.b * z.s * inner), -1, 1, 68);
        std::vector<float> w = testing::random_vec<float>(size_t(z.b * cols * inner), -1, 1, 69);
        const std::vector<float> want = p.reference(a, w);
        fs::path dir = fs::temp_directory_path() / ("radix-padt-" + std::to_string(::getpid()) + "-" + c.name);
        auto exe = must(compile_fn(cpu(), testing::isa_options(c, z.threads, {"schedule-script", "bufferize"}, dir),
                                   [](Tensor x, Tensor y) { return dot(x, y, "c"); }, as, bs));
        EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
        Buffer out = must(exe.call(must(cpu().buffer(as, a)), must(cpu().buffer(bs, w))));
        const std::vector<float> got = must(out.to_host<float>());
        EXPECT_TRUE(testing::all_close(got, want, 1e-5, 2e-6 * double(inner)));
        // The same sums in the same order as on one thread: bit for bit.
        auto one = must(compile_fn(cpu(), testing::isa_options(c, 1), [](Tensor x, Tensor y) { return dot(x, y, "c"); },
                                   as, bs));
        EXPECT_EQ(must(must(one.call(must(cpu().buffer(as, a)), must(cpu().buffer(bs, w)))).to_host<float>()), got);
        const std::string script = testing::stage_dump(dir, "schedule-script.mlir");
        const std::string ir = testing::stage_dump(dir, "bufferize.mlir");
        fs::remove_all(dir);
        const std::string summary = script.substr(0, script.find('\n'));
        EXPECT_TRUE(fitted(summary)) << summary;
        EXPECT_EQ(summary.find(", 1 batched by thread") != std::string::npos, z.by_thread) << summary;
        if (!z.by_thread) continue;
        // One region for the product (and one for kᵀ's transpose when it is
        // large enough to be on threads, q · k only).
        ASSERT_NE(ir.find("radix.thread_region"), std::string::npos);
        const size_t foralls = testing::count_of(ir, "scf.forall");
        EXPECT_GE(foralls, 1u);
        EXPECT_LE(foralls, keys ? 2u : 1u) << ir;
        int64_t largest = 0;
        for (auto it = std::sregex_iterator(ir.begin(), ir.end(), alloc); it != std::sregex_iterator(); ++it) {
          int64_t elems = 1;
          std::stringstream dims((*it)[1].str());
          for (std::string d; std::getline(dims, d, 'x');) elems *= std::stoll(d);
          if ((*it)[1].str() != std::to_string(z.b) + "x" + std::to_string(inner) + "x" + std::to_string(keys ? stride : cols))
            largest = std::max(largest, elems);  // (kᵀ, [b, d, t], is an operand, not the result)
        }
        // q · kᵀ: kᵀ's rows padded to a multiple of 16 f32, read through a strided view.
        if (keys && stride != cols)
          EXPECT_NE(ir.find("memref<" + std::to_string(z.b) + "x" + std::to_string(inner) + "x" + std::to_string(stride) +
                            "xf32>"),
                    std::string::npos)
              << ir;
        // (A buffer for all of a thread's share of the result: its parts
        // written there, then copied out.)
        EXPECT_LT(largest, z.b / z.threads * z.s * cols) << "a buffer of " << largest << " floats besides the result";
      }
}

// On one thread, q · kᵀ (traced as a transpose of k and a batch_matmul)
// runs one batch at a time (batched_products_by_batch): a tensor-level loop
// over the batch transposes one head's keys into a [1, d, t] buffer (its
// rows padded to a multiple of 16 f32, read through a strided view, where
// t is not one) and multiplies, so no buffer holds all of kᵀ. p · v (no transpose) and two
// threads (the batch split over them first) keep their form. Tile-dividing
// and odd sizes, every ISA, against the double loop.
TEST(PaddedMatmul, TransposedKeysRunOneBatchAtATimeOnOneThread) {
  struct Bmk { int64_t b, s, t, d; };
  for (Bmk z : {Bmk{12, 128, 128, 64}, Bmk{3, 131, 129, 40}, Bmk{2, 37, 101, 24}})
    for (bool keys : {true, false})
      for (const IsaCase& c : kIsas)
        for (int threads : {1, 2}) {
          const Batched p{z.b, z.s, z.t, z.d, keys};
          const int64_t inner = p.inner(), cols = p.cols();
          SCOPED_TRACE(p.name() + " " + c.name + " threads " + std::to_string(threads));
          const Shape as = p.a_shape(), bs = p.b_shape();
          std::vector<float> a = testing::random_vec<float>(size_t(z.b * z.s * inner), -1, 1, 70);
          std::vector<float> w = testing::random_vec<float>(size_t(z.b * cols * inner), -1, 1, 71);
          const std::vector<float> want = p.reference(a, w);
          fs::path dir = fs::temp_directory_path() / ("radix-bbatch-" + std::to_string(::getpid()) + "-" + c.name);
          auto exe = must(compile_fn(cpu(), testing::isa_options(c, threads, {"schedule-script", "bufferize"}, dir),
                                     [](Tensor x, Tensor y) { return dot(x, y, "c"); }, as, bs));
          EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
          Buffer out = must(exe.call(must(cpu().buffer(as, a)), must(cpu().buffer(bs, w))));
          EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-5, 2e-6 * double(inner)));
          const std::string script = testing::stage_dump(dir, "schedule-script.mlir");
          const std::string ir = testing::stage_dump(dir, "bufferize.mlir");
          fs::remove_all(dir);
          const std::string summary = script.substr(0, script.find('\n'));
          const bool by_batch = keys && threads == 1;
          EXPECT_EQ(summary.find(", 1 one batch at a time") != std::string::npos, by_batch) << summary;
          EXPECT_EQ(summary.find(", 0 one batch at a time") != std::string::npos, !by_batch) << summary;
          if (!keys) continue;
          // kᵀ's buffer: one head's [1, d, t] one batch at a time (rows of
          // a multiple of 16 f32), else all of it.
          const int64_t stride = (cols + 15) / 16 * 16;
          const std::string head = "memref<1x" + std::to_string(inner) + "x" + std::to_string(stride) + "xf32>";
          const std::string all = "memref<" + std::to_string(z.b) + "x" + std::to_string(inner) + "x" +
                                  std::to_string(cols) + "xf32>";
          if (by_batch) {
            EXPECT_NE(ir.find(head), std::string::npos) << ir;
            EXPECT_EQ(ir.find(all), std::string::npos) << ir;
            const std::string view = "memref<1x" + std::to_string(inner) + "x" + std::to_string(cols) + "xf32, strided<[" +
                                     std::to_string(inner * stride) + ", " + std::to_string(stride) + ", 1]>>";
            EXPECT_EQ(ir.find(view) != std::string::npos, stride != cols) << view << "\n" << ir;
          }
        }
}

// The 1-3 columns of B [K, N] past its whole vectors are dot products (a
// row of A times a column of B, along K: tile_reduction_using_for in the
// script, where every other part is register tiles), with K past whole
// vectors (K = 129, 100) a product of its own; 4 columns stay register
// tiles. Every ISA, 1 and 2 threads, against the double loop.
TEST(PaddedMatmul, ColumnRestsRunAsDotProducts) {
  struct Rest {
    Case s;
    bool dots;
  };
  for (const Rest& r : {Rest{{129, 129, 129, false}, true}, Rest{{128, 130, 128, false}, true},
                        Rest{{64, 67, 100, false}, true}, Rest{{128, 132, 128, false}, false}})
    for (const IsaCase& c : kIsas)
      for (int threads : {1, 2}) {
        std::string script;
        const std::string sum = run(r.s, c, threads, /*with_bias=*/false, &script);
        EXPECT_TRUE(fitted(sum)) << name(r.s) << " " << c.name << ": " << sum;
        EXPECT_EQ(script.find("tile_reduction_using_for") != std::string::npos, r.dots)
            << name(r.s) << " " << c.name << " threads " << threads << ": " << sum;
      }
}

// Elementwise consumers of a split or padded product (bias, relu) read its
// result.
TEST(PaddedMatmul, ConsumersReadTheSlice) {
  for (const Case& s : {Case{301, 96, 40, true}, Case{129, 129, 129, false}, Case{7, 5, 13, false}})
    for (const IsaCase& c : kIsas) {
      const std::string sum = run(s, c, 2, /*with_bias=*/true);
      EXPECT_TRUE(fitted(sum)) << name(s) << " " << c.name << ": " << sum;
    }
}

// A split product's main part is computed in place, in the result (the
// rest parts, a few rows or columns, may be padded and copied), nested
// splits included (301 x 301: columns, then rows), and its zero fill is
// fused into the register tiles. As the main part's own buffer copied out,
// or a fill of all of C ahead of the tiles, an attention score matrix
// past L2 ran at 0.7x OpenBLAS.
TEST(PaddedMatmul, SplitMainPartWritesTheResultInPlace) {
  const std::regex alloc(R"(memref\.alloc\(\)[^\n]*?: memref<([0-9x]+)xf32>)");
  for (const Case& s : {Case{301, 301, 64, false}, Case{129, 129, 129, false}, Case{202, 202, 96, false}})
    for (const IsaCase& c : kIsas) {
      SCOPED_TRACE(name(s) + " " + c.name);
      const Shape xs(DType::kF32, {s.m, s.k}), ws(DType::kF32, {s.k, s.n});
      std::vector<float> x = testing::random_vec<float>(size_t(s.m * s.k), -1, 1, 66);
      std::vector<float> w = testing::random_vec<float>(size_t(s.n * s.k), -1, 1, 67);
      fs::path dir = fs::temp_directory_path() / ("radix-split-" + std::to_string(::getpid()) + "-" + c.name);
      auto exe = must(compile_fn(cpu(), testing::isa_options(c, 1, {"schedule-script", "bufferize"}, dir),
                                 [](Tensor a, Tensor b) { return matmul(a, b); }, xs, ws));
      Buffer out = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w))));
      EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), reference(s, x, w, {}), 1e-5, 2e-6 * double(s.k)));
      const std::string script = testing::stage_dump(dir, "schedule-script.mlir");
      const std::string ir = testing::stage_dump(dir, "bufferize.mlir");
      fs::remove_all(dir);
      EXPECT_EQ(script.find("0 split"), std::string::npos) << script.substr(0, script.find('\n'));
      EXPECT_NE(script.find("transform.structured.fuse %"), std::string::npos);
      ASSERT_NE(ir.find("func.func @main"), std::string::npos);
      int64_t largest = 0;
      for (auto it = std::sregex_iterator(ir.begin(), ir.end(), alloc); it != std::sregex_iterator(); ++it) {
        int64_t elems = 1;
        std::stringstream dims((*it)[1].str());
        for (std::string d; std::getline(dims, d, 'x');) elems *= std::stoll(d);
        largest = std::max(largest, elems);
      }
      EXPECT_LT(largest, s.m * s.n / 4) << "a buffer of " << largest << " floats besides the result";
    }
}

// Sizes that tile as they are stay whole and unpadded (the Llama shapes among them),
// and so do decode steps' mat-vecs large enough for the packed schedule
// (one or two rows: padded to a packed tile, W was read at a seventh of the
// rate).
TEST(PaddedMatmul, WholeTilesAreNotPadded) {
  for (const Case& s : {Case{128, 768, 288, true}, Case{256, 256, 256, false}, Case{1, 768, 288, true},
                        Case{6, 48, 40, true}, Case{48, 64, 64, false}, Case{1, 2048, 8192, true},
                        Case{2, 1024, 8192, false}})
    for (const IsaCase& c : kIsas) {
      const std::string sum = run(s, c, 1, /*with_bias=*/false);
      EXPECT_NE(sum.find("0 padded, 0 split"), std::string::npos) << name(s) << " " << c.name << ": " << sum;
    }
}

}  // namespace
}  // namespace radix
