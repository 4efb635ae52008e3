// Prompt matmuls computed with their operands swapped (x · Wᵀ as (W · xᵀ)ᵀ:
// the packed schedule packs x instead of W) and the transposes that put
// their products back in place, tiled T x T: every ISA's tiling, 1 and 2
// threads, against double loops; the schedule summary says which form each
// op took.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
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

const DotDims kTimesWeights{{}, {}, {1}, {1}};  // x[m, k] · W[n, k]ᵀ

// Options for one ISA's tiling and thread count, the schedule script dumped
// into `dir`.
CompileFnOptions options(const IsaCase& c, int threads, const fs::path& dir) {
  return testing::isa_options(c, threads, {"schedule-script"}, dir);
}

// The schedule summary: the script's first line.
std::string summary(const fs::path& dir) {
  const std::string script = testing::stage_dump(dir, "schedule-script.mlir");
  return script.substr(0, script.find('\n'));
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The summary in `dir` names every one of `parts`, and tiled transposes
// exactly when `tiled`.
void expect_summary(const fs::path& dir, std::initializer_list<const char*> parts, bool tiled) {
  const std::string sum = summary(dir);
  for (const char* part : parts) EXPECT_TRUE(has(sum, part)) << part << " in " << sum;
  EXPECT_EQ(has(sum, "1 tiled transposes"), tiled) << sum;
}

// x[m, k] · W[n, k]ᵀ (+ bias[n], then relu, when `bias` is non-empty) in doubles.
std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& bias,
                             int64_t m, int64_t n, int64_t k) {
  std::vector<float> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias.empty() ? 0.0 : bias[static_cast<size_t>(j)];
      for (int64_t c = 0; c < k; ++c)
        acc += double(x[static_cast<size_t>(i * k + c)]) * w[static_cast<size_t>(j * k + c)];
      if (!bias.empty()) acc = acc > 0 ? acc : 0;
      y[static_cast<size_t>(i * n + j)] = static_cast<float>(acc);
    }
  return y;
}

struct Mnk {
  int64_t m, n, k;
};

// The rows a swapped product takes in whole panels: two vectors' worth, or
// one on 32-register ISAs below 128 rows (one-vector panels).
int64_t step(int64_t m, const IsaCase& c) {
  return c.isa.registers >= 32 && m < 128 ? c.isa.f32_lanes : 2 * c.isa.f32_lanes;
}

// Whether the schedule swaps x[m, k] · W[n, k]ᵀ (m rows) on ISA `c`: a
// prompt (16 to 512 rows, packed) with N >= 2M and K >= `depth` M whose
// rows fill whole panels.
bool swaps(int64_t m, const Mnk& s, const IsaCase& c, int64_t depth = 4) {
  return m >= 16 && m <= 512 && s.n >= 2 * m && s.k >= depth * m && m % step(m, c) == 0 &&
         m * s.n * s.k >= (int64_t{1} << 20);
}

// Whether the packed schedule, unswapped, pads the rows: m is no whole
// number of register tiles (8 rows on AVX-512, else 4) and more than 4
// rows past them, or W is larger than 1 MiB.
bool pads_rows(const Mnk& s, const IsaCase& c) {
  const int64_t rest = s.m % (c.isa.registers >= 32 ? 8 : 4);
  return rest != 0 && !(rest <= 4 && s.n * s.k * 4 <= (int64_t{1} << 20));
}

// How the product is computed: swapped whole, split (its whole panels of
// rows swapped, the 1-16 rows after them a product of their own: from K >=
// M on where the rows would otherwise be padded), or not swapped.
enum class Form { kPlain, kSwapped, kSplit };
Form expected_form(const Mnk& s, const IsaCase& c) {
  const int64_t panel = step(s.m, c), rest = s.m % panel;
  if (swaps(s.m, s, c)) return Form::kSwapped;
  if (s.m > panel && rest >= 1 && rest <= 16 && swaps(s.m - rest, s, c, pads_rows(s, c) ? 1 : 4))
    return Form::kSplit;
  return Form::kPlain;
}

TEST(SwappedMatmul, PromptTimesWeightsOnEveryIsa) {
  // Swapped everywhere (48 rows on AVX-512 in one-vector panels); split on
  // every ISA (33 = 32 + 1 rows); too deep a product for its rows (K < 4M);
  // the same with widths no standard block divides; 37 rows (K < 4M) times a
  // 1.5 MiB W (K = 3 M), whose rows the packed schedule would pad: split
  // and swapped; a 128-token prompt times Llama-110M-wide weights (K = 768:
  // one K block on AVX-512).
  for (Mnk s : {Mnk{32, 256, 256}, Mnk{48, 256, 256}, Mnk{33, 512, 256}, Mnk{128, 512, 256}, Mnk{32, 96, 352},
                Mnk{64, 128, 256}, Mnk{37, 4096, 96}, Mnk{128, 1024, 768}}) {
    const Shape xs(DType::kF32, {s.m, s.k}), ws(DType::kF32, {s.n, s.k});
    const std::vector<float> x = testing::random_vec<float>(size_t(s.m * s.k), -1, 1, 61);
    const std::vector<float> w = testing::random_vec<float>(size_t(s.n * s.k), -1, 1, 62);
    const std::vector<float> want = reference(x, w, {}, s.m, s.n, s.k);
    const std::string shape = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    for (const IsaCase& c : kIsas)
      for (int threads : {1, 2}) {
        SCOPED_TRACE(shape + " " + c.name + " threads " + std::to_string(threads));
        const fs::path dir = fs::temp_directory_path() / ("radix-swap-" + std::to_string(::getpid()));
        auto exe = must(compile_fn(
            cpu(), options(c, threads, dir), [](Tensor a, Tensor b) { return dot_general(a, b, kTimesWeights); }, xs,
            ws));
        EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
        Buffer out = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w))));
        // f32 sums of <= 768 products of values in [-1, 1] against doubles
        // (at 768 terms an absolute 1e-5 failed where a sum is near 0).
        EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-5, 2e-5));
        const std::string sum = summary(dir);
        const Form form = expected_form(s, c);
        const bool swap = form != Form::kPlain;
        EXPECT_TRUE(has(sum, form == Form::kSplit ? "2 matmuls (" : "1 matmuls (1 packed)")) << sum;
        EXPECT_EQ(has(sum, "1 operand-swapped"), swap) << sum;
        EXPECT_EQ(has(sum, "1 split"), form == Form::kSplit) << sum;
        // The rest of a split whose rows the packed schedule pads (37 = 32 +
        // 5) is padded to its tile; nothing else is.
        EXPECT_TRUE(has(sum, form == Form::kSplit && pads_rows(s, c) ? "1 padded" : "0 padded")) << sum;
        // Swapped, the [n, m] product is transposed back in T x T tiles (T =
        // 16 or 8 lanes; SSE's 4-lane tiling keeps rows of lanes).
        EXPECT_EQ(has(sum, "1 tiled transposes"), swap && c.isa.f32_lanes >= 8) << sum;
        if (form != Form::kSplit) EXPECT_EQ(has(sum, "1 elementwise"), swap) << sum;
        // K = 768 in one block where the packed prompt's 768 rows are at
        // most 576 KiB (AVX-512 only).
        if (s.k == 768 && c.isa.registers >= 32)
          EXPECT_TRUE(has(testing::stage_dump(dir, "schedule-script.mlir"), "tile_sizes [0, 0, 768, 0]")) << shape;
        fs::remove_all(dir);
      }
  }
}

// An elementwise consumer of a swapped product reads it through a transposed
// map (one op over memory, not a transpose and then the consumer): bias +
// relu, SwiGLU's silu(x · W1ᵀ) * (x · W3ᵀ) over two swapped products; a
// product also returned as it is keeps a transpose of its own; a softmax
// after the bias add keeps its row fusion.
TEST(SwappedMatmul, ConsumersTransposeInTheirTiles) {
  const int64_t m = 32, n = 256, k = 256;
  const Shape xs(DType::kF32, {m, k}), ws(DType::kF32, {n, k}), bs(DType::kF32, {n});
  const std::vector<float> x = testing::random_vec<float>(size_t(m * k), -1, 1, 71);
  // Weights in [-1/8, 1/8]: products of size ~1, so that silu(g) * u does
  // not magnify the f32 rounding of g and u past the tolerance.
  const std::vector<float> w = testing::random_vec<float>(size_t(n * k), -0.125, 0.125, 72);
  const std::vector<float> w3 = testing::random_vec<float>(size_t(n * k), -0.125, 0.125, 73);
  const std::vector<float> bias = testing::random_vec<float>(size_t(n), -1, 1, 74);
  const std::vector<float> want = reference(x, w, bias, m, n, k);
  const std::vector<float> g = reference(x, w, {}, m, n, k), u = reference(x, w3, {}, m, n, k);
  std::vector<float> want_swiglu(g.size());
  for (size_t i = 0; i < g.size(); ++i) want_swiglu[i] = float(double(g[i]) / (1 + std::exp(-double(g[i]))) * u[i]);
  for (const IsaCase& c : kIsas)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(c.name) + " threads " + std::to_string(threads));
      const fs::path dir = fs::temp_directory_path() / ("radix-swapc-" + std::to_string(::getpid()));
      const bool tiled = c.isa.f32_lanes >= 8;
      {
        auto exe = must(compile_fn(
            cpu(), options(c, threads, dir),
            [](Tensor a, Tensor wt, Tensor b) { return relu(dot_general(a, wt, kTimesWeights) + b); }, xs, ws, bs));
        Buffer out =
            must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w)), must(cpu().buffer(bs, bias))));
        EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-5, 2e-5));
        expect_summary(dir, {"1 operand-swapped", "1 elementwise"}, tiled);  // the consumer, nothing else
      }
      {
        auto exe = must(compile_fn(
            cpu(), options(c, threads, dir),
            [](Tensor a, Tensor w1, Tensor w3t) {
              return silu(dot_general(a, w1, kTimesWeights)) * dot_general(a, w3t, kTimesWeights);
            },
            xs, ws, ws));
        Buffer out = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w)), must(cpu().buffer(ws, w3))));
        // silu's exp is the backend's polynomial (relative error ~1e-7).
        EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want_swiglu, 1e-5, 1e-5));
        expect_summary(dir, {"2 matmuls (2 packed), 1 elementwise", "2 operand-swapped"}, tiled);
      }
      {
        auto exe = must(compile_fn(
            cpu(), options(c, threads, dir),
            [](Tensor a, Tensor wt) {
              Tensor y = dot_general(a, wt, kTimesWeights);
              return std::vector<Tensor>{y, relu(y)};
            },
            xs, ws));
        auto outs = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w))));
        const std::vector<float> y = must(outs[0].to_host<float>()), r = must(outs[1].to_host<float>());
        EXPECT_TRUE(testing::all_close(y, g, 1e-5, 1e-5));
        for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(r[i], y[i] > 0 ? y[i] : 0.0f) << i;
        expect_summary(dir, {"1 operand-swapped", "2 elementwise"}, tiled);  // the transpose, then relu
      }
      {
        // A row-fused consumer group (softmax) after the bias add: the add,
        // which reads the product across its rows, runs on its own in square
        // tiles; the softmax group over its output.
        auto exe = must(compile_fn(
            cpu(), options(c, threads, dir),
            [](Tensor a, Tensor wt, Tensor b) { return softmax(dot_general(a, wt, kTimesWeights) + b, -1); }, xs, ws,
            bs));
        Buffer out =
            must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w)), must(cpu().buffer(bs, bias))));
        std::vector<float> want_sm(g.size());
        for (int64_t i = 0; i < m; ++i) {
          double mx = -1e300, total = 0;
          for (int64_t j = 0; j < n; ++j) mx = std::max(mx, double(g[size_t(i * n + j)]) + bias[size_t(j)]);
          for (int64_t j = 0; j < n; ++j) total += std::exp(double(g[size_t(i * n + j)]) + bias[size_t(j)] - mx);
          for (int64_t j = 0; j < n; ++j)
            want_sm[size_t(i * n + j)] = float(std::exp(double(g[size_t(i * n + j)]) + bias[size_t(j)] - mx) / total);
        }
        // exp is the backend's polynomial; the sums reassociate.
        EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want_sm, 1e-5, 1e-7));
        expect_summary(dir, {"1 operand-swapped", "1 row-fused groups"}, tiled);
      }
      fs::remove_all(dir);
    }
}

// Transposes of the innermost axis, alone and with arithmetic fused in, are
// tiled T x T where both axes hold a tile (the rows and columns past the
// last whole tile split off as loops: [24, 40] and [20, 36] on AVX-512,
// [20, 36] on AVX2), and copy every value exactly; [12, 40] (under 16 rows)
// keeps rows of lanes on AVX-512 and is exact too, as does a per-row value
// broadcast along the rows.
TEST(SwappedMatmul, InnermostTransposesTileSquare) {
  struct Case {
    std::vector<int64_t> dims;
    Axes perm;
    bool tiles_on_avx512, tiles_on_avx2;
  };
  for (const Case& t : {Case{{64, 48}, {1, 0}, true, true}, Case{{2, 32, 16}, {0, 2, 1}, true, true},
                        Case{{24, 40}, {1, 0}, true, true}, Case{{20, 36}, {1, 0}, true, true},
                        Case{{12, 40}, {1, 0}, false, true}, Case{{6, 36}, {1, 0}, false, false}}) {
    const Shape xs(DType::kF32, t.dims);
    std::vector<int64_t> out_dims;
    for (const Axis& a : t.perm) out_dims.push_back(t.dims[static_cast<size_t>(a.index())]);
    const Shape ys(DType::kF32, out_dims);
    const std::vector<float> x = testing::random_vec<float>(size_t(xs.count()), -1, 1, 81);
    const std::vector<float> y = testing::random_vec<float>(size_t(ys.count()), -1, 1, 82);
    // The naive transpose (and x transposed + y) by strides.
    std::vector<float> want_t(x.size()), want_sum(x.size());
    const size_t rank = t.dims.size();
    std::vector<int64_t> in_strides(rank, 1);
    for (size_t d = rank - 1; d > 0; --d) in_strides[d - 1] = in_strides[d] * t.dims[d];
    std::vector<int64_t> idx(rank, 0);
    for (size_t o = 0; o < want_t.size(); ++o) {
      int64_t src = 0;
      for (size_t d = 0; d < rank; ++d) src += idx[d] * in_strides[static_cast<size_t>(t.perm[d].index())];
      want_t[o] = x[static_cast<size_t>(src)];
      want_sum[o] = x[static_cast<size_t>(src)] + y[o];
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < out_dims[d]) break;
        idx[d] = 0;
      }
    }
    for (const IsaCase& c : kIsas)
      for (int threads : {1, 2}) {
        SCOPED_TRACE(xs.to_string() + " " + c.name + " threads " + std::to_string(threads));
        const bool tiled = c.isa.f32_lanes == 16 ? t.tiles_on_avx512 : c.isa.f32_lanes == 8 && t.tiles_on_avx2;
        const fs::path dir = fs::temp_directory_path() / ("radix-swapt-" + std::to_string(::getpid()));
        const Axes perm = t.perm;
        auto plain = must(compile_fn(
            cpu(), options(c, threads, dir), [perm](Tensor a) { return transpose(a, perm); }, xs));
        expect_summary(dir, {}, tiled);
        EXPECT_EQ(must(must(plain.call(must(cpu().buffer(xs, x)))).to_host<float>()), want_t);
        auto fused = must(compile_fn(
            cpu(), options(c, threads, dir), [perm](Tensor a, Tensor b) { return transpose(a, perm) + b; }, xs, ys));
        expect_summary(dir, {}, tiled);
        EXPECT_EQ(must(must(fused.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ys, y)))).to_host<float>()),
                  want_sum);
        fs::remove_all(dir);
      }
  }
  // A value per row broadcast along the row is no transpose: rows of lanes.
  const Shape xs(DType::kF32, {64, 48}), cs(DType::kF32, {64, 1});
  const std::vector<float> x = testing::random_vec<float>(64 * 48, -1, 1, 83);
  const std::vector<float> col = testing::random_vec<float>(64, -1, 1, 84);
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] + col[i / 48];
  for (const IsaCase& c : kIsas) {
    const fs::path dir = fs::temp_directory_path() / ("radix-swapb-" + std::to_string(::getpid()));
    auto exe = must(compile_fn(cpu(), options(c, 1, dir), [](Tensor a, Tensor b) { return a + b; }, xs, cs));
    expect_summary(dir, {"1 elementwise"}, false);
    EXPECT_EQ(must(must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(cs, col)))).to_host<float>()), want)
        << c.name;
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace radix
