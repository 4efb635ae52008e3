// The f32 products the schedules do not take as they are, rewritten into
// ones they do: prompts times weights with their operands swapped (see
// swap_small_row_matmuls) and sizes no tile divides split at the last whole
// tile or padded to whole tiles (fit_matmuls_to_tiles). Declared in
// matmul_schedule.h; the blocks and tiles they aim for are matmul_blocks.h's.
#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "radix/backends/cpu/matmul_blocks.h"
#include "radix/backends/cpu/matmul_schedule.h"

namespace radix::cpu_schedule {

// ---- Operand-swapped prompt matmuls --------------------------------------------
// x[M, K] · W[N, K]ᵀ with few rows (a prompt times a weight matrix) is
// computed as (W · xᵀ)ᵀ: the packed schedule then packs x (M x K, once per
// call) as its B panels and reads W's rows directly as its A tile, and the
// [N, M] result is transposed into place (a T x T tiled transpose, see
// minor_transpose in schedule.cc). Packed the other way, every call copies
// all of W into column panels: a 16 x 16 in-register transpose per block of
// W, read 16 rows of W at a time, which ran at 3-12 GB/s and took ~18% of
// [128,768]·W[2048,768]ᵀ on Zen 5 (perf samples). Measured there (one
// thread, host at half speed, the two forms in one process): 84 -> 101
// GFLOP/s for that shape, 82 -> 100 for [128,4096]·W[11008,4096]ᵀ, two
// threads 168 -> 197.
// The swap trades B's packing (N x K values) for a transpose of the output
// (M x N): it pays when K is several times M. Two threads, same process:
// [128,288]·W[32000,288]ᵀ (K = 2.25 M, a 16 MiB output) 175-178 -> 151-166
// GFLOP/s swapped, [128,1024]·W[32000,1024]ᵀ (K = 8 M) 175 -> 197,
// [256,1024]·W[4096,1024]ᵀ (K = 4 M) 195 -> 204.
constexpr int64_t kSwapMaxRows = 512, kSwapMinDepthPerRow = 4, kSwapMinDepthPerRowPadded = 1;

// The rows a swapped prompt takes in whole panels of the swapped product's
// columns: one vector's worth for narrow ones (panel_width), else two.
static int64_t swap_rows_step(int64_t M, const VectorIsa& isa) {
  return isa.registers >= 32 && M < kNarrowPanelMaxCols ? isa.f32_lanes : kPanelVectors * isa.f32_lanes;
}

// The swap pays for an M x N x K product (and the packed schedule takes it):
// K at least `depth_per_row` times M.
static bool swap_pays(int64_t M, int64_t N, int64_t K, const VectorIsa& isa,
                      int64_t depth_per_row = kSwapMinDepthPerRow) {
  return M <= kSwapMaxRows && N >= 2 * M && K >= depth_per_row * M && pack_blocks(N, M, K, isa, 1).has_value();
}

// Set by split_prompt_rows on the whole-panel part of a product whose rows
// the packed schedule would otherwise pad: swapped from K >= M on.
constexpr const char* kSwapPaddedRowsMark = "radix.swap_padded_rows";

static bool swaps_operands(mlir::linalg::MatmulOp mm, const VectorIsa& isa) {
  if (!plain_matmul(mm) || !b_transposed(mm) || !use_packed_schedule(mm, isa) || !all_f32(mm)) return false;
  auto fill = mm.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>();
  if (!fill) return false;
  llvm::SmallVector<int64_t> r = llvm::cast<mlir::linalg::LinalgOp>(mm.getOperation()).getStaticLoopRanges();
  return swap_pays(r[0], r[1], r[2], isa,
                   mm->hasAttr(kSwapPaddedRowsMark) ? kSwapMinDepthPerRowPadded : kSwapMinDepthPerRow);
}

int swap_small_row_matmuls(mlir::ModuleOp module, const VectorIsa& isa) {
  llvm::SmallVector<mlir::linalg::MatmulOp> mms;
  module.walk([&](mlir::linalg::MatmulOp mm) {
    if (swaps_operands(mm, isa)) mms.push_back(mm);
    mm->removeAttr(kSwapPaddedRowsMark);
  });
  for (mlir::linalg::MatmulOp mm : mms) {
    mlir::OpBuilder b(mm);
    mlir::Location loc = mm.getLoc();
    auto fill = mm.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>();
    auto ct = llvm::cast<mlir::RankedTensorType>(mm->getResult(0).getType());
    const int64_t M = ct.getDimSize(0), N = ct.getDimSize(1);
    auto swapped_t = mlir::RankedTensorType::get({N, M}, ct.getElementType());
    mlir::Value acc = filled(b, loc, fill.getInputs()[0], swapped_t.getShape());
    llvm::SmallVector<mlir::Value, 2> ins = {mm.getDpsInputOperand(1)->get(), mm.getDpsInputOperand(0)->get()};
    llvm::SmallVector<mlir::NamedAttribute, 1> attrs = {b.getNamedAttr("indexing_maps", mm.getIndexingMaps())};
    mlir::Value prod =
        mlir::linalg::MatmulOp::create(b, loc, mlir::TypeRange{swapped_t}, ins, mlir::ValueRange{acc}, attrs)
            .getResult(0);
    mlir::MLIRContext* ctx = b.getContext();
    const mlir::AffineExpr d0 = mlir::getAffineDimExpr(0, ctx), d1 = mlir::getAffineDimExpr(1, ctx);
    const mlir::AffineMap transposed = mlir::AffineMap::get(2, 0, {d1, d0}, ctx);
    // An elementwise consumer (bias, activation, residual add, SwiGLU's
    // product) reads the [N, M] product through a transposed map instead: the
    // transpose happens in its tiles, with no pass of its own over memory.
    mlir::Value res = mm->getResult(0);
    mlir::OpOperand* use = res.hasOneUse() ? &*res.getUses().begin() : nullptr;
    auto g = use ? llvm::dyn_cast<mlir::linalg::GenericOp>(use->getOwner()) : mlir::linalg::GenericOp();
    if (g && g.getNumLoops() == 2 && g.getNumReductionLoops() == 0 && g.isDpsInput(use) &&
        g.getMatchingIndexingMap(use).isIdentity() && g.getNumDpsInits() == 1 &&
        g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity()) {
      llvm::SmallVector<mlir::AffineMap> gmaps = g.getIndexingMapsArray();
      gmaps[use->getOperandNumber()] = transposed;
      use->set(prod);
      g.setIndexingMapsAttr(b.getAffineMapArrayAttr(gmaps));
    } else {
      llvm::SmallVector<mlir::AffineMap, 2> maps = {transposed, mlir::AffineMap::getMultiDimIdentityMap(2, ctx)};
      llvm::SmallVector<mlir::utils::IteratorType, 2> iters(2, mlir::utils::IteratorType::parallel);
      mlir::Value out =
          mlir::linalg::GenericOp::create(
              b, loc, mlir::TypeRange{ct}, mlir::ValueRange{prod},
              mlir::ValueRange{mlir::tensor::EmptyOp::create(b, loc, ct.getShape(), ct.getElementType())}, maps,
              iters,
              [](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
                mlir::linalg::YieldOp::create(nb, l, args[0]);
              })
              .getResult(0);
      res.replaceAllUsesWith(out);
    }
    mm->erase();
    if (fill->use_empty()) fill->erase();
  }
  return static_cast<int>(mms.size());
}

// ---- Prompts times 16-bit weights ---------------------------------------------
// x[M, K] · W[N, K]ᵀ with f32 x and bf16 / f16 W (a prompt times a Llama's
// half-precision weights) where no bf16 dot-product kernel takes it (hosts
// without AVX-512 BF16): the product of x and widen(W), an elementwise
// bf16 -> f32 op. Packed as it was, W's bf16 panels were widened again in
// every register tile (a shift and a zero extension per 8 values beside 12
// FMAs), once per 6-row tile of x. Where the f32 product is operand-swapped
// the packed schedule fuses the widening into each K block of its A operand
// (W's rows), so a block of W is widened once, into cache, right before its
// register tiles read it (widened_into_packed_a): x[128,768]·W[2048,768]ᵀ
// on a Zen 3 core 57-62 -> 82-85 GFLOP/s (f32 W 87-91). Otherwise W is
// widened whole, then packed as f32, from kWidenMinRowsUnswapped rows of x
// on (W's extra pass then costs less than the widening in every tile):
// x[128,288]·W[768,288]ᵀ 63 -> 79-85; [128,32000,288], [128,4096,256] and
// [512,4096,1024] (W from memory) 0.96-1.03x; [64,4096,256] 1.0x.
namespace {
std::pair<mlir::linalg::LinalgOp, mlir::linalg::LinalgOp> split_product(mlir::linalg::LinalgOp op, int dim, int64_t at);
}  // namespace

constexpr int64_t kWidenMinRowsUnswapped = 128;

int widen_half_weights_of_prompts(mlir::ModuleOp module, const VectorIsa& isa, int threads, const Int8Target& host) {
  llvm::SmallVector<mlir::linalg::MatmulOp> mms;
  module.walk([&](mlir::linalg::MatmulOp mm) {
    auto lin = llvm::cast<mlir::linalg::LinalgOp>(mm.getOperation());
    if (!b_transposed(lin) || !all_static(lin) || mm.getNumDpsInputs() != 2) return;
    auto et = [&](unsigned i) { return llvm::cast<mlir::ShapedType>(mm->getOperand(i).getType()).getElementType(); };
    if (!et(0).isF32() || !(et(1).isBF16() || et(1).isF16()) || !et(2).isF32()) return;
    if (lin.getStaticLoopRanges()[0] < kPackedMinRowsTransposedB || bf16_kernel_plan(lin, threads, host)) return;
    mms.push_back(mm);
  });
  int widened = 0;
  for (mlir::linalg::MatmulOp mm : mms) {
    // 16 registers: the swapped product of W rows no 6-row block divides
    // runs in two parts (see emit_packed_matmul), and the fusion reaches
    // only a part that reads W itself: the rows past the last whole
    // kWideBlockM block are a product of their own, left 16-bit.
    const int64_t whole = *kWideBlockM.begin();
    llvm::SmallVector<int64_t> r = llvm::cast<mlir::linalg::LinalgOp>(mm.getOperation()).getStaticLoopRanges();
    if (isa.registers < 32 && r[1] > whole && r[1] % whole != 0 &&
        mm.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>() &&
        swap_pays(r[0], r[1] / whole * whole, r[2], isa))
      mm = llvm::cast<mlir::linalg::MatmulOp>(split_product(mm, 1, r[1] / whole * whole).first.getOperation());
    mlir::OpBuilder b(mm);
    mlir::Location loc = mm.getLoc();
    mlir::Value w = mm.getDpsInputOperand(1)->get();
    auto wt = llvm::cast<mlir::RankedTensorType>(w.getType());
    mlir::MLIRContext* ctx = b.getContext();
    llvm::SmallVector<mlir::AffineMap, 2> maps(2, mlir::AffineMap::getMultiDimIdentityMap(2, ctx));
    llvm::SmallVector<mlir::utils::IteratorType, 2> iters(2, mlir::utils::IteratorType::parallel);
    auto widen = mlir::linalg::GenericOp::create(
        b, loc, mlir::TypeRange{mlir::RankedTensorType::get(wt.getShape(), b.getF32Type())}, mlir::ValueRange{w},
        mlir::ValueRange{mlir::tensor::EmptyOp::create(b, loc, wt.getShape(), b.getF32Type())}, maps, iters,
        [](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
          mlir::linalg::YieldOp::create(nb, l, mlir::arith::ExtFOp::create(nb, l, nb.getF32Type(), args[0]).getResult());
        });
    widen->setAttr(kWidenedMark, b.getI64IntegerAttr(widened));
    llvm::SmallVector<mlir::NamedAttribute, 1> attrs = {b.getNamedAttr("indexing_maps", mm.getIndexingMaps())};
    auto wide = mlir::linalg::MatmulOp::create(b, loc, mm->getResultTypes(),
                                               mlir::ValueRange{mm.getDpsInputOperand(0)->get(), widen.getResult(0)},
                                               mlir::ValueRange{mm.getDpsInitOperand(0)->get()}, attrs);
    if (!swaps_operands(wide, isa) && r[0] < kWidenMinRowsUnswapped) {  // W stays 16-bit
      wide->erase();
      widen->erase();
      continue;
    }
    mm->getResult(0).replaceAllUsesWith(wide.getResult(0));
    mm->erase();
    ++widened;
  }
  return widened;
}

bool widened_into_packed_a(mlir::Operation* op, const VectorIsa& isa) {
  if (!op->hasAttr(kWidenedMark) || !op->getResult(0).hasOneUse()) return false;
  mlir::OpOperand& use = *op->getResult(0).getUses().begin();
  auto mm = plain_matmul(use.getOwner());
  if (!mm || use.getOperandNumber() != 0 || !use_packed_schedule(mm, isa)) return false;
  // 16 registers: rows in whole kWideBlockM blocks run as one part (see
  // emit_packed_matmul; the split above sees to it), the only form whose
  // loops slice W itself. Others widen W whole first.
  const int64_t rows = llvm::cast<mlir::ShapedType>(mm->getResult(0).getType()).getDimSize(0);
  return isa.registers >= 32 || rows % *kWideBlockM.begin() == 0;
}

// ---- Matmuls padded to whole tiles -------------------------------------------
// The schedules above tile statically: every block and register tile must
// divide its dim (a partial tile has dynamic sizes, which the vectorizer
// does not take). Sizes with no such divisor — a prompt of 301 or 127
// tokens, 129³, a K of 1023 — fell to one-row tiles or scalar loops at
// 2-35 GFLOP/s where their neighbours ran at 100. Such a matmul is instead
// computed on operands padded with zeros to sizes that tile well (zeros
// add nothing to the sums), and its result sliced back out: the padded
// rows of A and C cost a copy of A and of C, padded columns or depth a copy
// of B (the weights), each far less than the product.
namespace {

int64_t round_up(int64_t v, int64_t step) { return (v + step - 1) / step * step; }

// A slice's static offsets (all 0), sizes and strides (all 1).
llvm::SmallVector<mlir::OpFoldResult> at_origin(mlir::OpBuilder& b, int64_t rank) {
  return llvm::SmallVector<mlir::OpFoldResult>(size_t(rank), b.getIndexAttr(0));
}
llvm::SmallVector<mlir::OpFoldResult> unit_strides(mlir::OpBuilder& b, int64_t rank) {
  return llvm::SmallVector<mlir::OpFoldResult>(size_t(rank), b.getIndexAttr(1));
}
llvm::SmallVector<mlir::OpFoldResult> sizes_of(mlir::OpBuilder& b, llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<mlir::OpFoldResult> out;
  for (int64_t d : shape) out.push_back(b.getIndexAttr(d));
  return out;
}

// The smallest multiple of `step` from `dim` on whose best block (at most
// `max`) is at least `want` (or the whole dim, if smaller).
int64_t padded_dim(int64_t dim, int64_t step, int64_t max, int64_t want) {
  for (int64_t d = round_up(dim, step);; d += step)
    if (block_divisor(d, step, max) >= std::min(d, want)) return d;
}

// Block sizes wanted from a padded dim: the standard blocks' smallest.
constexpr int64_t kPadWantBlockM = 64, kPadWantBlockN = 128, kPadWantBlockK = 128;
// Packed columns or depth are padded only when their best block is smaller.
constexpr int64_t kPadMinBlockN = 96, kPadMinBlockK = 64;
// Packed products a few rows (at most this many) past whole register tiles
// split the rows off when B (read again by them) is at most this large.
constexpr int64_t kPackedSplitMaxRows = 4, kPackedSplitMaxBBytes = int64_t{1} << 20;

// Whether the packed schedule pads the rows of an M x N x K matmul: M is
// not a whole number of register tiles and the rows past them are too many
// to split off, or B too large to read again.
bool packed_rows_padded(int64_t M, int64_t N, int64_t K, const VectorIsa& isa) {
  const int64_t rest = M % packed_reg_m(isa);
  return rest != 0 && !(rest <= kPackedSplitMaxRows && M - rest >= kPackedMinRowsTransposedB &&
                        N * K * 4 <= kPackedSplitMaxBBytes);
}
// Prompt rows past whole panels split off rather than padded (see
// split_prompt_rows).
constexpr int64_t kSplitMaxRestRows = 16;
// Register tiles with fewer accumulators than this (FMA chains) are worth
// a split of the rows that leaves whole 8-accumulator tiles.
constexpr int64_t kSplitMinAccumulators = 8;

struct PaddedDims {
  int64_t m, n, k;
};

// Which of the three schedules tiles a static product, by its sizes alone
// (whether a block divides them aside).
enum class ProductForm { kPacked, kRegister, kDot };
ProductForm product_form(mlir::linalg::LinalgOp mm) {
  llvm::SmallVector<int64_t> r = mm.getStaticLoopRanges();
  const size_t o = r.size() - 3;  // a batch dim first (batch_matmul)
  const int64_t M = r[o], N = r[o + 1], K = r[o + 2];
  const bool bt = b_transposed(mm);
  const int64_t min_volume = bt && M >= kPackedMinRowsTransposedB ? kPackMinVolumeTransposedB : kPackMinVolume;
  // A few rows (decode steps: a mat-vec streaming W) keep their dot-product
  // or register tiles: padded to a packed tile's 8 rows, [1,4096]·W[4096,
  // 4096]ᵀ read W at 6 GB/s instead of 41.
  if (o == 0 && M >= kPackedMinRowsTransposedB && M * N * K >= min_volume) return ProductForm::kPacked;
  return bt ? ProductForm::kDot : ProductForm::kRegister;
}

// A traced product this file may pad or split: a static matmul or
// batch_matmul (B as [.., k, n] or transposed) whose init is a fill.
bool fits_padding(mlir::linalg::LinalgOp op) {
  const bool batched = llvm::isa<mlir::linalg::BatchMatmulOp>(op.getOperation());
  if (batched ? !all_static(op) || (op.hasUserDefinedMaps() && !b_transposed(op)) : !plain_matmul(op.getOperation()))
    return false;
  if (!batched && !llvm::isa<mlir::linalg::MatmulOp>(op.getOperation())) return false;
  return op.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>() != nullptr;
}

// A register-tiled product's columns padded to whole vectors (or to 4
// when at most one vector).
int64_t padded_register_cols(int64_t N, const VectorIsa& isa) {
  if (N % 4 == 0) return N;
  return N > isa.f32_lanes ? round_up(N, isa.f32_lanes) : round_up(N, 4);
}

// The padded sizes of `mm` (all f32), or none when it tiles as it is.
// Only dims that need it are padded (a weight matrix W is copied only for
// its own odd sizes, not for a prompt's length).
std::optional<PaddedDims> padded_dims(mlir::linalg::LinalgOp mm, const VectorIsa& isa) {
  if (!all_f32(mm)) return std::nullopt;
  llvm::SmallVector<int64_t> r = mm.getStaticLoopRanges();
  const size_t o = r.size() - 3;  // a batch dim first (batch_matmul): never padded
  const int64_t M = r[o], N = r[o + 1], K = r[o + 2];
  const bool bt = b_transposed(mm);
  const int64_t lanes = isa.f32_lanes;
  PaddedDims p{M, N, K};
  const ProductForm form = product_form(mm);
  if (form == ProductForm::kPacked) {
    // Packed: whole register tiles, panels and K steps, in blocks that
    // reuse what they load (a 296-row A in blocks of 8 rows would not).
    const std::optional<PackBlocks> b = pack_blocks(M, N, K, isa, 1);
    if (b && b->m >= std::min<int64_t>(M, kPadWantBlockM / 2)) return std::nullopt;
    const bool wide = isa.registers >= 32;
    const int64_t max_k = wide ? *kBlockKAvx512.begin() : *kBlockKAvx2.begin();
    p.m = padded_dim(M, packed_reg_m(isa), wide ? *kBlockMAvx512.begin() : *kBlockMAvx2.begin(), kPadWantBlockM);
    // Columns and depth only when their blocks are too small to reuse what
    // they load: N = 288 (a Llama width) runs in 96-wide blocks about as
    // fast as in 128-wide ones, padded to 320 it did 11% more work and
    // copied W (stories15M prefill of 129 tokens).
    if (block_divisor(N, kPanelVectors * lanes, kBlockN) < std::min(N, kPadMinBlockN))
      p.n = padded_dim(N, kPanelVectors * lanes, kBlockN, kPadWantBlockN);
    if (block_divisor(K, kRegK, max_k) < std::min(K, kPadMinBlockK)) p.k = padded_dim(K, kRegK, max_k, kPadWantBlockK);
    // A prompt times weights is operand-swapped in whole panels of rows
    // only (swap_small_row_matmuls): past the last whole panel by more than
    // kSplitMaxRestRows rows (fewer are split off, split_prompt_rows), up to
    // the next one.
    const int64_t panel = swap_rows_step(M, isa);
    if (bt && M > panel && swap_pays(round_up(M, panel), p.n, p.k, isa)) p.m = round_up(M, panel);
  } else if (form == ProductForm::kRegister) {
    // Register tiles (register_tile; batch_matmul's per batch): whole
    // vectors of columns, and rows in tiles of 3 or more (a prime M had
    // one-row tiles).
    // Padded at all, the tile gets at least 8 accumulators (two FMAs'
    // latency): 129³ ran 3 x 16 tiles, 3 chains, at 76 GFLOP/s on a Zen 5
    // core.
    p.n = padded_register_cols(N, isa);
    const auto [tm, tn] = *register_tile(M, p.n, isa);
    const int64_t vectors = (tn + lanes - 1) / lanes;
    if (M > 4 && (tm < 3 || (p.n != N && tm * vectors < 8))) p.m = round_up(M, std::max<int64_t>(8 / vectors, 1));
  } else {
    // Dot products (dot_tiles; also attention's q · kᵀ per batch): K in
    // whole vectors; several rows of x in tiles of 2 or 4, their weight
    // rows likewise (a single row of x reads each weight row once: W is not
    // copied for it).
    // Rows 2 past a multiple of 4 (6, 10, 14) ran 2-row tiles at 63-65
    // GFLOP/s where 4-row ones ran 97-104 (x[m,768]·W[2048,768]ᵀ, one Zen 5
    // core): padded to 4-row tiles when the product is large enough for the
    // copy of x to pay (6 -> 8 rows: 65 -> 75 of useful work).
    if (K % 4 != 0) p.k = K > lanes ? round_up(K, lanes) : round_up(K, 4);
    if (M > 2 && (M % 2 != 0 || (M % 4 != 0 && M * N * K >= kParallelMinMatmulWork))) p.m = round_up(M, 4);
    if (M >= 4 && N % 2 != 0) p.n = round_up(N, 4);
  }
  if (p.m == M && p.n == N && p.k == K) return std::nullopt;
  return p;
}

// `v` [.., rows, cols] zero-padded to [.., prows, pcols] (itself if equal).
mlir::Value pad_with_zeros(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v, int64_t prows, int64_t pcols) {
  auto t = llvm::cast<mlir::RankedTensorType>(v.getType());
  const int64_t rank = t.getRank();
  if (t.getDimSize(rank - 2) == prows && t.getDimSize(rank - 1) == pcols) return v;
  llvm::SmallVector<int64_t> shape(t.getShape());
  shape[rank - 2] = prows;
  shape[rank - 1] = pcols;
  mlir::Value zero = mlir::arith::ConstantOp::create(b, loc, b.getZeroAttr(t.getElementType()));
  mlir::Value full = filled(b, loc, zero, shape);
  return mlir::tensor::InsertSliceOp::create(b, loc, v, full, at_origin(b, rank), sizes_of(b, t.getShape()),
                                             unit_strides(b, rank))
      .getResult();
}

// The offsets and sizes of `v`'s elements [offset, offset + size) along
// `axis` (all of the others): for slices taken out of `v` or put back.
struct SliceRange {
  llvm::SmallVector<mlir::OpFoldResult> offsets, sizes, strides;
};
static SliceRange range_along(mlir::OpBuilder& b, mlir::Value v, int64_t axis, mlir::OpFoldResult offset,
                              int64_t size) {
  auto t = llvm::cast<mlir::RankedTensorType>(v.getType());
  llvm::SmallVector<int64_t> shape(t.getShape());
  shape[size_t(axis)] = size;
  SliceRange r{at_origin(b, t.getRank()), sizes_of(b, shape), unit_strides(b, t.getRank())};
  r.offsets[size_t(axis)] = offset;
  return r;
}

// `v`'s elements [offset, offset + size) along `axis` (all of the others).
static mlir::Value slice_along(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v, int64_t axis,
                               mlir::OpFoldResult offset, int64_t size) {
  const SliceRange r = range_along(b, v, axis, offset, size);
  return mlir::tensor::ExtractSliceOp::create(b, loc, v, r.offsets, r.sizes, r.strides).getResult();
}
static mlir::Value slice_along(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v, int64_t axis, int64_t offset,
                               int64_t size) {
  return slice_along(b, loc, v, axis, b.getIndexAttr(offset), size);
}

// Splits `op` (a matmul or batch_matmul whose init is a fill) in two
// products along its rows (dim 0) or columns (dim 1) at `at`: each reads
// the slices of the operands it needs and writes its part of one result
// (eliminate-empty-tensors makes each part's accumulator a slice of it: no
// copies). Returns the two parts, each a product from its own fill.
std::pair<mlir::linalg::LinalgOp, mlir::linalg::LinalgOp> split_product(mlir::linalg::LinalgOp op, int dim,
                                                                          int64_t at) {
  mlir::OpBuilder b(op);
  mlir::Location loc = op.getLoc();
  auto ct = llvm::cast<mlir::RankedTensorType>(op->getResult(0).getType());
  const int64_t rank = ct.getRank(), o = rank - 2, total = ct.getDimSize(o + dim);
  const bool batched = llvm::isa<mlir::linalg::BatchMatmulOp>(op.getOperation());
  // The split axis of each operand: rows of A and C; columns of C and of B
  // ([.., n, k] when transposed, else [.., k, n]).
  const int64_t a_axis = o, b_axis = b_transposed(op) ? o : o + 1, c_axis = o + dim;
  auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>();
  llvm::SmallVector<mlir::NamedAttribute, 1> attrs;
  if (op.hasUserDefinedMaps()) attrs.push_back(b.getNamedAttr("indexing_maps", op->getAttr("indexing_maps")));
  mlir::Value x = op.getDpsInputOperand(0)->get(), w = op.getDpsInputOperand(1)->get();
  // A part of an earlier split: its parts go straight into that split's
  // result, at their offsets there (nested, each level's result was a
  // buffer of its own, copied into the next: a 301 x 301 product copied
  // its 300 x 288 main part out).
  auto outer = op->getResult(0).hasOneUse()
                   ? llvm::dyn_cast<mlir::tensor::InsertSliceOp>(*op->getResult(0).getUsers().begin())
                   : mlir::tensor::InsertSliceOp();
  if (outer && (outer.getSource() != op->getResult(0) || !outer.hasUnitStride() ||
                mlir::ShapedType::isDynamicShape(outer.getStaticOffsets())))
    outer = {};
  llvm::SmallVector<int64_t> base(size_t(rank), 0);
  mlir::OpBuilder ib(op);  // the parts' inserts: right after them, or where the outer insert was
  mlir::Value out;
  if (outer) {
    base.assign(outer.getStaticOffsets().begin(), outer.getStaticOffsets().end());
    out = outer.getDest();
    ib.setInsertionPoint(outer);
  } else {
    // The parts go into what the fill filled: a new tensor at a function's
    // top level, or a thread's slice of the result in a thread region
    // (batched_products_by_thread), where a new one would be a buffer of
    // its own, copied out.
    out = fill.getOutputs()[0];
  }
  llvm::SmallVector<mlir::linalg::LinalgOp, 2> parts;
  for (auto [offset, size] : {std::pair<int64_t, int64_t>{0, at}, {at, total - at}}) {
    mlir::Value pa = dim == 0 ? slice_along(b, loc, x, a_axis, offset, size) : x;
    mlir::Value pb = dim == 0 ? w : slice_along(b, loc, w, b_axis, offset, size);
    llvm::SmallVector<int64_t> shape(ct.getShape());
    shape[size_t(c_axis)] = size;
    mlir::Value acc = filled(b, loc, fill.getInputs()[0], shape);
    auto t = mlir::RankedTensorType::get(shape, ct.getElementType());
    mlir::Operation* part =
        batched ? mlir::linalg::BatchMatmulOp::create(b, loc, mlir::TypeRange{t}, mlir::ValueRange{pa, pb},
                                                      mlir::ValueRange{acc}, attrs)
                      .getOperation()
                : mlir::linalg::MatmulOp::create(b, loc, mlir::TypeRange{t}, mlir::ValueRange{pa, pb},
                                                 mlir::ValueRange{acc}, attrs)
                      .getOperation();
    parts.push_back(llvm::cast<mlir::linalg::LinalgOp>(part));
    llvm::SmallVector<mlir::OpFoldResult> offsets;
    for (int64_t d = 0; d < rank; ++d) offsets.push_back(b.getIndexAttr(base[size_t(d)] + (d == c_axis ? offset : 0)));
    if (!outer) ib.setInsertionPointAfter(part);
    out = mlir::tensor::InsertSliceOp::create(ib, loc, part->getResult(0), out, offsets, sizes_of(b, shape),
                                              unit_strides(b, rank))
              .getResult();
  }
  if (outer) {
    outer.getResult().replaceAllUsesWith(out);
    outer->erase();
  } else {
    op->getResult(0).replaceAllUsesWith(out);
  }
  op->erase();
  if (fill->use_empty()) fill->erase();
  return {parts[0], parts[1]};
}

// A product with sizes no tile divides split at its last whole tile
// (split_at_tiles), as {dim (0 rows, 1 columns), where}, or none. A split
// computes the rest rows (columns) as a product of their own, reading the
// other operand again; padding copies this operand and the result instead:
// dot products and register tiles split where the other operand is the
// smaller; the packed schedule only splits a few rows off a small B (its
// blocks are otherwise padded, see padded_dims). Attention's q·kᵀ over 301
// tokens, 12 heads: padded, its 4.3 MB score matrix was copied out of the
// padded one (0.82x oneDNN on a Zen 5 core); x[13,768]·W[2048,768]ᵀ stays
// padded (W would be read twice).
std::optional<std::pair<int, int64_t>> split_point(mlir::linalg::LinalgOp mm, const VectorIsa& isa) {
  if (!all_f32(mm)) return std::nullopt;
  llvm::SmallVector<int64_t> r = mm.getStaticLoopRanges();
  const size_t o = r.size() - 3;
  const int64_t M = r[o], N = r[o + 1], K = r[o + 2], lanes = isa.f32_lanes;
  const bool bt = b_transposed(mm);
  if (product_form(mm) == ProductForm::kPacked) {
    // A few rows past whole register tiles (a prompt of 129 tokens) times a
    // B that stays in cache: those rows as a product of their own (a
    // mat-vec reading B again) rather than all of A and C copied for 7
    // padded rows. stories15M prefill of 129 tokens, one Zen 5 core (with
    // N no longer padded, padded_dims): 9.2 -> 9.3-9.8k tok/s (128: 10.5-10.9k).
    const int64_t rest = M % packed_reg_m(isa);
    if (o == 0 && rest != 0 && !packed_rows_padded(M, N, K, isa)) return std::pair<int, int64_t>{0, M - rest};
    return std::nullopt;
  }
  // Rows split if B (re-read) is smaller than A and C (copied), columns if A is.
  const bool rows_pay = N * K < M * K + M * N, cols_pay = M * K < N * K + M * N;
  if (bt) {
    if (M > 4 && rows_pay && (M % 2 != 0 || (M % 4 != 0 && M * N * K >= kParallelMinMatmulWork)))
      return std::pair<int, int64_t>{0, M / 4 * 4};
    if (M >= 4 && N > 4 && N % 2 != 0 && cols_pay) return std::pair<int, int64_t>{1, N / 4 * 4};
    return std::nullopt;
  }
  // Columns in whole vectors: a width of 300 took 4-lane tiles over all
  // of it (44 GFLOP/s against 200 for 288, [300,64]·[64,N], a Zen 5 core);
  // in whole pairs of them where there are more than a pair (the register
  // tile's width: on AVX2, 296 columns took one-vector tiles, 8 broadcasts
  // per 8 FMAs; attention over 301 tokens 81 -> 66 GFLOP/s against 0.82x
  // OpenBLAS's Haswell kernel before, split at 288 it is back).
  const int64_t pair = 2 * lanes;
  if (N > lanes && cols_pay && (N % lanes != 0 || (isa.registers < 32 && N > pair && N % pair != 0)))
    return std::pair<int, int64_t>{1, N > pair ? N / pair * pair : N / lanes * lanes};
  // The rows' tiles over the columns as padded_dims leaves them.
  const auto [tm, tn] = *register_tile(M, padded_register_cols(N, isa), isa);
  // The main part's tile: the tallest that fits the accumulators (8 rows of
  // two vectors on AVX-512, 6 on AVX2). 16-register ISAs split for it from
  // 4-row tiles too (8 of their 12 accumulators): AVX2 code on the Zen 5
  // host, one core, against OpenBLAS's Haswell kernel in the same process,
  // 129^3 0.94 -> 1.08x, 200^3 0.89 -> 1.01x, attention q·kᵀ over 128
  // tokens (12 heads) 1.06 -> 1.11x.
  const int64_t vectors = (tn + lanes - 1) / lanes;
  int64_t want = 1;
  for (int64_t c : {8, 6, 4, 3, 2})
    if (c * vectors <= max_accumulators(isa)) {
      want = c;
      break;
    }
  const bool short_tiles = tm < 3 || tm * vectors < kSplitMinAccumulators ||
                           (isa.registers < 32 && tm < want && M >= 4 * want);
  if (M > want && rows_pay && short_tiles && M % want != 0) {
    // 6-row tiles: the rest a multiple of 4 rows where one is (128 = 120 + 8,
    // not 126 + 2: the 2-row part's tiles hold 4 accumulators).
    const int64_t wide = want == kWideRegM ? wide_tile_rows(M) : 0;
    return std::pair<int, int64_t>{0, wide > 0 ? wide : M / want * want};
  }
  return std::nullopt;
}

}  // namespace

// x[M, K] · W[N, K]ᵀ with M a few rows (1 to kSplitMaxRestRows) past a
// whole number of panels, which the operand swap takes: the whole panels
// as one product (swapped, packing x), the rows after them as another (dot
// products: W read once more), both written into one [M, N] result. Padding
// them to a whole panel would compute up to 31 rows of zeros; padding to a
// whole register tile loses the swap (W packed instead). Measured on Zen 5,
// one core, stories110M f32 prefill of 129 tokens, padded to 136 rows /
// split: 437 / 497 tok/s (128 tokens: 529-539).
// Where the unswapped product would pad its rows (packed_rows_padded: A
// and C copied, W packed) the swap pays from K >= M on
// (kSwapMinDepthPerRowPadded; the whole-panel part is marked so that
// swap_small_row_matmuls takes it, and the rest rows, padded to a tile, are
// swapped as well where they fill one). Zen 5 (full rate), alternated in
// one process, swapped / padded, one and two threads: [301,768]·W[2048,768]ᵀ
// 1.07x and 1.02-1.10x, [300,...] 1.03-1.05x and 1.01-1.07x, [257,...]
// 1.10-1.13x and 1.04-1.07x; rows that need no padding swapped from K >= M
// instead measured slower ([200,768]·W[2048,768]ᵀ 0.97x / 0.94x, [512,...]
// 0.94x / 0.90x).
static int split_prompt_rows(mlir::ModuleOp module, const VectorIsa& isa) {
  struct Split {
    mlir::linalg::MatmulOp mm;
    int64_t main_rows;  // its whole panels' rows
    bool padded;        // the packed schedule would pad its rows
  };
  llvm::SmallVector<Split> todo;
  module.walk([&](mlir::linalg::MatmulOp mm) {
    if (!plain_matmul(mm) || !b_transposed(mm) || !all_f32(mm) ||
        !mm.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>())
      return;
    llvm::SmallVector<int64_t> r = llvm::cast<mlir::linalg::LinalgOp>(mm.getOperation()).getStaticLoopRanges();
    const int64_t panel = swap_rows_step(r[0], isa), rest = r[0] % panel, main_rows = r[0] - rest;
    // The whole panels must be a product the packed schedule takes (and so
    // swaps), or the split only makes two small products of one.
    const bool padded = packed_rows_padded(r[0], r[1], r[2], isa);
    const int64_t depth = padded ? kSwapMinDepthPerRowPadded : kSwapMinDepthPerRow;
    if (r[0] > panel && rest >= 1 && rest <= kSplitMaxRestRows && main_rows >= kPackedMinRowsTransposedB &&
        main_rows * r[1] * r[2] >= kPackMinVolumeTransposedB && swap_pays(main_rows, r[1], r[2], isa, depth))
      todo.push_back({mm, main_rows, padded});
  });
  for (const Split& s : todo) {
    mlir::linalg::LinalgOp main = split_product(s.mm, 0, s.main_rows).first;
    if (s.padded) main->setAttr(kSwapPaddedRowsMark, mlir::UnitAttr::get(main->getContext()));
  }
  return static_cast<int>(todo.size());
}

// Products that some tile divides once split (split_point), each part
// considered again (a split of rows, then of the main part's columns).
static int split_at_tiles(mlir::ModuleOp module, const VectorIsa& isa) {
  llvm::SmallVector<mlir::linalg::LinalgOp> todo;
  module.walk([&](mlir::linalg::LinalgOp op) {
    if (fits_padding(op)) todo.push_back(op);
  });
  int count = 0;
  while (!todo.empty()) {
    mlir::linalg::LinalgOp op = todo.pop_back_val();
    std::optional<std::pair<int, int64_t>> at = split_point(op, isa);
    if (!at) continue;
    auto [first, second] = split_product(op, at->first, at->second);
    todo.push_back(first);
    todo.push_back(second);
    ++count;
  }
  return count;
}

// A · B with B [K, N] of 1-3 columns (the rest of a split past whole
// vectors: 129³'s 129th column) as dot products: B's columns copied into
// rows [N, K] (a small copy: N x K), each output a row of A times one of
// them, K along the vectors. The register tiles vectorize along N instead,
// padded to 4 columns: one 4-lane FMA per row of A and step of K for 1-3
// useful products, where the dot products spend N / 16. They need K in
// whole vectors: the K past them is a product of its own (its few columns
// of A padded, see padded_dims) whose result starts the main one's sums.
// Measured on Zen 5, one process alternating the two forms, one / two
// threads: 129³ 1.07-1.08x / 1.08x, [128,128]·[128,129] 1.07x / 1.08x,
// [96,1000]·[1000,97] 1.15x / 1.17x, [200,300]·[300,131] 1.05x / 1.11x,
// [129,129]·[129,131] (3 columns) 1.04x; AVX2 code (znver3) 1.03-1.06x.
// From 4 columns on the register tiles are as fast or faster ([129,129]·
// [129,134] 0.99x, 13 columns 0.83-0.93x as dot products).
constexpr int64_t kDotRestMaxCols = 3;
// Rows of A at least (the copy of B's columns is then at most 1/16 of the work).
constexpr int64_t kDotRestMinRows = 16;
static int column_rests_as_dot_products(mlir::ModuleOp module, const VectorIsa& isa) {
  llvm::SmallVector<mlir::linalg::MatmulOp> todo;
  const int64_t lanes = isa.f32_lanes;
  module.walk([&](mlir::linalg::MatmulOp mm) {
    if (!plain_matmul(mm) || b_transposed(mm) || !all_f32(mm) ||
        !mm.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>())
      return;
    llvm::SmallVector<int64_t> r = llvm::cast<mlir::linalg::LinalgOp>(mm.getOperation()).getStaticLoopRanges();
    const int64_t M = r[0], N = r[1], K = r[2];
    // Dot products as the schedule takes them: whole 4-row tiles, not
    // packed (product_form), K at least two vectors.
    if (N <= kDotRestMaxCols && M >= kDotRestMinRows && M % 4 == 0 && K >= 2 * lanes &&
        M * N * K < kPackMinVolumeTransposedB)
      todo.push_back(mm);
  });
  for (mlir::linalg::MatmulOp mm : todo) {
    mlir::OpBuilder b(mm);
    mlir::Location loc = mm.getLoc();
    llvm::SmallVector<int64_t> r = llvm::cast<mlir::linalg::LinalgOp>(mm.getOperation()).getStaticLoopRanges();
    const int64_t M = r[0], N = r[1], K = r[2], main_k = K / lanes * lanes;
    auto fill = mm.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>();
    mlir::Value a = mm.getDpsInputOperand(0)->get(), bk = mm.getDpsInputOperand(1)->get();
    mlir::Type f32 = b.getF32Type();
    mlir::Value rows = mlir::tensor::EmptyOp::create(b, loc, llvm::ArrayRef<int64_t>{N, K}, f32);
    mlir::Value bt = mlir::linalg::TransposeOp::create(b, loc, bk, rows, llvm::ArrayRef<int64_t>{1, 0}).getResult()[0];
    mlir::MLIRContext* ctx = b.getContext();
    const mlir::AffineExpr d0 = mlir::getAffineDimExpr(0, ctx), d1 = mlir::getAffineDimExpr(1, ctx),
                           d2 = mlir::getAffineDimExpr(2, ctx);
    llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::get(3, 0, {d0, d2}, ctx),
                                               mlir::AffineMap::get(3, 0, {d1, d2}, ctx),
                                               mlir::AffineMap::get(3, 0, {d0, d1}, ctx)};
    llvm::SmallVector<mlir::NamedAttribute, 1> attrs = {b.getNamedAttr("indexing_maps", b.getAffineMapArrayAttr(maps))};
    auto out_t = mlir::RankedTensorType::get({M, N}, f32);
    // A and B's rows over K's [from, from + size).
    auto product = [&](int64_t from, int64_t size, mlir::Value init) {
      return mlir::linalg::MatmulOp::create(
                 b, loc, mlir::TypeRange{out_t},
                 mlir::ValueRange{slice_along(b, loc, a, 1, from, size), slice_along(b, loc, bt, 1, from, size)},
                 mlir::ValueRange{init}, attrs)
          .getResult(0);
    };
    mlir::Value init = filled(b, loc, fill.getInputs()[0], {M, N});
    if (main_k < K) init = product(main_k, K - main_k, init);
    mm->getResult(0).replaceAllUsesWith(product(0, main_k, init));
    mm->erase();
    if (fill->use_empty()) fill->erase();
  }
  return static_cast<int>(todo.size());
}

FittedProducts fit_matmuls_to_tiles(mlir::ModuleOp module, const VectorIsa& isa) {
  FittedProducts fitted;
  fitted.split = split_prompt_rows(module, isa) + split_at_tiles(module, isa);
  fitted.split += column_rests_as_dot_products(module, isa);
  llvm::SmallVector<std::pair<mlir::linalg::LinalgOp, PaddedDims>> todo;
  module.walk([&](mlir::linalg::LinalgOp op) {
    // Traced products start from a fill (a zero init); others are left.
    if (!fits_padding(op)) return;
    if (std::optional<PaddedDims> p = padded_dims(op, isa)) todo.push_back({op, *p});
  });
  for (auto& [op, p] : todo) {
    mlir::OpBuilder b(op);
    mlir::Location loc = op.getLoc();
    const bool bt = b_transposed(op);
    auto ct = llvm::cast<mlir::RankedTensorType>(op->getResult(0).getType());
    mlir::Value a = pad_with_zeros(b, loc, op.getDpsInputOperand(0)->get(), p.m, p.k);
    mlir::Value w = bt ? pad_with_zeros(b, loc, op.getDpsInputOperand(1)->get(), p.n, p.k)
                       : pad_with_zeros(b, loc, op.getDpsInputOperand(1)->get(), p.k, p.n);
    // The accumulator: its fill, made at the padded size.
    auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>();
    llvm::SmallVector<int64_t> shape(ct.getShape());
    shape[shape.size() - 2] = p.m;
    shape[shape.size() - 1] = p.n;
    mlir::Value acc = filled(b, loc, fill.getInputs()[0], shape);
    llvm::SmallVector<mlir::NamedAttribute, 1> attrs;
    if (op.hasUserDefinedMaps()) attrs.push_back(b.getNamedAttr("indexing_maps", op->getAttr("indexing_maps")));
    auto padded_t = mlir::RankedTensorType::get(shape, ct.getElementType());
    mlir::Operation* prod =
        llvm::isa<mlir::linalg::BatchMatmulOp>(op.getOperation())
            ? mlir::linalg::BatchMatmulOp::create(b, loc, mlir::TypeRange{padded_t}, mlir::ValueRange{a, w},
                                                  mlir::ValueRange{acc}, attrs)
                  .getOperation()
            : mlir::linalg::MatmulOp::create(b, loc, mlir::TypeRange{padded_t}, mlir::ValueRange{a, w},
                                             mlir::ValueRange{acc}, attrs)
                  .getOperation();
    const int64_t rank = ct.getRank();
    mlir::Value out = mlir::tensor::ExtractSliceOp::create(b, loc, ct, prod->getResult(0), at_origin(b, rank),
                                                           sizes_of(b, ct.getShape()), unit_strides(b, rank))
                          .getResult();
    op->getResult(0).replaceAllUsesWith(out);
    op->erase();
    if (fill->use_empty()) fill->erase();
  }
  fitted.padded = static_cast<int>(todo.size());
  return fitted;
}

// ---- Batched products with a transposed B, one batch at a time -------------
// Attention's q·kᵀ over a prompt is traced as a transpose of k ([B, N, K] ->
// [B, K, N]) and a batch_matmul. As two whole ops the transpose writes all of
// kᵀ (384 KiB for 12 x [128, 64]) and the product reads it back from the
// last-level cache; one batch at a time (a tensor-level scf.for over the
// batch, transpose and product inside) each head's kᵀ is read back from L1
// / L2 right after it is written. Measured on a Zen 3 core (2026-12-06, the
// two forms alternated in one process, 9 rounds, medians): 12 x [128,64] ·
// [128,64]ᵀ 84.8 -> 90.8 GFLOP/s (kᵀ handed in already transposed: 92),
// [301,64] 82.7 -> 84.9; on two threads, inside batched_products_by_thread's
// regions (each thread's heads one at a time, its transpose moved in), 1.00x.
static bool is_minor_transpose3(mlir::linalg::GenericOp g) {
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 || g.getNumLoops() != 3 ||
      g.getNumParallelLoops() != 3)
    return false;
  mlir::MLIRContext* ctx = g.getContext();
  auto d = [&](unsigned i) { return mlir::getAffineDimExpr(i, ctx); };
  llvm::SmallVector<mlir::AffineMap> maps = g.getIndexingMapsArray();
  if (maps[0] != mlir::AffineMap::get(3, 0, {d(0), d(2), d(1)}, ctx) || !maps[1].isIdentity()) return false;
  mlir::Block& body = g.getRegion().front();
  auto yield = llvm::dyn_cast<mlir::linalg::YieldOp>(body.getTerminator());
  return body.getOperations().size() == 1 && yield && yield.getNumOperands() == 1 &&
         yield.getOperand(0) == body.getArgument(0);
}

// Attention's kᵀ (each head's, one batch at a time; all of it where the
// heads are split over the threads first) is written into rows of a
// multiple of kTransposedRowAlign f32 (64 bytes) and the product reads the
// [d, t] view of it: with t = 301 every row of kᵀ started 1204 bytes after
// the last, so the register tiles' vector loads of B straddled cache lines.
// (A bufferization.alloc_tensor: a slice of a tensor.empty folds to an
// empty tensor of the slice's size.) Measured on a Zen 3 core, one process
// alternating the two forms, 9 rounds, medians of the paired ratios, 12 x
// [t,64]·[t,64]ᵀ: t = 301 1.03x, 257 1.08x, 129 1.03x (rows of a multiple
// of 8 f32: 301 1.03-1.06x, 257 1.05x, 129 1.02x, 77 1.03x); on two cores
// 301 1.04-1.07x, 257 1.11x, 129 1.05x.
constexpr int64_t kTransposedRowAlign = 16;

// A destination of type `t` for a transpose whose rows (its last dim) start
// on cache lines: a view of a buffer with rows of a multiple of
// kTransposedRowAlign elements; null where t's rows already are.
static mlir::Value line_aligned_rows(mlir::OpBuilder& b, mlir::Location loc, mlir::RankedTensorType t) {
  const int64_t last = t.getRank() - 1, n = t.getDimSize(last);
  if (n % kTransposedRowAlign == 0) return {};
  llvm::SmallVector<int64_t> shape(t.getShape());
  shape.back() = round_up(n, kTransposedRowAlign);
  mlir::Value wide = mlir::bufferization::AllocTensorOp::create(
      b, loc, mlir::RankedTensorType::get(shape, t.getElementType()), mlir::ValueRange{});
  return slice_along(b, loc, wide, int(last), 0, n);
}

// ---- Batched products split over the threads by batch first -----------------
// A batched product that fit_matmuls_to_tiles splits and pads (attention's
// q·kᵀ over 301 tokens, 12 heads) became several products, each put on the
// threads by its own forall over the batch, with the padding copies, the
// small corner product and the copies out of the padded results on one
// thread between them: four fork / joins and serial work per call. perf of
// 12 x [301,64]·[64,301] on two Zen 5 cores: ~11% of the samples in libomp
// (waiting), ~4% in the serial parts. Such a product is now first split by
// its batch into one scf.forall iteration per thread (tensor level, each
// iteration's batches written in place), and fitted inside it: each thread
// pads, multiplies and copies out its own batches, one region per call. The
// schedule runs the ops inside on their iteration's thread
// (in_thread_region).
int batched_products_by_thread(mlir::ModuleOp module, const VectorIsa& isa, int threads) {
  if (threads < 2) return 0;
  llvm::SmallVector<mlir::linalg::LinalgOp> todo;
  module.walk([&](mlir::linalg::BatchMatmulOp bmm) {
    auto op = llvm::cast<mlir::linalg::LinalgOp>(bmm.getOperation());
    if (!fits_padding(op) || !all_f32(op) || in_thread_region(op.getOperation())) return;
    llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
    if (r[0] % threads != 0 || r[0] * r[1] * r[2] * r[3] < kParallelMinMatmulWork) return;
    if (split_point(op, isa) || padded_dims(op, isa)) todo.push_back(op);
  });
  for (mlir::linalg::LinalgOp op : todo) {
    mlir::OpBuilder b(op);
    mlir::Location loc = op.getLoc();
    auto ct = llvm::cast<mlir::RankedTensorType>(op->getResult(0).getType());
    const int64_t chunk = ct.getDimSize(0) / threads;
    auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>();
    if (auto t = op.getDpsInputOperand(1)->get().getDefiningOp<mlir::linalg::GenericOp>();
        t && t->hasOneUse() && is_minor_transpose3(t) && t.getDpsInitOperand(0)->get().getDefiningOp<mlir::tensor::EmptyOp>()) {
      // kᵀ's rows on whole cache lines, as one batch at a time does (see kTransposedRowAlign).
      mlir::OpBuilder tb(t);
      if (mlir::Value dest = line_aligned_rows(tb, loc, llvm::cast<mlir::RankedTensorType>(t->getResult(0).getType())))
        t.getDpsInitOperand(0)->set(dest);
    }
    mlir::Value empty = mlir::tensor::EmptyOp::create(b, loc, ct.getShape(), ct.getElementType());
    auto forall = mlir::scf::ForallOp::create(b, loc, llvm::ArrayRef<mlir::OpFoldResult>{b.getIndexAttr(threads)},
                                              mlir::ValueRange{empty}, std::nullopt);
    forall->setAttr(kThreadRegionMark, b.getUnitAttr());
    mlir::OpBuilder ib = mlir::OpBuilder::atBlockTerminator(forall.getBody());
    mlir::Value first = mlir::arith::MulIOp::create(ib, loc, forall.getInductionVar(0),
                                                    mlir::arith::ConstantIndexOp::create(ib, loc, chunk));
    // Operand `v`'s batches [first, first + chunk), all of its other dims.
    auto slice = [&](mlir::Value v) { return slice_along(ib, loc, v, 0, first, chunk); };
    mlir::Value out = forall.getRegionIterArgs()[0];
    mlir::Value acc = mlir::linalg::FillOp::create(ib, loc, mlir::ValueRange{fill.getInputs()[0]},
                                                   mlir::ValueRange{slice(out)})
                          .getResult(0);
    mlir::IRMapping map;
    for (mlir::OpOperand* in : op.getDpsInputOperands()) map.map(in->get(), slice(in->get()));
    map.map(op.getDpsInitOperand(0)->get(), acc);
    mlir::Operation* part = ib.clone(*op.getOperation(), map);
    part->getResult(0).setType(llvm::cast<mlir::RankedTensorType>(acc.getType()));
    {
      mlir::OpBuilder tb = mlir::OpBuilder::atBlockBegin(forall.getTerminator().getBody());
      const SliceRange r = range_along(tb, out, 0, first, chunk);
      mlir::tensor::ParallelInsertSliceOp::create(tb, loc, part->getResult(0), out, r.offsets, r.sizes, r.strides);
    }
    op->getResult(0).replaceAllUsesWith(forall.getResult(0));
    op->erase();
    if (fill->use_empty()) fill->erase();
  }
  return static_cast<int>(todo.size());
}

int batched_products_by_batch(mlir::ModuleOp module, int threads) {
  if (threads > 1) return 0;  // (on threads the batch is split over them first: no gain measured there)
  struct Product {
    mlir::linalg::BatchMatmulOp bmm;
    mlir::linalg::GenericOp t;  // B's transpose
    mlir::linalg::FillOp fill;  // the init
  };
  llvm::SmallVector<Product> todo;
  module.walk([&](mlir::linalg::BatchMatmulOp bmm) {
    auto op = llvm::cast<mlir::linalg::LinalgOp>(bmm.getOperation());
    if (bmm.hasUserDefinedMaps() || !all_f32(op) || !all_static(op)) return;
    auto t = bmm.getDpsInputOperand(1)->get().getDefiningOp<mlir::linalg::GenericOp>();
    auto fill = bmm.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>();
    if (!t || !t->hasOneUse() || !is_minor_transpose3(t) || !fill || !fill->hasOneUse()) return;
    if (op.getStaticLoopRanges()[0] < 2) return;
    todo.push_back({bmm, t, fill});
  });
  for (auto [bmm, t, fill] : todo) {
    mlir::OpBuilder b(bmm);
    mlir::Location loc = bmm.getLoc();
    auto ct = llvm::cast<mlir::RankedTensorType>(bmm->getResult(0).getType());
    mlir::Value empty = mlir::tensor::EmptyOp::create(b, loc, ct.getShape(), ct.getElementType());
    mlir::Value lb = mlir::arith::ConstantIndexOp::create(b, loc, 0);
    mlir::Value ub = mlir::arith::ConstantIndexOp::create(b, loc, ct.getDimSize(0));
    mlir::Value step = mlir::arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = mlir::scf::ForOp::create(
        b, loc, lb, ub, step, mlir::ValueRange{empty},
        [&](mlir::OpBuilder& ib, mlir::Location l, mlir::Value h, mlir::ValueRange iter) {
          // Operand `v`'s batch h: [1, all, all].
          auto slice = [&](mlir::Value v) { return slice_along(ib, l, v, 0, h, 1); };
          mlir::IRMapping tm;
          tm.map(t.getDpsInputOperand(0)->get(), slice(t.getDpsInputOperand(0)->get()));
          auto tt = llvm::cast<mlir::RankedTensorType>(t->getResult(0).getType());
          auto head_t = mlir::RankedTensorType::get({1, tt.getDimSize(1), tt.getDimSize(2)}, tt.getElementType());
          // The head's kᵀ rows start on cache lines (see kTransposedRowAlign).
          mlir::Value dest = line_aligned_rows(ib, l, head_t);
          if (!dest) dest = mlir::tensor::EmptyOp::create(ib, l, head_t.getShape(), head_t.getElementType());
          tm.map(t.getDpsInitOperand(0)->get(), dest);
          mlir::Operation* th = ib.clone(*t.getOperation(), tm);
          th->getResult(0).setType(head_t);
          mlir::Value acc = mlir::linalg::FillOp::create(ib, l, mlir::ValueRange{fill.getInputs()[0]},
                                                         mlir::ValueRange{slice(iter[0])})
                                .getResult(0);
          mlir::IRMapping pm;
          pm.map(bmm.getDpsInputOperand(0)->get(), slice(bmm.getDpsInputOperand(0)->get()));
          pm.map(bmm.getDpsInputOperand(1)->get(), th->getResult(0));
          pm.map(bmm.getDpsInitOperand(0)->get(), acc);
          mlir::Operation* part = ib.clone(*bmm.getOperation(), pm);
          part->getResult(0).setType(llvm::cast<mlir::RankedTensorType>(acc.getType()));
          const SliceRange r = range_along(ib, iter[0], 0, h, 1);
          mlir::Value upd =
              mlir::tensor::InsertSliceOp::create(ib, l, part->getResult(0), iter[0], r.offsets, r.sizes, r.strides)
                  .getResult();
          mlir::scf::YieldOp::create(ib, l, mlir::ValueRange{upd});
        });
    bmm->getResult(0).replaceAllUsesWith(loop.getResult(0));
    bmm->erase();
    t->erase();
    fill->erase();
  }
  return static_cast<int>(todo.size());
}

bool in_thread_region(mlir::Operation* op) {
  for (auto f = op->getParentOfType<mlir::scf::ForallOp>(); f; f = f->getParentOfType<mlir::scf::ForallOp>())
    if (f->hasAttr(kThreadRegionMark)) return true;
  return false;
}

}  // namespace radix::cpu_schedule
