// The packed f32 schedule's tuning knobs (blocks, panels, register tiles)
// and the helpers that matmul_schedule.cc (which emits the schedules) and
// matmul_fit.cc (operand swaps, splits and padding to whole tiles) share.
// Internal to the CPU backend.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "radix/backends/cpu/schedule.h"

namespace radix::cpu_schedule {

// Measured on AMD EPYC (Zen 3, AVX2, 1 thread), 1024^3 f32: see bench/README.md.

// Large matmuls (M*N*K >= kPackMinVolume): B (and C) are packed into
// column panels of kPanelVectors vectors (16 f32 on AVX2, 32 on AVX-512),
// laid out [N / panel][K][panel], so the register tile streams B contiguously
// (unpacked, every K step of a 1024-wide B row is a new 4 KiB page and L1 set).
// Loop nest over the packed op (m, n-panel, k, n-in-panel):
//   block-M x kBlockN output blocks (column blocks outermost when there are
//   several row blocks, see emit_packed_matmul), K blocks (L2) — see pack_blocks,
//   register tiles of reg_m rows x 1 panel, K steps of kRegK (one vector.contract
//   of reg_m x panel x kRegK, lowered to FMAs as outer products).
// Block sizes are the largest of each list that divides the dim. AVX-512
// hosts (1-2 MiB of L2 per core) take larger blocks: measured on a Xeon
// (family 6 model 207), one thread, 1024^3 / 4096^3: 64x256x256 129 / 101
// GFLOP/s, 128x256x512 138 / 117, 256x256x512 142 / 138, 512x256x512
// 110 / 141, 256x512x512 106 / 122. AVX2 keeps the Zen 3 tuning (512 KiB L2).
// Threads, all rows in one block: forall tiles per thread (down to one
// panel each). A 256-row, one-panel tile packs 32 KiB of B right before
// the register tiles read it. Measured on Zen 5, two threads, alternated,
// 4 / 2 tiles per thread: 256^3 224 / 219 GFLOP/s (three rounds), 128 x 512
// x 256 191-198 / 154-161, 256 x 512 x 512 210-216 / 188-211, 128 x 768 x 288
// 208-211 / 111-198; 128 x 1024 x 1024 and 128 x 2048 x 768 alike.
inline constexpr int64_t kOneRowBlockTilesPerThread = 4;
inline constexpr int64_t kPackMinVolume = int64_t{1} << 24;
inline constexpr int64_t kPackMinVolumeTransposedB = int64_t{1} << 20, kPackedMinRowsTransposedB = 16;
inline constexpr int64_t kPanelVectors = 2;
inline constexpr int64_t kBlockN = 256;
inline constexpr std::initializer_list<int64_t> kBlockMAvx512 = {256, 128, 64}, kBlockKAvx512 = {512, 256};
// AVX-512 products of more rows than one 256-row block, a multiple of 64,
// with K in several blocks (over kWholeBlockKMaxAvx512), run in 64-row
// blocks instead: a (row block, K block) then holds its 64 x 512 slice of
// A (128 KiB) and 64 x 256 block of C (64 KiB) beside the 512 KiB slice of
// packed B that all its row tiles read, within a 1 MiB L2; with 256 rows
// (512 + 256 KiB more) B's slice was pushed out between row tiles.
// Measured on Zen 5, alternated in one process against 256-row blocks (one
// / two threads): 4096^3 1.018-1.030 / 1.025-1.033, 2048^3 0.998-1.010 /
// 0.993-1.016, 2048 x 2048 x 4096 1.016, 4096 x 4096 x 2048 1.012, 8192 x
// 1024 x 4096 1.032, x[1024,4096]·W[4096,4096]ᵀ 1.021,
// x[512,4096]·W[11008,4096]ᵀ (operand-swapped: 11008 rows) 1.032,
// x[128,4096]·W[11008,4096]ᵀ 1.004 / 1.034, 512 x 2048 x 2048 1.002. K in
// one block keeps 256 rows: there C is written once and B's slice is at
// most 576 KiB, and 64 rows read 0.986-1.012 (1024^3 1.000 / 1.002, 512^3
// 0.995, x[128,768]·W[2048,768]ᵀ 0.997 / 0.986, x[128,768]·W[32000,768]ᵀ
// 1.012). Products of at most 256 rows keep one block (64-row blocks read
// 0.990-0.998 at 128 / 256 x 4096 x 4096); 128-row blocks read 0.96-1.03
// (2048^3 on two threads 0.96).
inline constexpr int64_t kManyRowsBlockMAvx512 = 64;
inline constexpr std::initializer_list<int64_t> kBlockMAvx2 = {64}, kBlockKAvx2 = {256};
// AVX-512, 512 < K <= kWholeBlockKMaxAvx512: all of K in one block (each
// register tile's sums stay in registers over all of K: C is written once),
// with column blocks narrowed (whole panels, dividing N) until B's slice,
// K x columns f32, is at most kMaxWholeBlockKBBytes: 128 columns at K =
// 1024, 192 at 768. A prompt times Llama-110M weights (operand-swapped: the
// 128-301 tokens are the columns, in blocks of 96-192) had K = 768 in three
// blocks of 256. Measured on Zen 5, alternated in one process (medians of
// per-round ratios, one / two cores): x[301,768]·W[2048,768]ᵀ 1.04 / 1.04,
// x[128,768]·W[2048,768]ᵀ 1.04 / 1.06, x[128,768]·W[768,768]ᵀ 1.02 / 1.05,
// x[128,768]·W[32000,768]ᵀ 1.08 / 1.08, x[192,768]·W[2048,768]ᵀ 1.02 (one
// 768-deep block alone); with the columns narrowed too, 1024^3 1.01-1.02 /
// 1.00-1.06, x[1024,1024]·W[1024,1024]ᵀ 1.02, 768^3 1.00-1.02,
// x[768,768]·W[768,768]ᵀ 1.03, x[256,768]·W[2048,768]ᵀ 1.05,
// x[2048,1024]·W[4096,1024]ᵀ 1.03 / 1.01. One 768-deep block in
// 256-column blocks (B's slice 768 KiB) read 0.98-0.99
// (x[256,768]·W[2048,768]ᵀ, 768^3). Longer K keeps blocks of 512: 2048^3
// and 4096^3 in 1024-deep blocks of 128 columns 0.99-1.01, 256 columns
// 0.97-0.99.
inline constexpr int64_t kWholeBlockKMaxAvx512 = 1024, kMaxWholeBlockKBBytes = 576 * 1024;
// AVX2 products of several row blocks (the 6-row tiles' path) take longer
// K blocks and narrower column blocks than those above: K in one block
// from kLongBlockKAvx2 up to kWholeBlockKAvx2 (each register tile's sums
// stay in registers over all of K: C is written once, never read back),
// longer K that kLongBlockKAvx2 divides in blocks of it; column blocks of
// kNarrowBlockNAvx2 (4 panels: a K block of B is then 128-256 KiB, half
// of L2 or less, where 256 columns by 256 made 256 KiB beside A's and C's
// blocks) where N is a multiple of it, at least kNarrowBlockNMinColsAvx2
// columns. Measured
// on Zen 3 (one process per row, calls alternated with the old blocks in
// it, medians of the per-round ratios, two to four processes per row; one
// / two threads): 1024^3 1.02-1.07 / 1.03-1.06, 4096^3 0.99-1.05 /
// 0.99-1.06, 512^3 1.02 / 1.04, 2048^3 0.98-1.02 / 1.01, 256^3 (narrower
// columns only) 0.99-1.00 / 1.01,
// x[512,4096]·W[11008,4096]ᵀ (operand-swapped: 512 columns) 0.99-1.06 /
// 1.02-1.03. A swapped 128-token prompt (128 columns) keeps the old
// blocks: narrow ones made two column blocks, one per thread, each reading
// all of W (x[128,4096]·W[11008,4096]ᵀ 0.83 on two threads), and the long
// K blocks alone measured 1.01-1.02 / 1.03-1.08 for x[128,768]·W[2048,768]ᵀ
// but 0.98-1.00 / 0.97-0.98 for the 11008 x 4096 weights.
inline constexpr int64_t kLongBlockKAvx2 = 512, kWholeBlockKAvx2 = 1024;
inline constexpr int64_t kNarrowBlockNAvx2 = 64, kNarrowBlockNMinColsAvx2 = 256;
inline constexpr int64_t kRegK = 4;
inline constexpr int64_t kMinThreadBlockM = 32;  // smallest M block made to give threads work
inline constexpr int64_t kPackCopyK = 8;  // K rows per vectorized step of B's packing copy
inline constexpr int64_t kPackTransposeBlock = 16;  // B [N, K] on AVX-512: 16 x 16 transposes
// Narrow column counts that are whole vectors but not whole 2-vector panels
// (16 or 48 on AVX-512: an operand-swapped prompt of that many rows) take
// panels of one vector on 32-register ISAs, 8 x 1 register tiles (8
// accumulators, two FMAs' latency) rather than 16 or 32 columns of zeros.
// Measured on Zen 5, one core, x[m,768]·W[2048,768]ᵀ GFLOP/s, W packed
// (rows padded to 8) / swapped with one-vector panels: m = 12 (to 16) 39-40
// -> 79, 16 45-53 -> 104, 17 (16 + 1 split) 43-45 -> 87, 20 51-54 -> 105,
// 24 57-61 -> 105 (OpenBLAS 53-71); two cores 17 162, 24 181.
inline constexpr int64_t kNarrowPanelMaxCols = 128;
inline int64_t panel_width(int64_t N, const VectorIsa& isa) {
  const int64_t two = kPanelVectors * isa.f32_lanes;
  const bool narrow = isa.registers >= 32 && N < kNarrowPanelMaxCols && N % two != 0 && N % isa.f32_lanes == 0;
  return narrow ? isa.f32_lanes : two;
}

// Register tile rows: accumulators = reg_m * kPanelVectors must leave room for
// the B vectors and the A broadcast: 4 x 2 = 8 of 16 ymm, 8 x 2 = 16 of 32 zmm.
inline int64_t packed_reg_m(const VectorIsa& isa) { return isa.registers >= 32 ? 8 : 4; }
// AVX2 (16 registers) runs the rows it can in tiles of 6 x 2 vectors, 12
// accumulators: 8 left two FMAs' latency (4 cycles on Zen 3, 2 issued per
// cycle) with no slack, and a 6-row tile loads 2 B vectors per 6
// broadcasts instead of per 4. Block-M must then be a multiple of 6 (96, or
// 48 to give threads enough blocks): the packed op is split at the last
// whole block, the rows after it run in the 4-row tiles. Measured on Zen 3,
// one core against OpenBLAS, 1024^3 0.82 -> 0.89, 512^3 0.90 -> 0.99,
// x[128,768]·W[2048,768]ᵀ 0.89 -> 0.92 (two cores 0.82 -> 0.98).
inline constexpr int64_t kWideRegM = 6;
inline constexpr std::initializer_list<int64_t> kWideBlockM = {96, 48};  // largest first

// Register-tiled matmuls from kPackMinVolume on run in these cache blocks.
inline constexpr int64_t kSmallBlockM = 64, kSmallBlockN = 256, kSmallBlockK = 256;

// The packed schedule's cache blocks of an M x N x K matmul.
struct PackBlocks {
  int64_t m = 0, n = 0, k = 0;
};

// The packed schedule's blocks for an M x N x K matmul, or none when no
// block size divides a dim. With threads, M blocks shrink (to the next
// divisor of M, at least kMinThreadBlockM) until there are at least two
// output blocks per thread.
std::optional<PackBlocks> pack_blocks(int64_t M, int64_t N, int64_t K, const VectorIsa& isa, int threads);

// The largest divisor of `dim` that is a multiple of `step` and at most
// `max` (0 if none).
int64_t block_divisor(int64_t dim, int64_t step, int64_t max);

// The rows of a `rows`-row product that 6-row register tiles (kWideRegM)
// take, leaving a multiple of 4 rows for 4-row tiles (128 = 120 + 8), at
// least 4 tiles of them; 0 if none.
int64_t wide_tile_rows(int64_t rows);

// Every operand (and so the result) of `op` is f32.
bool all_f32(mlir::Operation* op);

// A tensor of `shape` filled with `value` (a matmul's accumulator, a
// padded operand's zeros).
mlir::Value filled(mlir::OpBuilder& b, mlir::Location loc, mlir::Value value, llvm::ArrayRef<int64_t> shape);

}  // namespace radix::cpu_schedule
