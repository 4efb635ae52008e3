// The CPU schedule's contractions (see schedule.h for the whole picture):
// packed f32 matmuls (B in column panels, 4/6/8-row register tiles),
// register-tiled matmuls and batch_matmuls, dot-product tiles for B read as
// [n, k] rows (the decode mat-vecs), f32-activation quantized products, and
// the plans of the integer-activation kernels (radix-int8-dot-kernels).
// Internal to the CPU backend.
#pragma once

#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "radix/backends/cpu/schedule.h"
#include "radix/backends/cpu/schedule_util.h"

namespace radix::cpu_schedule {

// Set on an integer-kernel product: its plan [tm, tn, parallel, vnni, blocked,
// interleaved, wide] (read by the radix-int8-dot-kernels pass).
inline constexpr const char* kInt8KernelAttr = "radix.int8_kernel";
// Set on an integer-kernel product whose init was a zero fill, replaced by
// an empty tensor (see int8_outputs_without_fills): the kernel stores its
// sums instead of adding them to the output.
inline constexpr const char* kInt8OverwriteAttr = "radix.int8_overwrite";
// Set on an f32 x bf16 product for the radix-bf16-dot-kernels pass: its plan
// [tm, tn, parallel].
inline constexpr const char* kBf16KernelAttr = "radix.bf16_kernel";

// The bf16 kernel plan of a linalg.matmul of f32 x [m, k] and bf16 W [n, k]
// (K a multiple of 32) on a target with AVX-512 BF16, or none.
std::optional<std::vector<int64_t>> bf16_kernel_plan(mlir::linalg::LinalgOp op, int threads, const Int8Target& host);

// Every product that gets an integer-kernel plan and whose init is a zero
// fill gets an empty init instead, marked kInt8OverwriteAttr, and fills
// left unused are erased: no pass over the output zero-filling it before
// the product (stories15M Q4_0 prefill spent 3-5% of its time in memset).
void int8_outputs_without_fills(mlir::ModuleOp module, int threads, const Int8Target& host);

// Whether `fill` is the init of a register-tiled product only, which
// fuses it into its tiles (so the fill is not scheduled on its own).
bool fuses_fill_into_tiles(mlir::linalg::FillOp fill, const VectorIsa& isa, int threads);

// Rewrites each f32 matmul / batch_matmul whose sizes the schedule cannot
// tile well (no block or register tile divides them: odd prompt lengths,
// 129³, K = 1023, attention over 301 tokens) as products it tiles: split
// at the last whole tile into a main product and the rest, each writing its
// part of the result, or computed on zero-padded operands with the result
// sliced back out (whichever moves less memory; the packed schedule only
// splits a few rows off a small B, its blocks are otherwise padded).
// Returns how many it split and padded.
struct FittedProducts {
  int split = 0;   // products split in two (each part counted once more if split again)
  int padded = 0;  // products computed on zero-padded operands
};
FittedProducts fit_matmuls_to_tiles(mlir::ModuleOp module, const VectorIsa& isa);

// Before fit_matmuls_to_tiles: each x[M, K] · W[N, K]ᵀ of f32 x and bf16 /
// f16 W that no bf16 kernel takes, with at least kPackedMinRowsTransposedB
// rows when its f32 form is operand-swapped (swap_small_row_matmuls), at
// least 128 otherwise, becomes x · widen(W)ᵀ, W converted to f32 by an
// elementwise op. Returns how many it rewrote.
int widen_half_weights_of_prompts(mlir::ModuleOp module, const VectorIsa& isa, int threads, const Int8Target& host);
// On the elementwise widening it adds (an i64 unique in the module).
inline constexpr const char* kWidenedMark = "radix.widened_weights";
// `op` is such a widening read only as the A operand of a packed matmul
// (after swap_small_row_matmuls), which then fuses it into its K blocks.
bool widened_into_packed_a(mlir::Operation* op, const VectorIsa& isa);

// Before fit_matmuls_to_tiles, with threads > 1: each f32 batch_matmul it
// would split or pad, of a batch that `threads` divides, goes into a
// tensor-level scf.forall of one iteration per thread (marked
// kThreadRegionMark), each iteration the same product over its share of the
// batch, written in place; the fitting then happens inside, per thread.
// Returns how many it moved.
inline constexpr const char* kThreadRegionMark = "radix.thread_region";
int batched_products_by_thread(mlir::ModuleOp module, const VectorIsa& isa, int threads);
// On one thread: each f32 batch_matmul whose B is a transpose (of [B, N,
// K] to [B, K, N]) used only by it becomes a tensor-level scf.for over the
// batch, the transpose and the product of one batch in each iteration.
// Returns how many it rewrote.
int batched_products_by_batch(mlir::ModuleOp module, int threads);
// Whether `op` lies in such a forall: the schedule runs it on one thread.
bool in_thread_region(mlir::Operation* op);

// Rewrites each f32 x[M, K] · W[N, K]ᵀ with few rows (a prompt; M up to
// 512, N at least 2M, K at least 4M, or M for the whole-panel part that
// fit_matmuls_to_tiles split off rows the packed schedule would pad) whose
// init is a fill as the transpose of W · xᵀ, when
// the packed schedule takes both forms: it then packs x instead of W. An
// elementwise consumer reads the product through a transposed map; otherwise
// a transpose follows it. Returns how many it rewrote.
int swap_small_row_matmuls(mlir::ModuleOp module, const VectorIsa& isa);

// After fit_matmuls_to_tiles: marks (kBInPlaceMark) each f32 x[M, K] ·
// B[K, N] on AVX-512 whose B fits in L2 (at most kBInPlaceMaxBytes) and
// whose rows give each of its threads 256 to 1024 (see the constants),
// when its register tiles run in small cache blocks: it then reads B in
// place instead of the packed schedule copying it into panels on every
// call. Returns how many it marked.
inline constexpr const char* kBInPlaceMark = "radix.b_in_place";
int read_small_b_in_place(mlir::ModuleOp module, const VectorIsa& isa, int threads);

// A contraction (matmul / batch_matmul) whose B is read as [.., n, k]:
// maps A(.., m, k), B(.., n, k), C(.., m, n) (trace/ops_dot.cc emits it for
// weights stored [out, in] and for q · kᵀ).
bool b_transposed(mlir::linalg::LinalgOp op);

// A static f32/f64 linalg.matmul with the default maps or B transposed, or null.
mlir::linalg::MatmulOp plain_matmul(mlir::Operation* op);

// The packed schedule applies: large enough, every tile divides its dim, and
// not marked to read B in place (read_small_b_in_place).
bool use_packed_schedule(mlir::linalg::MatmulOp mm, const VectorIsa& isa);

// A fill whose every user is a matmul given the packed schedule: left alone,
// it folds into the fill of the packed accumulator.
bool feeds_only_packed_matmuls(mlir::linalg::FillOp fill, const VectorIsa& isa);

// Register tile (tm rows x tn columns) of an M x N matmul output: tn up to two
// vectors and dividing N, tm dividing M with at most kMaxAccumulatorShare of
// the registers as accumulators. None when N has no divisor of 4 or more.
std::optional<std::pair<int64_t, int64_t>> register_tile(int64_t M, int64_t N, const VectorIsa& isa);

// Register-tiled matmuls large enough for it run in cache blocks (K blocked
// outside the register tiles).
bool uses_small_blocks(int64_t M, int64_t N, int64_t K, int64_t tm, int64_t tn);

// Whether a dot-product tile's reduction loop also prefetches the next
// tile's weight rows (radix-prefetch-next-tile).
enum class NextTilePrefetch { kOn, kOff };

// Dot-product tiles of a contraction with B read as [n, k]: tm x tn outputs
// (rows x weight rows), K in steps of v lanes. None for other element types
// or a K with no vector-wide divisor. `threads`: the executable's thread
// count (resolved), which picks the prefetches of AVX2's short f32 rows.
struct DotTiles {
  int64_t tm, tn, v;
  NextTilePrefetch prefetch = NextTilePrefetch::kOn;
};
std::optional<DotTiles> dot_tiles(mlir::linalg::LinalgOp op, const VectorIsa& isa, int threads);

// The K split of a dot-product tile `in` (tile_reduction_using_for: partial
// sums in vectors), vectorized; the split's multiply-adds fused into FMAs.
// `split`: the reduction loops' step (0 for the parallel loops).
void emit_dot_reduction(std::ostringstream& body, const std::string& in, const std::string& id,
                        const std::vector<int64_t>& split, NextTilePrefetch prefetch = NextTilePrefetch::kOn);

// A quantized contraction with f32 activations (trace/ops_quant.cc), by its
// mark or its structure (f32 times widened i8, reductions trailing).
bool is_quantized_dot(mlir::linalg::LinalgOp op);

// Schedules such a product in dot-product tiles; false (nothing emitted)
// when its shape does not tile. `match` marks the op (handle `id`) and is
// called only when something is emitted.
bool emit_quantized_dot(std::ostringstream& body, mlir::linalg::LinalgOp op, const std::string& id,
                        const VectorIsa& isa, int threads, const std::function<void()>& match, ScheduleSummary& sum);

// The integer-kernel plan of an integer-activation quantized product, or none
// (the host lacks AVX2, or the op is not such a product).
std::optional<std::vector<int64_t>> int8_kernel_plan(mlir::linalg::LinalgOp op, int threads, const Int8Target& host);

// Schedules a linalg.matmul or linalg.batch_matmul (packed, register-tiled
// or dot-product tiles, split over threads when large enough) and counts it
// in `sum` (as skipped when it cannot be tiled). False for any other op.
bool emit_contraction(std::ostringstream& body, mlir::linalg::LinalgOp op, const std::string& id,
                      const VectorIsa& isa, int threads, const std::function<void()>& match, ScheduleSummary& sum);

}  // namespace radix::cpu_schedule
