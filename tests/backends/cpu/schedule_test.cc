// The CPU schedule for every vector ISA it supports: the tile sizes chosen for
// SSE, AVX2 and AVX-512 are all checked for correctness on this machine (the
// code always runs on the host; only the tiling differs), and each path is
// shown to really vectorize.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <regex>

#include "radix/backends/cpu/schedule.h"
#include "radix/core/half.h"
#include "radix/nn/norm.h"
#include "test_util.h"

namespace radix {
namespace {

using testing::cpu;
using testing::must;
namespace fs = std::filesystem;

using testing::IsaCase;
using testing::kIsas;

std::string slurp_stage(const fs::path& dir, const std::string& stage) { return testing::stage_dump(dir, stage); }

std::vector<float> naive_matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t M, int64_t K,
                                int64_t N) {
  std::vector<float> c(static_cast<size_t>(M * N));
  std::vector<double> row(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int64_t k = 0; k < K; ++k) {
      double x = a[static_cast<size_t>(i * K + k)];
      for (int64_t j = 0; j < N; ++j) row[static_cast<size_t>(j)] += x * b[static_cast<size_t>(k * N + j)];
    }
    for (int64_t j = 0; j < N; ++j) c[static_cast<size_t>(i * N + j)] = static_cast<float>(row[static_cast<size_t>(j)]);
  }
  return c;
}

// fn(x, y) compiled for one ISA and thread count with the schedule script and
// `stage` dumped: the schedule must apply as written (no fallback to plain
// loops) and the result match `want` (all_close with rtol / atol). Returns
// the script and the stage's IR.
template <class Fn>
std::pair<std::string, std::string> compile_check_dump(const IsaCase& c, int threads, Fn fn, const std::string& stage,
                                                       const Shape& sa, const Shape& sb, const std::vector<float>& a,
                                                       const std::vector<float>& b, const std::vector<float>& want,
                                                       double rtol, double atol) {
  fs::path dir = fs::temp_directory_path() / ("radix-sched-" + std::to_string(::getpid()) + "-" + c.name);
  CompileFnOptions o = testing::isa_options(c, threads, {"schedule-script", stage}, dir);
  auto exe = must(compile_fn(cpu(), o, fn, sa, sb));
  EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
  Buffer out = must(exe.call(must(cpu().buffer(sa, a)), must(cpu().buffer(sb, b))));
  EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, rtol, atol));
  auto r = std::make_pair(slurp_stage(dir, "schedule-script.mlir"), slurp_stage(dir, stage + ".mlir"));
  fs::remove_all(dir);
  return r;
}

// relu(A @ B) for one ISA against the naive loop; returns the schedule
// script and scheduled IR.
std::pair<std::string, std::string> check(const IsaCase& c, int64_t M, int64_t K, int64_t N, int threads = 1) {
  SCOPED_TRACE(std::string(c.name) + " " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) +
               " on " + std::to_string(threads) + " threads");
  Shape sa(DType::kF32, {M, K}), sb(DType::kF32, {K, N});
  std::vector<float> a = testing::random_vec<float>(static_cast<size_t>(M * K), -1, 1, 11);
  std::vector<float> b = testing::random_vec<float>(static_cast<size_t>(K * N), -1, 1, 12);
  std::vector<float> want = naive_matmul(a, b, M, K, N);
  for (float& x : want) x = std::max(x, 0.f);
  // f32 accumulation over K <= 256 terms of size <= 1 against a double
  // reference: |error| <= K * 2^-24 * sum|a||b| ~ 256 * 6e-8 * 256 ~ 4e-3 worst case.
  return compile_check_dump(c, threads, [](Tensor x, Tensor y) { return relu(matmul(x, y)); }, "schedule", sa, sb, a, b,
                            want, 1e-4, 2e-4);
}

// One or two rows times B [K, N] on one thread run register tiles of 8 or
// 4 vectors of columns (as many accumulators as half the registers hold),
// not the usual 2: one row's 2 FMA chains left the FMA units idle.
// Every ISA against the naive loop; the script's tile sizes.
TEST(Schedule, FewRowsTileWideRowsOfColumns) {
  for (const IsaCase& c : kIsas)
    for (int64_t M : {1, 2}) {
      const int64_t K = 129, N = 128, lanes = c.isa.f32_lanes;
      SCOPED_TRACE(std::string(c.name) + " M=" + std::to_string(M));
      Shape sa(DType::kF32, {M, K}), sb(DType::kF32, {K, N});
      std::vector<float> a = testing::random_vec<float>(static_cast<size_t>(M * K), -1, 1, 13);
      std::vector<float> b = testing::random_vec<float>(static_cast<size_t>(K * N), -1, 1, 14);
      auto [script, ir] = compile_check_dump(c, 1, [](Tensor x, Tensor y) { return matmul(x, y); }, "schedule", sa, sb,
                                             a, b, naive_matmul(a, b, M, K, N), 1e-5, 2e-6 * double(K));
      // 8 vectors while M x 8 accumulators are at most half the registers, else 4.
      const int64_t vectors = M * 8 <= c.isa.registers / 2 ? 8 : 4;
      const std::string want = "tile_sizes [" + std::to_string(M) + ", " + std::to_string(vectors * lanes) + ", 0]";
      EXPECT_NE(script.find(want), std::string::npos) << "want " << want << " in\n" << script;
    }
}

TEST(Schedule, PackedMatmulOnEveryIsa) {
  for (const IsaCase& c : kIsas) {
    // 2^26 MACs, B of 2 MiB: the packed path (AVX-512 reads a B of at most
    // 1 MiB in place: Avx512ReadsSmallBInPlace).
    auto [script, ir] = check(c, 256, 1024, 512);
    EXPECT_NE(script.find("transform.structured.pack"), std::string::npos) << c.name;
    EXPECT_NE(ir.find("vector.fma"), std::string::npos) << c.name;
    const std::string lanes = "vector<" + std::to_string(c.isa.f32_lanes * 2) + "xf32>";
    EXPECT_NE(ir.find(lanes), std::string::npos) << c.name << ": expected panels of " << lanes;
  }
}

// Narrow outputs that are whole vectors but not whole 2-vector panels (48
// and 16 columns on AVX-512) are packed in one-vector panels on 32-register
// ISAs (no columns of zeros); others keep two-vector panels, padded.
TEST(Schedule, NarrowOutputsTakeOneVectorPanels) {
  for (const IsaCase& c : kIsas)
    for (int64_t n : {48, 16}) {
      auto [script, ir] = check(c, 1024, 1024, n);  // 2^24 MACs and more: packed
      EXPECT_NE(script.find("transform.structured.pack"), std::string::npos) << c.name << " n " << n;
      const int64_t panel = c.isa.registers >= 32 ? c.isa.f32_lanes : 2 * c.isa.f32_lanes;
      EXPECT_NE(script.find("packed_sizes = [0, " + std::to_string(panel) + ", 0]"), std::string::npos)
          << c.name << " n " << n << script;
    }
}

// 16-register ISAs run whole blocks of 96 (or 48) rows in 6-row tiles and
// split the rest off to 4-row tiles: 200 = 2 x 96 + 8, 288 = 3 x 96 (no
// split); 56 rows are one block whose B panels are packed inside it (4-row
// tiles, no split). AVX-512 keeps its 8-row tiles.
TEST(Schedule, PackedMatmulSplitsRowsIntoSixRowTiles) {
  struct Mkn {
    int64_t m, k, n;
    bool split;
  };
  for (const IsaCase& c : kIsas)
    for (Mkn s : {Mkn{200, 256, 512, true}, Mkn{288, 256, 256, false}, Mkn{56, 256, 1280, false}}) {
      auto [script, ir] = check(c, s.m, s.k, s.n);
      EXPECT_NE(script.find("transform.structured.pack"), std::string::npos) << c.name << " " << s.m;
      const bool want_split = s.split && c.isa.registers < 32;
      EXPECT_EQ(script.find("transform.structured.split") != std::string::npos, want_split) << c.name << " " << s.m;
      const bool six = c.isa.registers < 32 && s.m != 56;
      EXPECT_EQ(script.find("tile_sizes [6, 1, 0, 0]") != std::string::npos, six) << c.name << " " << s.m;
    }
}

// Threads shrink the packed blocks' rows so each thread gets two blocks; the
// smaller block must still be whole register tiles (AVX-512: 200 rows halved
// to 50 left a 2-row remainder of an 8-row tile, and the op fell back to
// loops). Rows that are not a power of two, on 2 and 3 threads, every ISA.
TEST(Schedule, PackedMatmulBlocksForThreadsAreWholeRegisterTiles) {
  for (const IsaCase& c : kIsas)
    for (int t : {2, 3})
      for (int64_t m : {200, 136, 360}) {
        auto [script, ir] = check(c, m, 384, 256, t);
        EXPECT_NE(script.find("tile_using_forall"), std::string::npos) << c.name << " " << m << " on " << t;
      }
}

// Several row blocks: column blocks are the outer loop (one thread: a loop;
// threads: a forall over column blocks, each thread running all row blocks
// of its own), made once around all parts, with B's packing copy fused into
// it, so a column block's packed B is written right before its row blocks
// and re-read from cache by the row blocks after the first. Rows no block
// size divides (520: AVX2's 6-row blocks plus a 4-row rest part), two
// column blocks (eight on AVX2), K = 264; 1, 2 and 3 threads (3 divides
// neither: the forall over output blocks), every ISA, against the naive
// loop.
TEST(Schedule, PackedMatmulRunsColumnBlocksOutermost) {
  for (const IsaCase& c : kIsas)
    for (int t : {1, 2, 3}) {
      auto [script, ir] = check(c, 520, 264, 512, t);
      const std::string what = std::string(c.name) + " on " + std::to_string(t);
      EXPECT_NE(script.find("transform.structured.pack"), std::string::npos) << what;
      // AVX2's column blocks are 64 wide from 256 columns on (kNarrowBlockNAvx2), the others' 256.
      const int64_t block_n = c.isa.f32_lanes == 8 && c.isa.registers == 16 ? 64 : 256;
      const std::string panels = std::to_string(block_n / (2 * c.isa.f32_lanes));
      const std::regex by_columns(R"(tile_using_forall %op0pa tile_sizes \[0, )" + panels + R"(, 0, 0\])");
      const std::regex column_loop(R"(tile_using_for %op0pa tile_sizes \[0, )" + panels + R"(, 0, 0\])");
      EXPECT_EQ(std::regex_search(script, column_loop), t == 1) << what << "\n" << script;
      EXPECT_EQ(std::regex_search(script, by_columns), t == 2) << what << "\n" << script;
      EXPECT_EQ(script.find("xc into %op0pcb_") != std::string::npos, t < 3) << what << "\n" << script;
    }
}

// AVX2, several row blocks of at least 256 columns: K in one block up to
// 1024 (each register tile's sums stay in registers over all of K), longer
// K in blocks of 512, columns in blocks of 64; 128 columns (a swapped
// prompt) and the other ISAs keep their blocks (AVX-512: K up to 1024 in
// one block, in column blocks narrowed until B's K x columns slice is at
// most 576 KiB: 128 columns at K = 768; longer K in blocks of 512, 256
// columns). Against the naive loop, one and two threads.
TEST(Schedule, Avx2PackedBlocksTakeLongKAndNarrowColumns) {
  struct Case {
    int64_t k, n, k_block, n_block;  // AVX2's blocks
  };
  for (const IsaCase& c : {kIsas[1], kIsas[2]})
    for (Case s : {Case{768, 256, 768, 64}, Case{2048, 256, 512, 64}, Case{768, 128, 256, 128}})
      for (int t : {1, 2}) {
        auto [script, ir] = check(c, 264, s.k, s.n, t);
        const std::string what = std::string(c.name) + " K=" + std::to_string(s.k) + " N=" + std::to_string(s.n) +
                                 " on " + std::to_string(t);
        const bool avx2 = c.isa.registers == 16;
        const bool whole_k = !avx2 && s.k <= 1024;
        const int64_t k_block = avx2 ? s.k_block : whole_k ? s.k : 512;
        const int64_t n_block = avx2 ? s.n_block : whole_k ? 128 : std::min<int64_t>(s.n, 256);
        const int64_t panels = n_block / (2 * c.isa.f32_lanes);
        EXPECT_NE(script.find("tile_sizes [0, 0, " + std::to_string(k_block) + ", 0]"), std::string::npos)
            << what << "\n" << script;
        if (t == 1)  // the column-block loop (threads split it further where one block is all columns)
          EXPECT_NE(script.find("tile_sizes [0, " + std::to_string(panels) + ", 0, 0]"), std::string::npos)
              << what << "\n" << script;
      }
}

// AVX-512, more rows than one 256-row block, a multiple of 64, and K in
// several blocks: row blocks of 64 (each K block's A and C blocks stay in
// L2 beside B's slice). 256 rows stay one block; 768 rows with K in one
// block keep blocks of 256. 16-register ISAs keep their blocks. One and two
// threads (two: the column blocks over the threads, the row blocks inside
// each), every ISA, against the naive loop.
TEST(Schedule, Avx512ManyRowsRunInSixtyFourRowBlocks) {
  struct Case {
    int64_t m, k, n, block_m;  // AVX-512's row blocks (B over 1 MiB: packed, not read in place)
  };
  for (const IsaCase& c : kIsas)
    for (Case s : {Case{512, 1536, 512, 64}, Case{256, 1536, 512, 256}, Case{768, 512, 1024, 256}})
      for (int t : {1, 2}) {
        auto [script, ir] = check(c, s.m, s.k, s.n, t);
        const std::string what = std::string(c.name) + " " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
                                 std::to_string(s.n) + " on " + std::to_string(t);
        if (c.isa.registers < 32) continue;  // (16-register ISAs' blocks are of 64 or 96 / 48 rows anyway)
        EXPECT_EQ(script.find("tile_sizes [64, 0, 0, 0]") != std::string::npos, s.block_m == 64) << what << "\n" << script;
        if (s.m > s.block_m)
          EXPECT_NE(script.find("tile_sizes [" + std::to_string(s.block_m) + ", 0, 0, 0]"), std::string::npos)
              << what << "\n" << script;
      }
}

// All rows in one block on threads: the forall runs over column tiles only,
// at least 4 per thread (of one or two panels here), each packing its own
// panels of B (the pack fused into the forall, not a parallel region of
// its own). Every ISA (up to 256 rows are one block on AVX-512, 64 on the
// others), against the naive loop.
TEST(Schedule, OneRowBlockTakesFourColumnTilesPerThread) {
  for (const IsaCase& c : kIsas)
    for (auto [m, n] : {std::pair<int64_t, int64_t>{256, 256}, {128, 512}, {64, 1024}}) {
      if (m > (c.isa.registers >= 32 ? 256 : 64)) continue;  // one block of rows: 16-register ISAs' blocks are 64
      auto [script, ir] = check(c, m, 256, n, 2);
      const std::string what = std::string(c.name) + " " + std::to_string(m) + "x256x" + std::to_string(n);
      std::smatch tile;
      ASSERT_TRUE(std::regex_search(script, tile, std::regex(R"(tile_using_forall %\w+ tile_sizes \[(\d+), (\d+), 0, 0\])")))
          << what << "\n" << script;
      EXPECT_EQ(std::stoll(tile[1]), m) << what;
      const int64_t cols = std::stoll(tile[2]) * 2 * c.isa.f32_lanes;  // panels of two vectors
      EXPECT_GE(n / cols, 4 * 2) << what << ": " << tile[0];
      EXPECT_NE(script.find("fuse_into_containing_op"), std::string::npos) << what;
    }
}

// A packed matmul's output panels [m, n / panel, panel] are C's row-major
// layout: the product accumulates in the function's output buffer, with no
// buffer of its own copied into it afterwards (radix-outputs-in-place), on
// every ISA, one and two threads.
TEST(Schedule, PackedMatmulWritesItsOutputInPlace) {
  const int64_t n = 256, k = 1280;  // B of 1.25 MiB: packed on every ISA
  const Shape sa(DType::kF32, {n, k}), sb(DType::kF32, {k, n});
  std::vector<float> a = testing::random_vec<float>(size_t(n * k), -1, 1, 13);
  std::vector<float> b = testing::random_vec<float>(size_t(k * n), -1, 1, 14);
  const std::vector<float> want = naive_matmul(a, b, n, k, n);
  for (const IsaCase& c : kIsas)
    for (int t : {1, 2}) {
      SCOPED_TRACE(std::string(c.name) + " on " + std::to_string(t) + " threads");
      const auto [script, ir] = compile_check_dump(
          c, t, [](Tensor x, Tensor y) { return matmul(x, y); }, "bufferize", sa, sb, a, b, want, 1e-4, 2e-4);
      EXPECT_NE(script.find("transform.structured.pack"), std::string::npos);
      EXPECT_EQ(ir.find("memref.copy"), std::string::npos) << ir;
      EXPECT_EQ(ir.find("linalg.copy"), std::string::npos) << ir;
      EXPECT_EQ(testing::lines_with(ir, "memref.alloc", "memref<256x256xf32>"), std::vector<std::string>{});
    }
}

// On threads, the packed product's output starts as zeros filled by each
// thread in its own output block inside the parallel loop
// (radix-fills-into-foralls), not by one thread over all of C before it: one
// K block and several (K = 1024: 4 blocks on SSE, one on AVX2 and AVX-512;
// K = 2048: blocks of 512 or 256 on every ISA), rows split (256 rows) or
// columns (128 rows, one block on AVX-512), 2 and 3 threads, every ISA.
TEST(Schedule, PackedMatmulZeroesOutputBlocksInsideTheThreads) {
  struct Mkn {
    int64_t m, k, n;
  };
  for (Mkn d : {Mkn{256, 256, 256}, Mkn{128, 1024, 512}, Mkn{128, 2048, 512}}) {
    const Shape sa(DType::kF32, {d.m, d.k}), sb(DType::kF32, {d.k, d.n});
    std::vector<float> a = testing::random_vec<float>(size_t(d.m * d.k), -1, 1, 15);
    std::vector<float> b = testing::random_vec<float>(size_t(d.k * d.n), -1, 1, 16);
    const std::vector<float> want = naive_matmul(a, b, d.m, d.k, d.n);
    for (const IsaCase& c : kIsas)
      for (int t : {2, 3}) {
        SCOPED_TRACE(std::string(c.name) + " " + std::to_string(d.m) + "x" + std::to_string(d.k) + "x" +
                     std::to_string(d.n) + " on " + std::to_string(t) + " threads");
        // f32 sums of <= 2048 products of values in [-1, 1] vs a double reference.
        const auto [script, ir] = compile_check_dump(
            c, t, [](Tensor x, Tensor y) { return matmul(x, y); }, "bufferize", sa, sb, a, b, want, 2e-4, 2e-4);
        EXPECT_NE(script.find("transform.structured.pack"), std::string::npos);
        ASSERT_NE(ir.find("linalg.fill"), std::string::npos) << ir;
        // A fill at the function's top level (4 spaces in) runs on one
        // thread before the loops. 16-register ISAs split the rows into a
        // 6-row-tile part and a 4-row one: each part's loop starts from a
        // slice of the fill, moved into both all the same.
        const bool split = script.find("transform.structured.split") != std::string::npos;
        EXPECT_EQ(split, c.isa.registers < 32);
        EXPECT_FALSE(std::regex_search(ir, std::regex("\n    linalg.fill"))) << ir;
        // One parallel loop over the column blocks around both parts where
        // the blocks split evenly over the threads; otherwise every part is
        // a parallel loop (256 rows left a 16-row rest of one block that ran
        // on one thread after the others). B's packing is one more where it
        // is not inside the blocks.
        const int64_t loops = static_cast<int64_t>(testing::count_of(ir, "scf.forall"));
        const bool packs_inside = script.find("xc into %") != std::string::npos;
        const bool column_forall = script.find("pcb_fa = transform.structured.tile_using_forall") != std::string::npos;
        EXPECT_EQ(loops, (split && !column_forall ? 2 : 1) + (packs_inside ? 0 : 1)) << ir;
      }
  }
}

// B's packing copy covers all of K in steps that must divide it: K a
// multiple of 4 but not of 8 (100, 260) once made a partial step that failed
// to vectorize, and the whole module fell back to scalar loops. Both B
// layouts, every ISA, against a double loop.
TEST(Schedule, PackedMatmulWithKNotAMultipleOfEight) {
  for (const IsaCase& c : kIsas) {
    auto [script, ir] = check(c, 256, 260, 256);  // B [K, N]; check() asserts no fallback
    EXPECT_NE(script.find("transform.structured.pack"), std::string::npos) << c.name;
    const int64_t M = 128, K = 100, N = 512;
    const Shape xs(DType::kF32, {M, K}), ws(DType::kF32, {N, K});
    std::vector<float> x = testing::random_vec<float>(size_t(M * K), -1, 1, 17);
    std::vector<float> w = testing::random_vec<float>(size_t(N * K), -1, 1, 18);
    auto exe = must(compile_fn(
        cpu(), testing::isa_options(c), [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); },
        xs, ws));
    EXPECT_FALSE(exe.executable().stats().schedule_fell_back) << c.name;
    std::vector<float> got = must(must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w)))).to_host<float>());
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(x[size_t(i * K + k)]) * w[size_t(j * K + k)];
        ASSERT_NEAR(got[size_t(i * N + j)], acc, 2e-5) << c.name << " " << i << "," << j;  // 100 products <= 1
      }
  }
}

TEST(Schedule, RegisterTiledMatmulOnEveryIsa) {
  for (const IsaCase& c : kIsas) {
    auto [script, ir] = check(c, 64, 128, 96);
    EXPECT_EQ(script.find("transform.structured.pack"), std::string::npos) << c.name;
    EXPECT_NE(script.find("create_named_contraction"), std::string::npos) << c.name;
    EXPECT_NE(ir.find("vector.fma"), std::string::npos) << c.name;
  }
}

TEST(Schedule, OddShapesArePaddedOrSplitToWholeTiles) {
  for (const IsaCase& c : kIsas) {
    auto [script, ir] = check(c, 7, 13, 5);
    EXPECT_EQ(script.find("0 padded, 0 split"), std::string::npos) << c.name << script;
    EXPECT_NE(script.find("create_named_contraction"), std::string::npos) << c.name << script;
  }
}

// Attention-style batched contraction q[b,s,d] . k[b,t,d] -> [b,s,t]: the
// emitter canonicalizes it to a transpose + linalg.batch_matmul, which the
// schedule tiles per batch and vectorizes on every ISA.
TEST(Schedule, BatchedContractionOnEveryIsa) {
  const int64_t Bn = 3, S = 32, T = 48, D = 40;
  Shape qs(DType::kF32, {Bn, S, D}, {"b", "s", "d"}), ks(DType::kF32, {Bn, T, D}, {"b", "t", "d"});
  std::vector<float> q = testing::random_vec<float>(size_t(Bn * S * D), -1, 1, 21);
  std::vector<float> k = testing::random_vec<float>(size_t(Bn * T * D), -1, 1, 22);
  std::vector<float> want(size_t(Bn * S * T));
  for (int64_t b = 0; b < Bn; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < T; ++j) {
        double acc = 0;
        for (int64_t d = 0; d < D; ++d) acc += double(q[size_t((b * S + i) * D + d)]) * k[size_t((b * T + j) * D + d)];
        want[size_t((b * S + i) * T + j)] = static_cast<float>(acc);
      }
  for (const IsaCase& c : kIsas) {
    fs::path dir = fs::temp_directory_path() / ("radix-bmm-" + std::to_string(::getpid()) + "-" + c.name);
    CompileFnOptions o = testing::isa_options(c, 0, {"traced", "schedule"}, dir);
    auto exe = must(compile_fn(cpu(), o, [](Tensor a, Tensor b) { return dot(a, b, "d"); }, qs, ks));
    EXPECT_EQ(exe.executable().signature().outputs[0].to_string(), "f32[b=3,s=32,t=48]");
    Buffer out = must(exe.call(must(cpu().buffer(qs, q)), must(cpu().buffer(ks, k))));
    // f32 sums of 40 products of values in [-1, 1] vs a double reference.
    EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-5, 1e-5)) << c.name;
    EXPECT_NE(slurp_stage(dir, "traced.mlir").find("linalg.batch_matmul"), std::string::npos) << c.name;
    EXPECT_NE(slurp_stage(dir, "schedule.mlir").find("vector.fma"), std::string::npos) << c.name;
    fs::remove_all(dir);
  }
}

// Batched products whose rows no 6 divides, on 16-register ISAs: 6-row
// register tiles over 120 of 128 rows and 4-row tiles over the other 8 (the
// product split in two, fit_matmuls_to_tiles), on one thread and two;
// 32-register ISAs keep one op of 8-row tiles. Every ISA, 1 and 2 threads,
// against the naive loop.
TEST(Schedule, BatchedRowsSplitIntoSixRowTiles) {
  const int64_t Bn = 3, M = 128, K = 64, N = 48;
  const Shape as(DType::kF32, {Bn, M, K}), bs(DType::kF32, {Bn, K, N});
  std::vector<float> a = testing::random_vec<float>(size_t(Bn * M * K), -1, 1, 23);
  std::vector<float> b = testing::random_vec<float>(size_t(Bn * K * N), -1, 1, 24);
  std::vector<float> want(size_t(Bn * M * N));
  for (int64_t t = 0; t < Bn; ++t) {
    auto c = naive_matmul(std::vector<float>(a.begin() + t * M * K, a.begin() + (t + 1) * M * K),
                          std::vector<float>(b.begin() + t * K * N, b.begin() + (t + 1) * K * N), M, K, N);
    std::copy(c.begin(), c.end(), want.begin() + t * M * N);
  }
  for (const IsaCase& c : kIsas)
    for (int t : {1, 2}) {
      SCOPED_TRACE(std::string(c.name) + " on " + std::to_string(t) + " threads");
      // f32 sums of 64 products of values in [-1, 1] vs a double reference.
      auto [script, ir] = compile_check_dump(
          c, t, [](Tensor x, Tensor y) { return dot_general(x, y, DotDims{{0}, {0}, {2}, {1}}); }, "schedule", as, bs,
          a, b, want, 1e-5, 1e-5);
      const bool split = c.isa.registers < 32;
      const std::string tn = std::to_string(2 * c.isa.f32_lanes);
      EXPECT_EQ(script.find("0 padded, 1 split") != std::string::npos, split) << script.substr(0, 300);
      EXPECT_EQ(script.find("tile_sizes [1, 6, " + tn + ", 0]") != std::string::npos, split) << script;
      EXPECT_EQ(script.find("tile_sizes [1, 4, " + tn + ", 0]") != std::string::npos, split) << script;
      EXPECT_NE(ir.find("vector.fma"), std::string::npos);
    }
}

// x · wᵀ with w stored [out, in] (the weight layout of Llama and most
// checkpoints): read in place through the matmul's B(n, k) map — no transpose
// in the traced IR — as dot products along K (or the packed schedule when
// large), on every ISA, 1 and 2 threads, at sizes no tile divides.
TEST(Schedule, WeightsStoredOutInOnEveryIsa) {
  struct Mnk { int64_t m, n, k; };
  for (Mnk s : {Mnk{1, 33, 17}, Mnk{1, 64, 64}, Mnk{3, 5, 7}, Mnk{7, 12, 40}, Mnk{1, 1, 96}, Mnk{4, 256, 128},
                Mnk{128, 512, 256}, Mnk{128, 288, 288}, Mnk{32, 96, 352}}) {
    Shape xs(DType::kF32, {s.m, s.k}), ws(DType::kF32, {s.n, s.k});
    std::vector<float> x = testing::random_vec<float>(size_t(s.m * s.k), -1, 1, 41);
    std::vector<float> w = testing::random_vec<float>(size_t(s.n * s.k), -1, 1, 42);
    std::vector<float> want(size_t(s.m * s.n));
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < s.k; ++k) acc += double(x[size_t(i * s.k + k)]) * w[size_t(j * s.k + k)];
        want[size_t(i * s.n + j)] = static_cast<float>(acc);
      }
    const std::string shape = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    for (const IsaCase& c : kIsas)
      for (int threads : {1, 2}) {
        fs::path dir = fs::temp_directory_path() / ("radix-wt-" + std::to_string(::getpid()) + "-" + c.name);
        CompileFnOptions o = testing::isa_options(c, threads, {"traced", "schedule-script", "schedule"}, dir);
        auto exe = must(compile_fn(
            cpu(), o, [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); }, xs, ws));
        Buffer out = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w))));
        // f32 sums of <= 256 products of values in [-1, 1] vs a double reference.
        EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-5, 1e-5)) << shape << " " << c.name;
        EXPECT_EQ(slurp_stage(dir, "traced.mlir").find("linalg.transpose"), std::string::npos) << shape;
        const std::string script = slurp_stage(dir, "schedule-script.mlir");
        // K with no divisor of 4 or more stays a plain loop; every other K is scheduled.
        if (s.k % 4 == 0)
          EXPECT_NE(script.find("// schedule: 1 matmuls"), std::string::npos) << shape << " " << c.name << script;
        if (s.k % 4 == 0 && s.m * s.n * s.k < (int64_t{1} << 20))
          EXPECT_NE(slurp_stage(dir, "schedule.mlir").find("vector.fma"), std::string::npos) << shape << " " << c.name;
        // A prompt's rows times weights whose widths no standard block divides
        // (288, 96 x 352): packed with whole-dim blocks, not dot products.
        if (s.m >= 16 && s.m * s.n * s.k >= (int64_t{1} << 20)) {
          EXPECT_NE(script.find("(1 packed)"), std::string::npos) << shape << " " << c.name << script;
          // B's packing copy runs inside the output-block loop with one
          // block of rows (M = 32 everywhere; M = 128 in AVX-512's 128- or
          // 256-row blocks), each block packing its own panels, and inside
          // the column-block loop with several (each column block packs its
          // panels before its row blocks read them): fuse_into_containing_op
          // either way. Only where two threads cannot split the column
          // blocks evenly (AVX-512, two 64-row blocks of 288 = 3 x 96
          // columns) is all of B packed first, by panel on the threads.
          // (32 x 96 x 352 is computed operand-swapped, W · xᵀ, packing x:
          // swapped_matmul_test.cc.)
          const bool packed_first = std::string(c.name) == "avx512" && threads == 2 && s.n == 288 && s.m != 32;
          if (script.find("1 operand-swapped") == std::string::npos)
            EXPECT_EQ(script.find("xc into %") == std::string::npos, packed_first) << shape << " " << c.name << script;
          EXPECT_EQ(script.find("1 operand-swapped") != std::string::npos, s.m == 32 && s.n == 96) << shape;
        }
        fs::remove_all(dir);
      }
  }
}

// Elementwise consumers fused into matmul tiles: relu(x . W + b) with W
// [k, n] (register tiles) and [n, k] (dot-product tiles) — the consumer and
// the zero fill scheduled with the matmul (one fused consumer, no separate
// elementwise op in the summary) — on every ISA, 1 and 2 threads, against a
// double loop; a consumer of a packed matmul, and a matmul result used twice,
// stay separate ops (and right).
TEST(Schedule, MatmulConsumersFuseIntoRegisterTiles) {
  struct Case { int64_t m, n, k; bool out_in; bool fused; };
  for (Case s : {Case{64, 64, 64, true, true}, Case{6, 48, 40, true, true}, Case{16, 64, 100, false, true},
                 Case{24, 32, 8, false, true}, Case{8, 5, 12, false, false}, Case{256, 512, 256, false, false}}) {
    const Shape xs(DType::kF32, {s.m, s.k}), bs(DType::kF32, {s.n});
    const Shape ws = s.out_in ? Shape(DType::kF32, {s.n, s.k}) : Shape(DType::kF32, {s.k, s.n});
    std::vector<float> x = testing::random_vec<float>(size_t(s.m * s.k), -1, 1, 51);
    std::vector<float> w = testing::random_vec<float>(size_t(s.n * s.k), -1, 1, 52);
    std::vector<float> bias = testing::random_vec<float>(size_t(s.n), -1, 1, 53);
    std::vector<float> want(size_t(s.m * s.n));
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = bias[size_t(j)];
        for (int64_t k = 0; k < s.k; ++k)
          acc += double(x[size_t(i * s.k + k)]) * w[size_t(s.out_in ? j * s.k + k : k * s.n + j)];
        want[size_t(i * s.n + j)] = static_cast<float>(acc > 0 ? acc : 0);
      }
    const std::string shape = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                              (s.out_in ? " W[n,k]" : " W[k,n]");
    for (const IsaCase& c : kIsas)
      for (int threads : {1, 2}) {
        fs::path dir = fs::temp_directory_path() / ("radix-cf-" + std::to_string(::getpid()) + "-" + c.name);
        CompileFnOptions o = testing::isa_options(c, threads, {"schedule-script"}, dir);
        const bool out_in = s.out_in;
        auto exe = must(compile_fn(
            cpu(), o,
            [out_in](Tensor a, Tensor wt, Tensor b) {
              return relu(dot_general(a, wt, DotDims{{}, {}, {1}, {out_in ? 1 : 0}}) + b);
            },
            xs, ws, bs));
        Buffer out = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w)), must(cpu().buffer(bs, bias))));
        EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-5, 1e-5))
            << shape << " " << c.name << " threads " << threads;
        const std::string script = slurp_stage(dir, "schedule-script.mlir");
        EXPECT_EQ(script.find("1 consumers fused into matmuls") != std::string::npos, s.fused)
            << shape << " " << c.name << " threads " << threads << script;
        fs::remove_all(dir);
      }
  }
  // SwiGLU's silu(x . W1ᵀ) * (x . W3ᵀ): one consumer takes over both matmuls.
  for (int threads : {1, 2}) {
    const int64_t m = 16, n = 64, k = 32;
    const Shape xs(DType::kF32, {m, k}), ws(DType::kF32, {n, k});
    std::vector<float> x = testing::random_vec<float>(size_t(m * k), -1, 1, 56);
    std::vector<float> w1 = testing::random_vec<float>(size_t(n * k), -1, 1, 57);
    std::vector<float> w3 = testing::random_vec<float>(size_t(n * k), -1, 1, 58);
    std::vector<float> want(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double g = 0, u = 0;
        for (int64_t c = 0; c < k; ++c) {
          g += double(x[size_t(i * k + c)]) * w1[size_t(j * k + c)];
          u += double(x[size_t(i * k + c)]) * w3[size_t(j * k + c)];
        }
        want[size_t(i * n + j)] = float(g / (1 + std::exp(-g)) * u);
      }
    fs::path dir = fs::temp_directory_path() / ("radix-cf3-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    CompileFnOptions o;
    o.compile.codegen.cpu.threads = threads;
    o.compile.diagnostics.dump = {"schedule-script"};
    o.compile.diagnostics.dump_dir = dir.string();
    auto exe = must(compile_fn(
        cpu(), o,
        [](Tensor a, Tensor g, Tensor u) {
          const DotDims dd{{}, {}, {1}, {1}};
          return silu(dot_general(a, g, dd)) * dot_general(a, u, dd);
        },
        xs, ws, ws));
    const std::string script = slurp_stage(dir, "schedule-script.mlir");
    EXPECT_NE(script.find("2 matmuls (0 packed), 0 elementwise"), std::string::npos) << script;
    EXPECT_NE(script.find("1 consumers fused into matmuls"), std::string::npos) << script;
    Buffer out = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w1)), must(cpu().buffer(ws, w3))));
    // silu's exp is the backend's polynomial (relative error ~1e-7).
    EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-5, 1e-5)) << "threads " << threads;
    fs::remove_all(dir);
  }
  // The matmul's result also returned: the consumer cannot take it over.
  const Shape xs(DType::kF32, {8, 16}), ws(DType::kF32, {16, 16});
  fs::path dir = fs::temp_directory_path() / ("radix-cf2-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  CompileFnOptions o;
  o.compile.diagnostics.dump = {"schedule-script"};
  o.compile.diagnostics.dump_dir = dir.string();
  auto exe = must(compile_fn(
      cpu(), o,
      [](Tensor a, Tensor wt) {
        Tensor y = matmul(a, wt);
        return std::vector<Tensor>{y, relu(y)};
      },
      xs, ws));
  EXPECT_NE(slurp_stage(dir, "schedule-script.mlir").find("0 consumers fused into matmuls"), std::string::npos);
  std::vector<float> x = testing::random_vec<float>(8 * 16, -1, 1, 54), w = testing::random_vec<float>(16 * 16, -1, 1, 55);
  auto outs = must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w))));
  std::vector<float> y = must(outs[0].to_host<float>()), r = must(outs[1].to_host<float>());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(r[i], y[i] > 0 ? y[i] : 0.0f);
  fs::remove_all(dir);
}

// Row fusion: softmax, log_softmax, RMSNorm and LayerNorm run one row at a
// time as one fused loop (one group in the schedule summary) on every ISA,
// 1 and 2 threads, 1, 2 and 5 rows of every width class (multiples of 64, 16, 8 and 4 —
// and 7, which no vector divides, left to the per-op schedule), against
// double-precision loops. Rows over 32 that no 16 divides (301: an odd
// prompt's attention rows; 300; 40 where the group evaluates exp or log)
// are split in every member at their last whole 16, the rest a loop or,
// where 4 divides it, vectors (unsplit, reductions over rows no 4 divides
// were scalar loops and the group was not formed; rows 4 divides ran in
// vectors of 4). RMSNorm and LayerNorm keep vectors of 8 over rows of 40.
TEST(Schedule, RowFusionOnEveryIsa) {
  struct Norm {
    const char* name;
    std::function<Tensor(Tensor)> fn;
    std::function<void(const double*, double*, int64_t)> ref;  // one row
    bool transcendental = true;  // exp / log in the group: rows 8 divides split too
  };
  const std::vector<Norm> norms = {
      {"softmax", [](Tensor x) { return softmax(x, "c"); },
       [](const double* x, double* y, int64_t c) {
         double m = x[0], s = 0;
         for (int64_t i = 0; i < c; ++i) m = std::max(m, x[i]);
         for (int64_t i = 0; i < c; ++i) s += std::exp(x[i] - m);
         for (int64_t i = 0; i < c; ++i) y[i] = std::exp(x[i] - m) / s;
       }},
      {"log_softmax", [](Tensor x) { return log_softmax(x, "c"); },
       [](const double* x, double* y, int64_t c) {
         double m = x[0], s = 0;
         for (int64_t i = 0; i < c; ++i) m = std::max(m, x[i]);
         for (int64_t i = 0; i < c; ++i) s += std::exp(x[i] - m);
         for (int64_t i = 0; i < c; ++i) y[i] = x[i] - m - std::log(s);
       }},
      {"rms_norm", [](Tensor x) { return nn::rms_norm(x, -1, 1e-5); },
       [](const double* x, double* y, int64_t c) {
         double ss = 0;
         for (int64_t i = 0; i < c; ++i) ss += x[i] * x[i];
         const double r = 1 / std::sqrt(ss / double(c) + 1e-5);
         for (int64_t i = 0; i < c; ++i) y[i] = x[i] * r;
       },
       false},
      {"layer_norm", [](Tensor x) { return nn::layer_norm(x); },
       [](const double* x, double* y, int64_t c) {
         double mean = 0, var = 0;
         for (int64_t i = 0; i < c; ++i) mean += x[i];
         mean /= double(c);
         for (int64_t i = 0; i < c; ++i) var += (x[i] - mean) * (x[i] - mean);
         const double r = 1 / std::sqrt(var / double(c) + 1e-5);
         for (int64_t i = 0; i < c; ++i) y[i] = (x[i] - mean) * r;
       },
       false},
  };
  for (const Norm& nm : norms)
    for (int64_t c : {256, 96, 40, 12, 7, 301, 300})
      for (int64_t r : {1, 2, 5})
        for (const IsaCase& isa : kIsas)
          for (int threads : {1, 2}) {
            Shape s(DType::kF32, {r, c}, {"r", "c"});
            std::vector<float> x = testing::random_vec<float>(size_t(r * c), -4, 4, 51);
            std::vector<float> want(x.size());
            std::vector<double> xd(x.begin(), x.end()), yd(x.size());
            for (int64_t i = 0; i < r; ++i) nm.ref(xd.data() + i * c, yd.data() + i * c, c);
            for (size_t i = 0; i < x.size(); ++i) want[i] = static_cast<float>(yd[i]);
            fs::path dir = fs::temp_directory_path() / ("radix-rows-" + std::to_string(::getpid()));
            CompileFnOptions o = testing::isa_options(isa, threads, {"schedule-script"}, dir);
            auto exe = must(compile_fn(cpu(), o, nm.fn, s));
            const std::string what = std::string(nm.name) + " " + std::to_string(r) + "x" + std::to_string(c) + " " +
                                     isa.name + " t" + std::to_string(threads);
            Buffer out = must(exe.call(must(cpu().buffer(s, x))));
            // f32 with polynomial exp / log against double: a few ulp per step.
            EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 2e-5, 2e-6)) << what;
            const std::string script = slurp_stage(dir, "schedule-script.mlir");
            const bool split = c > 32 && c % 16 != 0 && (nm.transcendental || c % 8 != 0);
            const int64_t lanes = split || c % 16 == 0 ? 16 : c % 8 == 0 ? 8 : c % 4 == 0 ? 4 : 1;
            // (One row folds to 1-D ops: each is already the whole row, no group.)
            if (r > 1 && lanes >= 4 && c >= 2 * lanes) {
              EXPECT_NE(script.find("1 row-fused groups"), std::string::npos) << what << "\n" << script;
              EXPECT_EQ(script.find("transform.structured.split %") != std::string::npos &&
                            script.find("after " + std::to_string(c / 16 * 16) + " {dimension") != std::string::npos,
                        split)
                  << what << "\n" << script;
            }
            fs::remove_all(dir);
          }
}

// Row reductions (split into vector-wide partial results, then combined) and
// column reductions (a vector of columns per step), f32 and i32, every ISA.
// Elementwise rows no 4 divides (an odd prompt's 129 or 301 columns) run
// in vectors of 16 up to their last whole 16, the rest split off as a
// loop, on 1 and 2 threads; exact against the loop. Unsplit they were
// scalar loops ("left as loops").
TEST(Schedule, OddRowsVectorizeTheirWholeVectors) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{7, 129}, {3, 301}, {2, 37}})
    for (const IsaCase& c : kIsas)
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::string(c.name) + " [" + std::to_string(rows) + ", " + std::to_string(cols) + "] on " +
                     std::to_string(threads) + " threads");
        const Shape sx(DType::kF32, {rows, cols});
        std::vector<float> a = testing::random_vec<float>(size_t(rows * cols), -2, 2, 41);
        std::vector<float> b = testing::random_vec<float>(size_t(rows * cols), -2, 2, 42);
        std::vector<float> want(a.size());
        for (size_t i = 0; i < a.size(); ++i) want[i] = std::max(a[i] * b[i], 0.f) - a[i];
        auto [script, ir] = compile_check_dump(
            c, threads, [](Tensor x, Tensor y) { return relu(x * y) - x; }, "schedule", sx, sx, a, b, want, 0, 0);
        EXPECT_NE(script.find("transform.structured.split"), std::string::npos) << script.substr(0, 300);
        EXPECT_NE(script.find("0 left as loops"), std::string::npos) << script.substr(0, 300);
        EXPECT_NE(ir.find("vector<16xf32>"), std::string::npos);
      }
}

// Rows of 96 (vectors of 16), 256 (four 16-vectors of partial sums), 300
// and 301 (split at the last whole 16, the rest vectors of 4 or a loop;
// unsplit, 301's row and column reductions were scalar loops).
// Rows that 4 divides but 16 does not (300): a light elementwise op keeps
// vectors of 4 in one pass over the rows; one that evaluates exp (SiLU) is
// split at the last whole 16, the rest of 12 in vectors of 4 (its vectors
// of 4 ran at half the rate per element). Against the loop's values (the
// exp polynomial: 1e-6 relative).
TEST(Schedule, RowsFourDividesSplitOnlyWhereTheOpIsHeavy) {
  const int64_t rows = 5, cols = 300;
  const Shape sx(DType::kF32, {rows, cols});
  std::vector<float> a = testing::random_vec<float>(size_t(rows * cols), -2, 2, 43);
  std::vector<float> b = testing::random_vec<float>(size_t(rows * cols), -2, 2, 44);
  std::vector<float> light(a.size()), want_silu(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    light[i] = std::max(a[i] * b[i], 0.f) - a[i];
    const double x = double(a[i]) * b[i];
    want_silu[i] = float(x / (1 + std::exp(-x)));
  }
  for (const IsaCase& c : kIsas)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(c.name) + " on " + std::to_string(threads) + " threads");
      auto [script, ir] = compile_check_dump(
          c, threads, [](Tensor x, Tensor y) { return relu(x * y) - x; }, "schedule", sx, sx, a, b, light, 0, 0);
      EXPECT_EQ(script.find("transform.structured.split"), std::string::npos) << script.substr(0, 300);
      EXPECT_EQ(ir.find("vector<16xf32>"), std::string::npos);
      auto [hscript, hir] = compile_check_dump(
          c, threads, [](Tensor x, Tensor y) { return silu(x * y); }, "schedule", sx, sx, a, b, want_silu, 1e-6, 1e-6);
      EXPECT_NE(hscript.find("after 288 {dimension"), std::string::npos) << hscript.substr(0, 300);
      EXPECT_NE(hscript.find("0 left as loops"), std::string::npos) << hscript.substr(0, 300);
      EXPECT_NE(hir.find("vector<16xf32>"), std::string::npos);
      EXPECT_NE(hir.find("vector<4xf32>"), std::string::npos);
    }
}

TEST(Schedule, ReductionsVectorizeOnEveryIsa) {
  for (const int64_t C : {96, 256, 300, 301}) {
    SCOPED_TRACE("rows of " + std::to_string(C));
    const int64_t R = 24;
    Shape fs(DType::kF32, {R, C}), is(DType::kI32, {R, C});
    std::vector<float> xf = testing::random_vec<float>(size_t(R * C), -4, 4, 31);
    std::vector<int32_t> xi(xf.size());
    for (size_t i = 0; i < xf.size(); ++i) xi[i] = static_cast<int32_t>(xf[i] * 1000);
    for (const IsaCase& c : kIsas) {
      fs::path dir = fs::temp_directory_path() / ("radix-red-" + std::to_string(::getpid()) + "-" + c.name);
      CompileFnOptions o = testing::isa_options(c, 0, {"schedule-script"}, dir);
      auto exe = must(compile_fn(cpu(), o, [](Tensor f, Tensor i) {
        return std::make_tuple(reduce_sum(f, {1}), reduce_max(f, {1}), reduce_sum(f, {0}), reduce_min(i, {1}),
                               reduce_sum(i, {0}));
      }, fs, is));
      EXPECT_FALSE(exe.executable().stats().schedule_fell_back) << c.name;
      const std::string script = slurp_stage(dir, "schedule-script.mlir");
      EXPECT_NE(script.find("tile_reduction_using_for"), std::string::npos) << c.name;
      EXPECT_NE(script.find("0 left as loops"), std::string::npos) << c.name << "\n" << script.substr(0, 300);
      // Row reductions' partial sums: 16 lanes (64 as four vectors for 256).
      EXPECT_NE(script.find(C == 256 ? "tile_sizes = [0, 64]" : "tile_sizes = [0, 16]"), std::string::npos) << c.name;
      EXPECT_EQ(script.find("tile_sizes = [0, 4]"), std::string::npos) << c.name;
      fs::remove_all(dir);
      auto [rsum, rmax, csum, imin, isum] = must(exe.call(must(cpu().buffer(fs, xf)), must(cpu().buffer(is, xi))));
      std::vector<float> want_rsum(R, 0), want_rmax(R, -INFINITY), want_csum(C, 0);
      std::vector<int32_t> want_imin(R, INT32_MAX), want_isum(C, 0);
      std::vector<double> acc_r(R, 0), acc_c(C, 0);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t k = 0; k < C; ++k) {
          float v = xf[size_t(r * C + k)];
          acc_r[size_t(r)] += v;
          acc_c[size_t(k)] += v;
          want_rmax[size_t(r)] = std::max(want_rmax[size_t(r)], v);
          want_imin[size_t(r)] = std::min(want_imin[size_t(r)], xi[size_t(r * C + k)]);
          want_isum[size_t(k)] += xi[size_t(r * C + k)];
        }
      for (int64_t r = 0; r < R; ++r) want_rsum[size_t(r)] = float(acc_r[size_t(r)]);
      for (int64_t k = 0; k < C; ++k) want_csum[size_t(k)] = float(acc_c[size_t(k)]);
      // Sums reassociate (partial sums per lane): f32 sums of <= 301 values of
      // size <= 4 vs a double reference, atol 3e-4. Max / min / int sums: exact.
      EXPECT_TRUE(testing::all_close(must(rsum.to_host<float>()), want_rsum, 1e-5, 3e-4)) << c.name;
      EXPECT_TRUE(testing::all_close(must(csum.to_host<float>()), want_csum, 1e-5, 3e-4)) << c.name;
      EXPECT_EQ(must(rmax.to_host<float>()), want_rmax) << c.name;
      EXPECT_EQ(must(imin.to_host<int32_t>()), want_imin) << c.name;
      EXPECT_EQ(must(isum.to_host<int32_t>()), want_isum) << c.name;
    }
  }
}

TEST(Schedule, InvalidIsaOverrideIsAnError) {
  CompileFnOptions o;
  o.compile.codegen.cpu.schedule_isa = {12, 16};
  auto exe = compile_fn(cpu(), o, [](Tensor a) { return a; }, Shape(DType::kF32, {4}));
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("schedule_isa"), std::string::npos) << exe.status().message();
}

TEST(Schedule, HostIsaIsDetected) {
  VectorIsa h = host_vector_isa();
  EXPECT_TRUE(h.f32_lanes == 4 || h.f32_lanes == 8 || h.f32_lanes == 16);
  EXPECT_TRUE(h.registers == 16 || h.registers == 32);
}

// CompileOptions.codegen.target_cpu sizes the schedule for that CPU's
// registers: code for Zen 3 compiled on an AVX-512 host tiled for 32 zmm
// registers and spilled most of its 8 x 32 accumulator tile out of AVX2's 16
// (1024^3 at 46 GFLOP/s against 100 with AVX2's 6 x 16 tiles).
TEST(Schedule, TargetCpuSetsTheScheduleIsa) {
  auto eq = [](VectorIsa a, VectorIsa b) { return a.f32_lanes == b.f32_lanes && a.registers == b.registers; };
  EXPECT_TRUE(eq(target_vector_isa("x86-64"), VectorIsa{4, 16}));
  EXPECT_TRUE(eq(target_vector_isa("znver3"), VectorIsa{8, 16}));
  EXPECT_TRUE(eq(target_vector_isa("skylake-avx512"), VectorIsa{16, 32}));
  EXPECT_TRUE(eq(target_vector_isa("znver3 +avx2,+fma,+avx512f"), VectorIsa{16, 32}));  // explicit features win
  EXPECT_TRUE(eq(target_vector_isa(""), host_vector_isa()));
  // What a target needs that this host lacks: nothing for the host itself
  // or the baseline x86-64; a made-up feature is named.
  EXPECT_TRUE(features_missing_on_host("").empty());
#if defined(__x86_64__)
  EXPECT_TRUE(features_missing_on_host("x86-64").empty());
  EXPECT_EQ(features_missing_on_host("x86-64 +sse2,+radix-made-up"), std::vector<std::string>{"radix-made-up"});
#endif
  // End to end: a packed matmul for the baseline x86-64 CPU (SSE, which every
  // x86-64 host runs) takes panels of 2 x 4 lanes, whatever this host has.
#if defined(__x86_64__)
  const int64_t n = 256;
  Shape s(DType::kF32, {n, n});
  std::vector<float> a = testing::random_vec<float>(static_cast<size_t>(n * n), -1, 1, 21);
  std::vector<float> b = testing::random_vec<float>(static_cast<size_t>(n * n), -1, 1, 22);
  const std::vector<float> want = naive_matmul(a, b, n, n, n);
  fs::path dir = fs::temp_directory_path() / ("radix-target-isa-" + std::to_string(::getpid()));
  CompileFnOptions o;
  o.compile.codegen.target_cpu = "x86-64";
  o.compile.diagnostics.dump = {"schedule-script", "asm"};
  o.compile.diagnostics.dump_dir = dir.string();
  auto exe = must(compile_fn(cpu(), o, [](Tensor x, Tensor y) { return matmul(x, y); }, s, s));
  Buffer out = must(exe.call(must(cpu().buffer(s, a)), must(cpu().buffer(s, b))));
  EXPECT_TRUE(testing::all_close(must(out.to_host<float>()), want, 1e-4, 2e-4));
  const std::string script = slurp_stage(dir, "schedule-script.mlir"), asm_text = slurp_stage(dir, "asm.s");
  fs::remove_all(dir);
  EXPECT_NE(script.find("packed_sizes = [0, 8, 0]"), std::string::npos) << script.substr(0, 400);
  ASSERT_FALSE(asm_text.empty());
  EXPECT_EQ(asm_text.find("%ymm"), std::string::npos);
  EXPECT_EQ(asm_text.find("%zmm"), std::string::npos);
#endif
}

// Reductions over several axes at once (and full reductions) take the
// vectorized reduction paths, not plain loops, on every ISA.
TEST(Schedule, MultiAxisReductionsAreVectorized) {
  const int64_t A = 8, B = 6, C = 32;
  const Shape s(DType::kF32, {A, B, C});
  std::vector<float> x = testing::random_vec<float>(static_cast<size_t>(A * B * C), -1, 1, 31);
  for (const IsaCase& c : kIsas) {
    SCOPED_TRACE(c.name);
    fs::path dir = fs::temp_directory_path() / ("radix-multired-" + std::to_string(::getpid()) + "-" + c.name);
    CompileFnOptions o = testing::isa_options(c, 0, {"schedule-script"}, dir);
    auto exe = must(compile_fn(cpu(), o, [](Tensor t) {
      return std::make_tuple(reduce_sum(t, {0, 2}), reduce_max(t), reduce_sum(t, {1, 2}));
    }, s));
    const std::string script = slurp_stage(dir, "schedule-script.mlir");
    fs::remove_all(dir);
    EXPECT_NE(script.find("3 reductions"), std::string::npos) << script.substr(0, 200);
    auto [s02, mx, s12] = must(exe.call(must(cpu().buffer(s, x))));
    std::vector<float> w02(B, 0), w12(A, 0);
    float wmx = -INFINITY;
    double acc02[6] = {0}, acc12[8] = {0};
    for (int64_t a = 0; a < A; ++a)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < C; ++k) {
          const float v = x[static_cast<size_t>((a * B + b) * C + k)];
          acc02[b] += v;
          acc12[a] += v;
          wmx = std::max(wmx, v);
        }
    for (int64_t b = 0; b < B; ++b) w02[static_cast<size_t>(b)] = static_cast<float>(acc02[b]);
    for (int64_t a = 0; a < A; ++a) w12[static_cast<size_t>(a)] = static_cast<float>(acc12[a]);
    // f32 sums of <= 256 terms in [-1, 1], reassociated: 1e-4 absolute.
    EXPECT_TRUE(testing::all_close(must(s02.to_host<float>()), w02, 1e-5, 1e-4));
    EXPECT_TRUE(testing::all_close(must(s12.to_host<float>()), w12, 1e-5, 1e-4));
    EXPECT_EQ(must(mx.to_host<float>())[0], wmx);
  }
}

// Row-fused groups keep their per-row temporaries (the row's max / sum, a row
// of exp values) on the stack, allocated once per call (or once per parallel
// row), not once per row: so 200,000 rows neither call malloc per row nor
// grow the stack per row (per-row stack buffers would need ~50 MB here, far
// beyond a thread's stack). Softmax, whose exp pass is compute-bound,
// prefetches the next row (and its output row for writing); RMSNorm
// (store-bound) does not: its rows of 128 bytes stream without help (see
// StoreBoundRowGroupsPrefetchLongRowsFromMemory).
TEST(Schedule, RowTemporariesOnTheStackAndSoftmaxPrefetchesTheNextRow) {
  const int64_t R = 200000, C = 32;
  const Shape s(DType::kF32, {R, C}, {"r", "c"});
  std::vector<float> x = testing::random_vec<float>(static_cast<size_t>(R * C), -4, 4, 61);
  for (int threads : {1, 2}) {
    for (bool soft : {true, false}) {
      const std::string what = std::string(soft ? "softmax" : "rms_norm") + " t" + std::to_string(threads);
      fs::path dir = fs::temp_directory_path() / ("radix-rowstack-" + std::to_string(::getpid()));
      fs::remove_all(dir);
      CompileFnOptions o;
      o.compile.codegen.cpu.threads = threads;
      // Normal stores: the 25.6 MB output would otherwise be streamed, and
      // streaming drops the write prefetches (streaming_stores_test).
      o.compile.codegen.cpu.streaming_store_bytes = 0;
      o.compile.diagnostics.dump = {"bufferize"};
      o.compile.diagnostics.dump_dir = dir.string();
      auto fn = [soft](Tensor t) { return soft ? softmax(t, "c") : nn::rms_norm(t, "c", 1e-5); };
      auto exe = must(compile_fn(cpu(), o, fn, s));
      const std::string ir = slurp_stage(dir, "bufferize.mlir");
      fs::remove_all(dir);
      EXPECT_EQ(ir.find("memref.alloc("), std::string::npos) << what << "\n" << ir;
      EXPECT_NE(ir.find("memref.alloca("), std::string::npos) << what << "\n" << ir;
      EXPECT_EQ(ir.find("memref.prefetch") != std::string::npos, soft) << what << "\n" << ir;
      // Softmax's output row is claimed for writing during the exp pass too.
      EXPECT_EQ(ir.find(", write, locality") != std::string::npos, soft) << what << "\n" << ir;
      std::vector<float> got = must(must(exe.call(must(cpu().buffer(s, x)))).to_host<float>());
      // Every 997th row against a double loop (f32 with the polynomial exp).
      for (int64_t r = 0; r < R; r += 997) {
        const float* in = x.data() + r * C;
        double m = in[0], acc = 0, want[C];
        for (int64_t c = 0; c < C; ++c) m = std::max(m, double(in[c]));
        for (int64_t c = 0; c < C; ++c) acc += soft ? std::exp(in[c] - m) : double(in[c]) * in[c];
        for (int64_t c = 0; c < C; ++c)
          want[c] = soft ? std::exp(in[c] - m) / acc : in[c] / std::sqrt(acc / C + 1e-5);
        for (int64_t c = 0; c < C; ++c)
          ASSERT_NEAR(got[static_cast<size_t>(r * C + c)], want[c], 2e-6 + 2e-5 * std::abs(want[c]))
              << what << " row " << r << " column " << c;
      }
    }
  }
}

// RMSNorm and LayerNorm (no transcendental: their last pass is bound by its
// stores) prefetch the next row in that pass when their rows are long (1 KiB
// and up) and their input is 8 MiB or more (read from memory): [2048, 1024]
// and [4096, 768]; not [256, 1024] (1 MiB, cached) nor [65536, 32] (8 MiB
// of 128-byte rows). Results against a double loop either way.
TEST(Schedule, StoreBoundRowGroupsPrefetchLongRowsFromMemory) {
  struct Case { int64_t rows, cols; bool layer, prefetch; };
  for (Case c : {Case{2048, 1024, false, true}, Case{4096, 768, true, true}, Case{256, 1024, false, false},
                 Case{65536, 32, false, false}}) {
    const std::string what = std::string(c.layer ? "layer_norm " : "rms_norm ") + std::to_string(c.rows) + "x" +
                             std::to_string(c.cols);
    const Shape s(DType::kF32, {c.rows, c.cols}, {"r", "c"});
    fs::path dir = fs::temp_directory_path() / ("radix-rowpf-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    CompileFnOptions o;
    o.compile.diagnostics.dump = {"bufferize"};
    o.compile.diagnostics.dump_dir = dir.string();
    const bool layer = c.layer;
    auto norm = [layer](Tensor t) {
      return layer ? nn::layer_norm(t, std::nullopt, std::nullopt, "c", 1e-5) : nn::rms_norm(t, "c", 1e-5);
    };
    auto exe = must(compile_fn(cpu(), o, norm, s));
    const std::string ir = slurp_stage(dir, "bufferize.mlir");
    fs::remove_all(dir);
    EXPECT_EQ(ir.find("memref.prefetch") != std::string::npos, c.prefetch) << what << "\n" << ir;
    std::vector<float> x = testing::random_vec<float>(static_cast<size_t>(c.rows * c.cols), -4, 4, 62);
    std::vector<float> got = must(must(exe.call(must(cpu().buffer(s, x)))).to_host<float>());
    for (int64_t r = 0; r < c.rows; r += 97) {
      const float* in = x.data() + r * c.cols;
      double mean = 0, var = 0;
      for (int64_t k = 0; k < c.cols; ++k) mean += in[k];
      mean = layer ? mean / double(c.cols) : 0;
      for (int64_t k = 0; k < c.cols; ++k) var += (in[k] - mean) * (in[k] - mean);
      const double inv = 1 / std::sqrt(var / double(c.cols) + 1e-5);
      for (int64_t k = 0; k < c.cols; ++k) {
        const double want = (in[k] - mean) * inv;
        ASSERT_NEAR(got[static_cast<size_t>(r * c.cols + k)], want, 1e-5 + 1e-5 * std::abs(want))
            << what << " row " << r << " column " << k;
      }
    }
  }
}

// Packed matmuls: each register tile prefetches the next tile's block of C
// into L2, one prefetch per line of each of its rows (8 rows x 2 lines on
// AVX-512; the 6- and 4-row parts on AVX2 one line each), on one and two
// threads, and the product matches a double loop. 520 rows on AVX-512:
// 65 row tiles, so the last panel of the last row tile prefetches the
// clamped (last) row tile again, inside C. Three K blocks of 512: only
// blocks after the first read C (radix-accumulators-from-fill), and
// prefetch it. On AVX-512 each tile's K loop also prefetches, into L1, one
// row of the next row tile of A per panel (panel p: row p of the next 8) at
// the column each K step reads, clamped to A's last row (the last tile's
// next rows would start at 520); AVX2's tiles do not.
TEST(Schedule, PackedTilesPrefetchTheNextTilesOfCAndA) {
  const int64_t M = 520, N = 512, K = 1536;  // AVX2 would take K = 1024 as one block: C never read back
  const Shape sa(DType::kF32, {M, K}), sb(DType::kF32, {K, N});
  const std::vector<float> a = testing::random_vec<float>(size_t(M * K), -1, 1, 81);
  const std::vector<float> b = testing::random_vec<float>(size_t(K * N), -1, 1, 82);
  const std::vector<double> want = testing::matmul_reference(a, b, M, N, K);
  for (const IsaCase& c : {kIsas[1], kIsas[2]})
    for (int threads : {1, 2}) {
      const std::string what = std::string(c.name) + " t" + std::to_string(threads);
      fs::path dir = fs::temp_directory_path() / ("radix-accpf-" + std::to_string(::getpid()));
      CompileFnOptions o = testing::isa_options(c, threads, {"bufferize"}, dir);
      auto exe = must(compile_fn(cpu(), o, [](Tensor x, Tensor y) { return matmul(x, y); }, sa, sb));
      EXPECT_FALSE(exe.executable().stats().schedule_fell_back) << what;
      const std::string ir = slurp_stage(dir, "bufferize.mlir");
      fs::remove_all(dir);
      // AVX-512: one 8-row part; AVX2 (520 = 480 in 6-row tiles + 40 in 4-row ones): 6 + 4.
      const bool avx512 = c.isa.registers >= 32;
      EXPECT_EQ(testing::count_of(ir, "read, locality<2>, data"), avx512 ? size_t{16} : size_t{10}) << what << "\n" << ir;
      EXPECT_EQ(testing::count_of(ir, "read, locality<3>, data"), avx512 ? size_t{1} : size_t{0}) << what << "\n" << ir;
      if (avx512) {
        // A's: inside the K loop (the scf.for carrying the accumulator tile),
        // on A itself (the function's first argument), after the clamp to row 519.
        const size_t k_loop = ir.find("iter_args("), pf = ir.find("read, locality<3>, data");
        ASSERT_NE(k_loop, std::string::npos) << what;
        EXPECT_LT(k_loop, pf) << what << "\n" << ir;
        const size_t line = ir.rfind('\n', pf);
        EXPECT_NE(ir.substr(line, pf - line).find("memref.prefetch %arg0["), std::string::npos) << what << "\n" << ir;
        EXPECT_NE(ir.find("%c519"), std::string::npos) << what << "\n" << ir;
        EXPECT_NE(ir.find("arith.minui"), std::string::npos) << what << "\n" << ir;
      }
      std::vector<float> got = must(must(exe.call(must(cpu().buffer(sa, a)), must(cpu().buffer(sb, b)))).to_host<float>());
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        // 1536 f32 products of magnitude <= 1 in f32 sums.
        ASSERT_NEAR(got[i], want[i], 4e-4) << what << " at " << i;
    }
}

// f32 x[M, K] · B[K, N] on AVX-512 with B in L2 (at most 1 MiB) and 256
// to 1024 rows a thread: B read in place by small-block register tiles,
// not packed (read_small_b_in_place). Outside that (B of 4 MiB, 4096 rows
// on one thread, 256 rows on two) and on AVX2's tiling: packed. Each form
// against a double loop.
TEST(Schedule, Avx512ReadsSmallBInPlace) {
  struct Case {
    int64_t m, n, k;
    int threads;
    bool in_place;  // on AVX-512
  };
  for (const Case& s : {Case{256, 256, 256, 1, true}, Case{512, 512, 512, 2, true}, Case{1024, 512, 256, 1, true},
                        Case{256, 256, 256, 2, false}, Case{2048, 256, 256, 1, false}, Case{1024, 1024, 1024, 1, false}}) {
    const Shape sa(DType::kF32, {s.m, s.k}), sb(DType::kF32, {s.k, s.n});
    const std::vector<float> a = testing::random_vec<float>(size_t(s.m * s.k), -1, 1, 85);
    const std::vector<float> b = testing::random_vec<float>(size_t(s.k * s.n), -1, 1, 86);
    const std::vector<double> want = testing::matmul_reference(a, b, s.m, s.n, s.k);
    for (const IsaCase& c : {kIsas[1], kIsas[2]}) {
      const std::string what = std::string(c.name) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                               std::to_string(s.k) + " t" + std::to_string(s.threads);
      fs::path dir = fs::temp_directory_path() / ("radix-bip-" + std::to_string(::getpid()));
      CompileFnOptions o = testing::isa_options(c, s.threads, {"schedule-script"}, dir);
      auto exe = must(compile_fn(cpu(), o, [](Tensor x, Tensor y) { return matmul(x, y); }, sa, sb));
      const std::string script = slurp_stage(dir, "schedule-script.mlir");
      fs::remove_all(dir);
      const bool in_place = s.in_place && c.isa.registers >= 32;
      EXPECT_NE(script.find(in_place ? "1 matmuls (0 packed)" : "1 matmuls (1 packed)"), std::string::npos)
          << what << "\n" << script.substr(0, 400);
      EXPECT_NE(script.find(in_place ? ", 1 B read in place" : ", 0 B read in place"), std::string::npos) << what;
      std::vector<float> got = must(must(exe.call(must(cpu().buffer(sa, a)), must(cpu().buffer(sb, b)))).to_host<float>());
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        // <= 1024 f32 products of magnitude <= 1 in f32 sums.
        ASSERT_NEAR(got[i], want[i], 3e-4) << what << " at " << i;
    }
  }
}

// Packed matmuls: the register tiles take their accumulators in the first K
// block from C's fill (zeros) instead of loading C (radix-accumulators-from-
// fill): an scf.if on the K block where K takes several blocks (1536), the
// zeros alone where it takes one (256); on both ISAs' tilings, one and two
// threads, against a double loop.
TEST(Schedule, PackedTilesStartTheFirstKBlockFromZeros) {
  const int64_t M = 264, N = 256;
  for (int64_t K : {1536, 256}) {
    const Shape sa(DType::kF32, {M, K}), sb(DType::kF32, {K, N});
    const std::vector<float> a = testing::random_vec<float>(size_t(M * K), -1, 1, 91);
    const std::vector<float> b = testing::random_vec<float>(size_t(K * N), -1, 1, 92);
    const std::vector<double> want = testing::matmul_reference(a, b, M, N, K);
    for (const IsaCase& c : {kIsas[1], kIsas[2]})
      for (int threads : {1, 2}) {
        const std::string what = std::string(c.name) + " K=" + std::to_string(K) + " t" + std::to_string(threads);
        fs::path dir = fs::temp_directory_path() / ("radix-acczero-" + std::to_string(::getpid()));
        CompileFnOptions o = testing::isa_options(c, threads, {"bufferize"}, dir);
        auto exe = must(compile_fn(cpu(), o, [](Tensor x, Tensor y) { return matmul(x, y); }, sa, sb));
        EXPECT_FALSE(exe.executable().stats().schedule_fell_back) << what;
        const std::string ir = slurp_stage(dir, "bufferize.mlir");
        fs::remove_all(dir);
        // Each part's K loop starts from the branch (several K blocks) or
        // from the broadcast zeros (one).
        const std::regex from(R"(iter_args\(%\w+ = %(\w+)\) -> \(vector<\d+x\d+xf32>\))");
        size_t tiles = 0, from_zeros = 0;
        for (auto it = std::sregex_iterator(ir.begin(), ir.end(), from); it != std::sregex_iterator(); ++it) {
          const std::string init = (*it)[1];
          if (ir.find("%" + init + " = vector.transfer_read") != std::string::npos ||
              ir.find("%" + init + " = vector.broadcast") != std::string::npos ||
              ir.find("%" + init + " = scf.if") != std::string::npos)
            ++tiles;
          if (ir.find(K > 512 ? "%" + init + " = scf.if" : "%" + init + " = vector.broadcast") != std::string::npos)
            ++from_zeros;
        }
        EXPECT_GE(from_zeros, 1u) << what << "\n" << ir;
        EXPECT_EQ(from_zeros, tiles) << what << "\n" << ir;
        std::vector<float> got =
            must(must(exe.call(must(cpu().buffer(sa, a)), must(cpu().buffer(sb, b)))).to_host<float>());
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i)
          // K f32 products of magnitude <= 1 in f32 sums.
          ASSERT_NEAR(got[i], want[i], 4e-4) << what << " at " << i;
      }
  }
}

// Dot-product tiles (the decode mat-vec): each step's read of a block of
// weight rows prefetches the same columns of the next rows, clamped to the
// last row (the [1, K] activation is not prefetched); f32 and bf16 weights,
// N = 2048 and 2050, 1 and 2 threads, the AVX-512 and AVX2 tilings, against
// a double loop over the weights' exact values. These rows are short enough
// to be read one per tile (kShortRowBytes), except f32 on AVX2 (3 KiB rows,
// over its 1.5 KiB): 8 per tile (2 where 8 do not divide N) and without the
// prefetches (dot_tiles: faster on Zen 3).
TEST(Schedule, DotProductTilesPrefetchTheNextWeightRows) {
  const int64_t K = 768;
  for (const IsaCase& c : kIsas) {
    if (c.isa.f32_lanes < 8) continue;
    for (DType d : {DType::kF32, DType::kBF16})
      for (int64_t N : {2048, 2050})
        for (int threads : {1, 2}) {
          const std::string what =
              std::string(c.name) + " " + std::string(dtype_name(d)) + " N=" + std::to_string(N) + " t" + std::to_string(threads);
          std::vector<float> x = testing::random_vec<float>(size_t(K), -1, 1, 71);
          std::vector<float> wf = testing::random_vec<float>(size_t(N * K), -1, 1, 72);
          std::vector<uint16_t> wb(wf.size());
          if (d == DType::kBF16)
            for (size_t i = 0; i < wf.size(); ++i) wf[i] = bf16_to_float(wb[i] = float_to_bf16(wf[i]));
          fs::path dir = fs::temp_directory_path() / ("radix-dotpf-" + std::to_string(::getpid()));
          CompileFnOptions o = testing::isa_options(c, threads, {"bufferize"}, dir);
          o.compile.codegen.cpu.bf16_kernels = false;  // the f32 schedules' bf16 handling (the AVX-512 BF16 kernels: bf16_kernels_test)
          const Shape xs(DType::kF32, {1, K}), ws(d, {N, K});
          auto exe = must(compile_fn(
              cpu(), o, [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); }, xs, ws));
          const std::string ir = slurp_stage(dir, "bufferize.mlir");
          fs::remove_all(dir);
          const bool avx2_f32 = c.isa.registers == 16 && d == DType::kF32;
          // The weights are the second argument; the prefetch reads them into L2.
          EXPECT_EQ(ir.find("memref.prefetch %arg1[") != std::string::npos, !avx2_f32) << what << "\n" << ir;
          if (!avx2_f32) EXPECT_NE(ir.find("read, locality<2>, data"), std::string::npos) << what;
          // The activation row (the first argument, [1, K]) has no next rows.
          EXPECT_EQ(ir.find("memref.prefetch %arg0["), std::string::npos) << what << "\n" << ir;
          // Each step reads [rows, 8] of W: 8 rows, or 2 where 8 do not divide N.
          if (avx2_f32)
            EXPECT_NE(ir.find(N % 8 == 0 ? "vector<8x8xf32>" : "vector<2x8xf32>"), std::string::npos) << what << "\n" << ir;
          Buffer wbuf = d == DType::kBF16 ? must(cpu().buffer(ws, wb)) : must(cpu().buffer(ws, wf));
          std::vector<float> got = must(must(exe.call(must(cpu().buffer(xs, x)), std::move(wbuf))).to_host<float>());
          ASSERT_EQ(got.size(), size_t(N));
          for (int64_t j = 0; j < N; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < K; ++k) acc += double(x[size_t(k)]) * wf[size_t(j * K + k)];
            // 768 f32 products of magnitude <= 1, summed in f32 partial sums.
            ASSERT_NEAR(got[size_t(j)], acc, 1e-4) << what << " row " << j;
          }
        }
  }
}

// One-row dot-product tiles of rows of at most 1 KiB prefetch as many rows
// ahead as fit in 2 KiB (stories15M's 576-byte bf16 rows: 3), longer rows
// the next one (stories110M's 1.5 KiB: 1): the prefetched row is the tile's
// row plus that many, clamped to the last row (N = 64: 63). AVX-512 and
// AVX2 tilings (both one row per tile here), against a double loop.
TEST(Schedule, ShortDotProductRowsPrefetchRowsAhead) {
  const int64_t N = 64;
  for (const IsaCase& c : kIsas) {
    if (c.isa.f32_lanes < 8) continue;
    for (auto [K, ahead] : {std::pair<int64_t, int>{288, 3}, {768, 1}}) {
      const std::string what = std::string(c.name) + " K=" + std::to_string(K);
      std::vector<float> x = testing::random_vec<float>(size_t(K), -1, 1, 73);
      std::vector<float> wf = testing::random_vec<float>(size_t(N * K), -1, 1, 74);
      std::vector<uint16_t> wb(wf.size());
      for (size_t i = 0; i < wf.size(); ++i) wf[i] = bf16_to_float(wb[i] = float_to_bf16(wf[i]));
      fs::path dir = fs::temp_directory_path() / ("radix-dotahead-" + std::to_string(::getpid()));
      CompileFnOptions o = testing::isa_options(c, 1, {"bufferize"}, dir);
      o.compile.codegen.cpu.bf16_kernels = false;
      const Shape xs(DType::kF32, {1, K}), ws(DType::kBF16, {N, K});
      auto exe = must(compile_fn(
          cpu(), o, [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); }, xs, ws));
      const std::string ir = slurp_stage(dir, "bufferize.mlir");
      fs::remove_all(dir);
      std::smatch m;
      ASSERT_TRUE(std::regex_search(
          ir, m, std::regex(R"(arith\.addi %\w+, %c(\d+)(?:_\d+)? : index\s*\n\s*(%\w+) = arith\.minui %\w+, %c63(?:_\d+)? : index\s*\n\s*memref\.prefetch %arg1\[\2,)")))
          << what << "\n" << ir;
      EXPECT_EQ(m[1].str(), std::to_string(ahead)) << what << "\n" << ir;
      std::vector<float> got = must(must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, wb)))).to_host<float>());
      ASSERT_EQ(got.size(), size_t(N));
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(x[size_t(k)]) * wf[size_t(j * K + k)];
        ASSERT_NEAR(got[size_t(j)], acc, 1e-4) << what << " row " << j;  // K f32 products of magnitude <= 1
      }
    }
  }
}

// A dot-product tile's partial sums ([tm, tn, v] lanes -> [tm, tn]) combine
// as one vector.reduction per output (a shuffle tree), not as a chain of one
// scalar add per lane; a column sum (the reduced dim outermost) keeps vector
// adds across rows. Both against double loops, on one and two threads.
TEST(Schedule, DotProductSumsCombineAsTreesColumnSumsAsVectorAdds) {
  const int64_t K = 288, N = 1000, R = 256, C = 64;
  std::vector<float> x = testing::random_vec<float>(size_t(K), -1, 1, 81);
  std::vector<float> w = testing::random_vec<float>(size_t(N * K), -1, 1, 82);
  std::vector<float> m = testing::random_vec<float>(size_t(R * C), -1, 1, 83);
  for (int threads : {1, 2}) {
    const std::string what = "t" + std::to_string(threads);
    fs::path dir = fs::temp_directory_path() / ("radix-dotsum-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    CompileFnOptions o;
    o.compile.codegen.cpu.threads = threads;
    o.compile.diagnostics.dump = {"schedule"};
    o.compile.diagnostics.dump_dir = dir.string();
    const Shape xs(DType::kF32, {1, K}), ws(DType::kF32, {N, K});
    auto dot = must(compile_fn(
        cpu(), o, [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); }, xs, ws));
    std::string ir = slurp_stage(dir, "schedule.mlir");
    fs::remove_all(dir);
    EXPECT_NE(ir.find("vector.reduction <add>"), std::string::npos) << what << "\n" << ir;
    EXPECT_EQ(ir.find("vector.multi_reduction"), std::string::npos) << what << "\n" << ir;
    std::vector<float> got = must(must(dot.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, w)))).to_host<float>());
    ASSERT_EQ(got.size(), size_t(N));
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += double(x[size_t(k)]) * w[size_t(j * K + k)];
      ASSERT_NEAR(got[size_t(j)], acc, 1e-4) << what << " row " << j;  // 288 f32 products of magnitude <= 1
    }

    const Shape ms(DType::kF32, {R, C});
    auto colsum = must(compile_fn(cpu(), o, [](Tensor a) { return reduce_sum(a, {0}); }, ms));
    ir = slurp_stage(dir, "schedule.mlir");
    fs::remove_all(dir);
    EXPECT_EQ(ir.find("vector.reduction"), std::string::npos) << what << "\n" << ir;
    EXPECT_EQ(ir.find("vector.multi_reduction"), std::string::npos) << what << "\n" << ir;
    got = must(must(colsum.call(must(cpu().buffer(ms, m)))).to_host<float>());
    ASSERT_EQ(got.size(), size_t(C));
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int64_t r = 0; r < R; ++r) acc += m[size_t(r * C + c)];
      ASSERT_NEAR(got[size_t(c)], acc, 1e-4) << what << " column " << c;  // 256 terms of magnitude <= 1
    }
  }
}

// `got` = x[M, K] · W[N, K]ᵀ (W as floats, already rounded to its 16-bit
// type) against a double loop: at most 256 f32 products of magnitude <= 1.
void expect_x_times_wt(const std::vector<float>& got, const std::vector<float>& x, const std::vector<float>& w,
                       int64_t M, int64_t N, int64_t K) {
  ASSERT_EQ(got.size(), size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += double(x[size_t(i * K + k)]) * w[size_t(j * K + k)];
      ASSERT_NEAR(got[size_t(i * N + j)], acc, 5e-5) << i << "," << j;
    }
}

// A prompt times bf16 weights [n, k], short rows (K < 4M: not operand-
// swapped, so not widened first): B's packing copy transposes p x 8
// tiles of bf16, which move as i16 (radix-half-transposes-as-integers;
// AVX2 has no bf16 vectors and LLVM took them apart element by element).
// The product against a double loop.
TEST(Schedule, Bf16WeightPackingTransposesI16Lanes) {
  const int64_t M = 64, K = 128, N = 512;
  std::vector<float> x = testing::random_vec<float>(size_t(M * K), -1, 1, 91);
  std::vector<float> wf = testing::random_vec<float>(size_t(N * K), -1, 1, 92);
  std::vector<uint16_t> wb(wf.size());
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = bf16_to_float(wb[i] = float_to_bf16(wf[i]));
  fs::path dir = fs::temp_directory_path() / ("radix-bf16pack-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  CompileFnOptions o;
  o.compile.codegen.cpu.bf16_kernels = false;  // the f32 schedules' bf16 handling (the AVX-512 BF16 kernels: bf16_kernels_test)
  o.compile.diagnostics.dump = {"bufferize"};
  o.compile.diagnostics.dump_dir = dir.string();
  const Shape xs(DType::kF32, {M, K}), ws(DType::kBF16, {N, K});
  auto exe = must(compile_fn(
      cpu(), o, [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); }, xs, ws));
  const std::string ir = slurp_stage(dir, "bufferize.mlir");
  fs::remove_all(dir);
  EXPECT_NE(ir.find("vector.transpose"), std::string::npos) << ir;
  EXPECT_EQ(std::regex_search(ir, std::regex("vector.transpose[^\n]*xbf16>")), false) << ir;
  EXPECT_TRUE(std::regex_search(ir, std::regex("vector.transpose[^\n]*xi16>"))) << ir;
  expect_x_times_wt(must(must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, wb)))).to_host<float>()), x,
                    wf, M, N, K);
}

// A prompt times 16-bit weights whose f32 form is operand-swapped (K >= 4M):
// W widened to f32 by an elementwise op that the packed schedule fuses into
// each K block of its A operand (widen_half_weights_of_prompts), so the
// script fuses it (twice: into the output block loop, then the K loop) and
// never falls back; on 16 registers, 2048 rows (no whole 96-row blocks)
// split at 2016 first, the last 32 rows a 16-bit product of their own. A
// 128-row prompt not swapped has W widened whole before it is packed.
// bf16 and f16, every ISA's tiling, one and two threads, against a double
// loop over the rounded weights.
TEST(Schedule, HalfWeightsOfPromptsAreWidenedInTheirKBlocks) {
  // {M, K}: swapped (K >= 4M), fused; and a 128-row prompt of short rows
  // (K < 4M), not swapped: W widened whole, then packed as f32.
  for (auto [M, K] : {std::pair<int64_t, int64_t>{32, 256}, {128, 128}}) {
    const std::vector<float> x = testing::random_vec<float>(size_t(M * K), -1, 1, 93);
    const Shape xs(DType::kF32, {M, K});
    for (DType wd : {DType::kBF16, DType::kF16})
      for (int64_t N : {int64_t{768}, int64_t{2048}}) {
        std::vector<float> wf = testing::random_vec<float>(size_t(N * K), -1, 1, 94);
        std::vector<uint16_t> wb(wf.size());
        for (size_t i = 0; i < wf.size(); ++i)
          wf[i] = wd == DType::kBF16 ? bf16_to_float(wb[i] = float_to_bf16(wf[i]))
                                     : f16_to_float(wb[i] = float_to_f16(wf[i]));
        const Shape ws(wd, {N, K});
        for (const IsaCase& c : kIsas)
          for (int threads : {1, 2}) {
            SCOPED_TRACE(std::string(dtype_name(wd)) + " M " + std::to_string(M) + " N " + std::to_string(N) +
                         " K " + std::to_string(K) + " " + c.name + " threads " + std::to_string(threads));
            fs::path dir = fs::temp_directory_path() / ("radix-widen-" + std::to_string(::getpid()));
            CompileFnOptions o = testing::isa_options(c, threads, {"schedule-script"}, dir);
            o.compile.codegen.cpu.bf16_kernels = false;  // AVX-512 BF16 hosts: their kernels take bf16 (bf16_kernels_test)
            auto exe = must(compile_fn(
                cpu(), o, [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); }, xs, ws));
            EXPECT_FALSE(exe.executable().stats().schedule_fell_back);
            const std::string script = slurp_stage(dir, "schedule-script.mlir");
            fs::remove_all(dir);
            EXPECT_NE(script.find(", 1 half-precision weights widened"), std::string::npos) << script.substr(0, 400);
            // Swapped: one packed part reads the widened W (the fusion's one match).
            EXPECT_EQ(testing::count_of(script, "attributes{radix.widened_weights = 0 : i64}"), K >= 4 * M ? 1u : 0u)
                << script;
            expect_x_times_wt(
                must(must(exe.call(must(cpu().buffer(xs, x)), must(cpu().buffer(ws, wb)))).to_host<float>()), x, wf,
                M, N, K);
          }
      }
  }
}

// A single row times short weight rows reads one weight row per tile, up
// to a 64-byte line per step (at most four vectors: AVX2's bf16 / f16 rows
// take four): four short row streams side by side read memory slower than
// one. Short: at most 1.5 KiB on 16-register ISAs (SSE, AVX2), 3 KiB on
// AVX-512; longer rows take tiles of 4 rows, of 8 on AVX-512 where 8 divide
// the rows (there 8 streams, each prefetching the next tile's row, kept up
// with a plain read), and of 8 too for AVX2's f32 rows, which prefetch
// nothing (faster so on Zen 3); AVX2's short f32 rows prefetch only on
// several threads. Every variant against a double loop, on 1 and 2 threads.
TEST(Schedule, ShortWeightRowsTakeOneRowPerTile) {
  struct Case {
    DType d;
    int64_t K, N;
  };
  const Case cases[] = {{DType::kF32, 288, 1032},    // 1152-byte rows (stories15M)
                        {DType::kBF16, 768, 1032},   // 1536 bytes (stories110M in bf16)
                        {DType::kF16, 768, 1032},    // the same in f16
                        {DType::kF32, 768, 1032},    // 3 KiB (stories110M)
                        {DType::kF32, 1024, 136},    // 4 KiB, 17 tiles of 8 rows
                        {DType::kF32, 1024, 132},    // 4 KiB, 33 tiles of 4 rows
                        {DType::kBF16, 2048, 40}};   // 4 KiB
  for (const Case& c : cases)
    for (const IsaCase& isa : kIsas)
      for (int threads : {1, 2}) {
        const std::string what = std::string(dtype_name(c.d)) + " K=" + std::to_string(c.K) + " " + isa.name + " t" +
                                 std::to_string(threads);
        std::vector<float> x = testing::random_vec<float>(size_t(c.K), -1, 1, 81);
        std::vector<float> wf = testing::random_vec<float>(size_t(c.N * c.K), -1, 1, 82);
        std::vector<uint16_t> wb(wf.size());
        const bool half = c.d == DType::kBF16 || c.d == DType::kF16;
        if (c.d == DType::kBF16)
          for (size_t i = 0; i < wf.size(); ++i) wf[i] = bf16_to_float(wb[i] = float_to_bf16(wf[i]));
        if (c.d == DType::kF16)
          for (size_t i = 0; i < wf.size(); ++i) wf[i] = f16_to_float(wb[i] = float_to_f16(wf[i]));
        fs::path dir = fs::temp_directory_path() / ("radix-shortrows-" + std::to_string(::getpid()));
        CompileFnOptions o = testing::isa_options(isa, threads, {"bufferize"}, dir);
        o.compile.codegen.cpu.bf16_kernels = false;  // the f32 schedules' bf16 handling (the AVX-512 BF16 kernels: bf16_kernels_test)
        const Shape xs(DType::kF32, {1, c.K}), ws(c.d, {c.N, c.K});
        auto exe = must(compile_fn(
            cpu(), o, [](Tensor a, Tensor b) { return dot_general(a, b, DotDims{{}, {}, {1}, {1}}); }, xs, ws));
        const std::string ir = slurp_stage(dir, "bufferize.mlir");
        fs::remove_all(dir);
        const std::string et(dtype_name(c.d));
        const int64_t lanes = isa.isa.f32_lanes;
        const int64_t row_bytes = c.K * (half ? 2 : 4);
        const bool one_row = row_bytes <= (isa.isa.registers <= 16 ? 1536 : 3072);
        // The weight reads: [v] of one row, or [tn, v] of tn rows.
        const bool avx2_f32 = isa.isa.f32_lanes == 8 && c.d == DType::kF32 && !one_row;
        const int64_t tn = (isa.isa.registers >= 32 || avx2_f32) && c.N % 8 == 0 ? 8 : 4;
        const int64_t line = half ? 32 : 16;  // elements per 64-byte line
        const std::string read = one_row ? "vector<" + std::to_string(std::clamp(line, 2 * lanes, 4 * lanes)) + "x" + et + ">"
                                         : "vector<" + std::to_string(tn) + "x" + std::to_string(lanes) + "x" + et + ">";
        EXPECT_NE(ir.find("%arg1[%"), std::string::npos) << what;
        EXPECT_NE(ir.find(read), std::string::npos) << what << ": wanted " << read << "\n" << ir;
        // Either way the next weight rows are prefetched, except by AVX2's f32
        // row tiles and, on one thread, its single f32 rows.
        const bool avx2_f32_one_row = isa.isa.f32_lanes == 8 && c.d == DType::kF32 && one_row && threads == 1;
        EXPECT_EQ(ir.find("memref.prefetch %arg1[") != std::string::npos, !avx2_f32 && !avx2_f32_one_row) << what;
        Buffer wbuf = half ? must(cpu().buffer(ws, wb)) : must(cpu().buffer(ws, wf));
        std::vector<float> got = must(must(exe.call(must(cpu().buffer(xs, x)), std::move(wbuf))).to_host<float>());
        ASSERT_EQ(got.size(), size_t(c.N));
        for (int64_t j = 0; j < c.N; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < c.K; ++k) acc += double(x[size_t(k)]) * wf[size_t(j * c.K + k)];
          // At most 2048 f32 products of magnitude <= 1, summed in f32 partial sums.
          ASSERT_NEAR(got[size_t(j)], acc, 1e-4) << what << " row " << j;
        }
      }
}

// Decode attention's probabilities times V, p[h, m, t] · v[h, t, d] with a
// few rows m per head: each tile covers V's whole row (d) while its
// accumulators fit in three quarters of the registers and are a power of
// two vectors, so V is read once, front to back, not in two passes of half
// rows. Every ISA, against a double loop; threads 1.
TEST(Schedule, FewRowBatchProductsReadWholeRowsOfB) {
  struct Case {
    int64_t H, M, T, D;
  };
  const Case cases[] = {{12, 1, 64, 64},   // stories110M, one 64-position chunk
                        {6, 1, 40, 48},    // stories15M's head width
                        {4, 3, 24, 64},    // three query rows per head
                        {2, 1, 8, 128},    // a wide head
                        {2, 1, 16, 96}};   // 6 vectors on AVX-512: 2-vector tiles (whole rows 1.7x slower)
  for (const Case& c : cases)
    for (const IsaCase& isa : kIsas) {
      const std::string what = "[" + std::to_string(c.H) + "," + std::to_string(c.M) + "," + std::to_string(c.T) +
                               "] . v[" + std::to_string(c.T) + "," + std::to_string(c.D) + "] " + isa.name;
      fs::path dir = fs::temp_directory_path() / ("radix-pv-" + std::to_string(::getpid()));
      CompileFnOptions o = testing::isa_options(isa, 1, {"schedule-script"}, dir);
      const Shape ps(DType::kF32, {c.H, c.M, c.T}), vs(DType::kF32, {c.H, c.T, c.D});
      auto exe = must(compile_fn(
          cpu(), o, [](Tensor p, Tensor v) { return dot_general(p, v, DotDims{{0}, {0}, {2}, {1}}); }, ps, vs));
      const std::string script = slurp_stage(dir, "schedule-script.mlir");
      fs::remove_all(dir);
      // The register tile's rows (8, 6, 4, 3, 2, 1 dividing M) and its
      // columns: all of D where tm * D / lanes accumulators fit and D /
      // lanes is a power of two, else two vectors (one where D is not a
      // multiple of two).
      const int64_t lanes = isa.isa.f32_lanes, regs = isa.isa.registers;
      int64_t tm = 1;
      for (int64_t r : {8, 6, 4, 3, 2, 1})
        if (c.M % r == 0 && r * 2 <= regs * 3 / 4) {
          tm = r;
          break;
        }
      const int64_t vectors = c.D / lanes;
      const bool whole = tm * vectors <= regs * 3 / 4 && (vectors & (vectors - 1)) == 0;
      const int64_t tn = whole ? c.D : c.D % (2 * lanes) == 0 ? 2 * lanes : lanes;
      const std::string tile = "tile_sizes [1, " + std::to_string(tm) + ", " + std::to_string(tn) + ", 0]";
      EXPECT_NE(script.find(tile), std::string::npos) << what << ": wanted " << tile << "\n" << script;
      const std::vector<float> p = testing::random_vec<float>(size_t(c.H * c.M * c.T), 0, 1, 91);
      const std::vector<float> v = testing::random_vec<float>(size_t(c.H * c.T * c.D), -1, 1, 92);
      std::vector<float> got =
          must(must(exe.call(must(cpu().buffer(ps, p)), must(cpu().buffer(vs, v)))).to_host<float>());
      ASSERT_EQ(got.size(), size_t(c.H * c.M * c.D)) << what;
      for (int64_t h = 0; h < c.H; ++h)
        for (int64_t m = 0; m < c.M; ++m)
          for (int64_t d = 0; d < c.D; ++d) {
            double acc = 0;
            for (int64_t t = 0; t < c.T; ++t)
              acc += double(p[size_t((h * c.M + m) * c.T + t)]) * v[size_t((h * c.T + t) * c.D + d)];
            // At most 64 products of magnitude <= 1, summed in f32.
            ASSERT_NEAR(got[size_t((h * c.M + m) * c.D + d)], acc, 1e-4) << what << " at " << h << "," << m << "," << d;
          }
    }
}

}  // namespace
}  // namespace radix
