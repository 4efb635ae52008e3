// "radix-prefetch-next-tile": in the reduction loops of dot-product tiles
// (the decode mat-vec's schedule: tn weight rows read side by side along K,
// marked radix.stream_loop by the schedule), every step that reads a
// [tn, v] block of a weight matrix (a [v] run when tn = 1: short rows on
// AVX2) also prefetches the same columns of the next tn rows into L2. With
// one row per tile it measured faster too (Zen 3, stories110M bf16 decode,
// one core: 43-52 -> 56-64 tok/s). The schedule leaves AVX2's 8-row tiles
// of long f32 rows unmarked: there the prefetches slowed them (dot_tiles).
//
// Why: such a tile reads tn short row streams at once (1.5 KiB rows for the
// stories110M shape in bf16), so the hardware prefetchers keep restarting
// and the loads wait on memory; bf16 rows, half as long as f32 ones, suffered
// most. Measured on one core (Xeon, AVX-512), the generated code of
// [1,768]·W[2048,768]ᵀ over 150 weight matrices (out of cache), with and
// without its prefetches in the same process: bf16 8.9 -> 13.2 GB/s of
// weights (0.59 -> 0.88 of a plain read), f32 14.8 -> 15.6 GB/s. One tile
// ahead is enough there (two tiles or L1 as the target measured no better;
// L1 was worse for f32); one-row tiles of rows of at most 1 KiB read further
// ahead (tiles_ahead).
//
// Reads of a buffer with no rows past the block read (a decode step's [1, K]
// activation, read again by every tile and so in L1) get none: with one row
// per tile that was 18 prefetch instructions per weight row of stories15M's
// classifier, all of the activation itself. (No throughput change measured:
// the classifier mat-vec read 9.5-10 GB/s with and without them on Zen 3.)
//
// In the packed matmul's panel loops (marked radix.acc_tile_loop) each
// register tile also prefetches the next tile's accumulator block of C
// into L2 (see prefetch_next_acc_tiles), and on AVX-512 the next row
// tile's rows of A into L1 (prefetch_next_row_tile_of_a).
//
// Runs after bufferization (it follows the reads' subviews back to the
// weight buffer) and removes the marks. Prefetches are hints: the next rows
// are clamped to the buffer's last row, so every address stays inside it.
#include <algorithm>
#include <optional>
#include <vector>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/prefetch_util.h"

namespace radix {

namespace {

// The buffer a read comes from, through unit-stride, rank-preserving
// subviews, and the offsets those subviews add to the read's indices; none
// when a subview in the chain is of another kind. Creates no IR.
struct RootAccess {
  mlir::Value buffer;
  std::vector<llvm::SmallVector<mlir::OpFoldResult>> offsets;  // one list per subview
};

std::optional<RootAccess> root_of(mlir::Value memref) {
  RootAccess root;
  while (auto sv = memref.getDefiningOp<mlir::memref::SubViewOp>()) {
    if (!is_plain_slice(sv)) return std::nullopt;
    root.offsets.push_back(sv.getMixedOffsets());
    memref = sv.getSource();
  }
  root.buffer = memref;
  return root;
}

// A buffer worth prefetching: static, row-major, not a stack temporary.
bool is_streamed_buffer(mlir::Value buffer) {
  auto t = llvm::cast<mlir::MemRefType>(buffer.getType());
  return t.getRank() >= 2 && t.hasStaticShape() && t.getLayout().isIdentity() &&
         !buffer.getDefiningOp<mlir::memref::AllocaOp>();
}

// How many tiles ahead a dot-product tile's prefetches read: one, or for
// one-row tiles of rows of at most 1 KiB as many rows as fit in
// kPrefetchAheadBytes. Why: one short row ahead is too close to cover the
// latency of the next lines. Measured on Zen 3 (AVX2), stories15M bf16
// decode (576-byte rows, the classifier 58% of the step), alternated in one
// process against one row ahead: 2 / 3 / 4 / 8 / 16 rows ahead 1.07 /
// 1.19 / 1.17-1.21 / 1.01 / 0.97x on one core, 4 rows 1.17x on two; this
// rule (3 rows) 1.13-1.18x / 1.12-1.13x; stories110M bf16 (1.5 KiB rows,
// from memory) 4 rows ahead 0.88x (it keeps one); with f32 activations'
// short decode attention rows also ahead on two threads, stories15M f32
// and Q4_0 / stories110M Q4_0 decode on two cores 1.04 / 0.99 / 1.01x.
constexpr int64_t kPrefetchAheadBytes = 2048;
int64_t tiles_ahead(int64_t tn, mlir::MemRefType weights) {
  const int64_t rank = weights.getRank();
  if (tn != 1 || weights.isDynamicDim(rank - 1)) return 1;
  const int64_t row_bytes = weights.getDimSize(rank - 1) * weights.getElementTypeBitWidth() / 8;
  return row_bytes > 0 ? std::max<int64_t>(1, kPrefetchAheadBytes / row_bytes) : 1;
}

void prefetch_next_tiles(mlir::scf::ForOp loop) {
  std::vector<mlir::vector::TransferReadOp> reads;
  for (mlir::Operation& op : *loop.getBody())
    if (auto r = llvm::dyn_cast<mlir::vector::TransferReadOp>(op)) reads.push_back(r);
  for (mlir::vector::TransferReadOp read : reads) {
    mlir::VectorType vt = read.getVectorType();
    // [tn, v] blocks, or [v] runs of one row (tn = 1).
    if (vt.getRank() < 1 || vt.getRank() > 2 || !read.getPermutationMap().isMinorIdentity() || vt.isScalable())
      continue;
    const int64_t tn = vt.getRank() == 2 ? vt.getDimSize(0) : 1, v = vt.getDimSize(vt.getRank() - 1);
    const int64_t elem_bytes = vt.getElementTypeBitWidth() / 8;
    if (elem_bytes == 0) continue;

    std::optional<RootAccess> root = root_of(read.getBase());
    if (!root || !is_streamed_buffer(root->buffer) || loop->isAncestor(root->buffer.getParentRegion()->getParentOp()))
      continue;
    auto bt = llvm::cast<mlir::MemRefType>(root->buffer.getType());
    const int64_t rank = bt.getRank();
    // A buffer with no rows past this block (a decode step's [1, K]
    // activation row, read again by every tile): nothing ahead to fetch, and
    // a prefetch per cache line per step would only take load slots.
    if (bt.getDimSize(rank - 2) <= tn) continue;
    mlir::OpBuilder b(read);
    mlir::Location loc = read.getLoc();
    const llvm::SmallVector<mlir::Value> indices = add_slice_offsets(b, loc, root->offsets, llvm::to_vector(read.getIndices()));
    mlir::Value row = indices[rank - 2];
    mlir::Value last_row = mlir::arith::ConstantIndexOp::create(b, loc, bt.getDimSize(rank - 2) - 1);
    const int64_t ahead = tiles_ahead(tn, bt);
    for (int64_t r = 0; r < tn; ++r) {
      mlir::Value next = mlir::arith::AddIOp::create(b, loc, row, mlir::arith::ConstantIndexOp::create(b, loc, ahead * tn + r));
      llvm::SmallVector<mlir::Value> idx = indices;
      idx[rank - 2] = mlir::arith::MinUIOp::create(b, loc, next, last_row);
      prefetch_lines(b, loc, root->buffer, idx, v, elem_bytes, /*is_write=*/false, kLocalityL2);
    }
  }
}

// The packed matmul's panel loops (marked radix.acc_tile_loop): each
// register tile reads its accumulator tile (a [rows, panel] block of C)
// before its K loop and writes it back after; the next tile's block — the
// next panel, or the first panel of the next row tile after the last — is
// prefetched into L2 right after that read, a whole K loop (thousands of
// cycles) ahead. C is read again at every K block, and the A and B blocks
// read between two visits push it out of L2: the first FMAs of each tile
// waited on it. perf (cpu-clock samples over the JIT code, one Zen 5 core)
// put 3.1% of 4096³'s samples on the tiles' C loads without these
// prefetches and 1.9% with them (1024³: 2.9% -> 2.5%); timed, alternated
// in one process, the difference is within the host's spread (one thread
// 0.98-1.04x, two 0.95-1.12x). Into L1 instead measured the same.
void prefetch_next_acc_tiles(mlir::scf::ForOp panels) {
  // After radix-accumulators-from-fill the read is on the else branch (K
  // blocks after the first): prefetched from there.
  std::optional<AccTile> tile = acc_tile(panels);
  if (!tile || !panels->isProperAncestor(tile->load)) return;
  mlir::vector::TransferReadOp acc = tile->load;
  mlir::VectorType vt = acc.getVectorType();
  const int64_t elem_bytes = vt.getElementTypeBitWidth() / 8;
  if (vt.getRank() != 2 || vt.isScalable() || !acc.getPermutationMap().isMinorIdentity() || elem_bytes == 0) return;
  std::optional<int64_t> lb = mlir::getConstantIntValue(panels.getLowerBound()),
                         ub = mlir::getConstantIntValue(panels.getUpperBound()),
                         step = mlir::getConstantIntValue(panels.getStep());
  if (!lb || !ub || !step || *step <= 0) return;
  // The views of C the read goes through that this loop's body makes
  // (they index by the panel and row loops): cloned for the next tile.
  llvm::SmallVector<mlir::Operation*> chain;
  for (mlir::Value m = acc.getBase();;) {
    mlir::Operation* def = m.getDefiningOp();
    if (!def || def->getBlock() != panels.getBody()) break;
    auto sv = mlir::dyn_cast<mlir::memref::SubViewOp>(def);
    if (!sv) return;
    chain.push_back(def);
    m = sv.getSource();
  }
  mlir::OpBuilder b(panels.getContext());
  b.setInsertionPointAfter(acc);
  const mlir::Location loc = acc.getLoc();
  auto cst = [&](int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); };
  mlir::Value p = panels.getInductionVar();
  mlir::Value p_next = mlir::arith::AddIOp::create(b, loc, p, cst(*step));
  mlir::Value more = mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::slt, p_next, cst(*ub));
  mlir::IRMapping map;
  map.map(p, mlir::arith::SelectOp::create(b, loc, more, p_next, cst(*lb)).getResult());
  // After the last panel: the next row tile's first one (the row loop is
  // the panel loop's parent), clamped to the last row tile.
  if (auto rows = llvm::dyn_cast<mlir::scf::ForOp>(panels->getParentOp())) {
    std::optional<int64_t> rub = mlir::getConstantIntValue(rows.getUpperBound()),
                           rstep = mlir::getConstantIntValue(rows.getStep());
    if (rub && rstep && *rstep > 0) {
      mlir::Value r = rows.getInductionVar();
      mlir::Value r_next = mlir::arith::MinSIOp::create(
          b, loc, mlir::arith::AddIOp::create(b, loc, r, cst(*rstep)), cst(*rub - *rstep));
      map.map(r, mlir::arith::SelectOp::create(b, loc, more, r, r_next).getResult());
    }
  }
  mlir::Value next = acc.getBase();
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) next = b.clone(**it, map)->getResult(0);
  // One prefetch per line of each row of the block.
  llvm::SmallVector<mlir::Value> idx = llvm::to_vector(acc.getIndices());
  for (int64_t r = 0; r < vt.getDimSize(0); ++r) {
    llvm::SmallVector<mlir::Value> at = idx;
    at[0] = mlir::arith::AddIOp::create(b, loc, idx[0], cst(r));
    prefetch_lines(b, loc, next, at, vt.getDimSize(1), elem_bytes, /*is_write=*/false, kLocalityL2);
  }
}

// AVX-512's packed matmuls (panel loops marked radix.prefetch_a_rows): in
// each register tile's K loop, the next row tile's rows of A into L1, one
// row per panel (panel p fetches row p mod R of the next R rows), one
// prefetch per K step (4 columns: each line asked for four times, one
// instruction per 64 FMAs) at the column the step reads. Why: A is read in
// place, R rows with A's row stride, and its tile's first panel waited on
// them. Measured on one Zen 5 core, alternated in one process against the
// same code without them: 4096^3 1.01-1.03x on one thread, 1.01-1.02x on
// two, 2048^3 1.00x / 1.02x, 1024^3, 256^3 and [128,4096]x[4096,11008]
// within the host's spread (0.99-1.01x); into L2 instead 1.01x at 4096^3;
// AVX2 code (for Zen 3, on that host) 0.99-1.00x: not marked there. Not
// taken: K blocks outside the row blocks (B's slice in L2 for all rows,
// with these prefetches) 0.98x of neither; the last row tile prefetching
// the next K block's slice of packed B 0.99x.
void prefetch_next_row_tile_of_a(mlir::scf::ForOp panels) {
  auto rows = llvm::dyn_cast<mlir::scf::ForOp>(panels->getParentOp());
  if (!rows) return;
  // Its accumulator may start from C or, in a first K block, C's fill.
  mlir::scf::ForOp k_loop = acc_k_loop(panels);
  if (!k_loop) return;
  std::optional<int64_t> rstep = mlir::getConstantIntValue(rows.getStep()), plb = mlir::getConstantIntValue(panels.getLowerBound()),
                         pstep = mlir::getConstantIntValue(panels.getStep());
  if (!rstep || !plb || !pstep || *rstep <= 0 || *pstep <= 0) return;
  // A's first scalar read of the step (its tile's row 0 at the step's column).
  mlir::memref::LoadOp first;
  for (mlir::Operation& op : *k_loop.getBody())
    if (auto l = llvm::dyn_cast<mlir::memref::LoadOp>(op)) {
      first = l;
      break;
    }
  if (!first || first.getIndices().size() != 2) return;
  for (mlir::Value i : first.getIndices())
    if (mlir::getConstantIntValue(i) != 0) return;
  std::optional<RootAccess> root = root_of(first.getMemref());
  if (!root || !is_streamed_buffer(root->buffer) || panels->isAncestor(root->buffer.getParentRegion()->getParentOp())) return;
  auto bt = llvm::cast<mlir::MemRefType>(root->buffer.getType());
  if (bt.getRank() != 2 || bt.getDimSize(0) <= *rstep) return;
  mlir::OpBuilder b(first);
  const mlir::Location loc = first.getLoc();
  auto cst = [&](int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); };
  llvm::SmallVector<mlir::Value> idx = add_slice_offsets(b, loc, root->offsets, llvm::to_vector(first.getIndices()));
  mlir::Value p = mlir::arith::DivUIOp::create(
      b, loc, mlir::arith::SubIOp::create(b, loc, panels.getInductionVar(), cst(*plb)), cst(*pstep));
  mlir::Value ahead = mlir::arith::AddIOp::create(b, loc, cst(*rstep), mlir::arith::RemUIOp::create(b, loc, p, cst(*rstep)));
  idx[0] = mlir::arith::MinUIOp::create(b, loc, mlir::arith::AddIOp::create(b, loc, idx[0], ahead), cst(bt.getDimSize(0) - 1));
  prefetch_lines(b, loc, root->buffer, idx, 1, bt.getElementTypeBitWidth() / 8, /*is_write=*/false, kLocalityL1);
}

struct PrefetchNextTilePass
    : public mlir::PassWrapper<PrefetchNextTilePass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrefetchNextTilePass)

  llvm::StringRef getArgument() const override { return "radix-prefetch-next-tile"; }
  llvm::StringRef getDescription() const override {
    return "Prefetch the next weight rows in the reduction loops of dot-product tiles";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    for (mlir::Operation* loop : take_marked_ops(getOperation(), kStreamLoopMark))
      if (auto f = llvm::dyn_cast<mlir::scf::ForOp>(loop)) prefetch_next_tiles(f);
    for (mlir::Operation* loop : take_marked_ops(getOperation(), kAccTileLoopMark))
      if (auto f = llvm::dyn_cast<mlir::scf::ForOp>(loop)) {
        prefetch_next_acc_tiles(f);
        if (f->hasAttr(kPrefetchARowsMark)) {
          f->removeAttr(kPrefetchARowsMark);
          prefetch_next_row_tile_of_a(f);
        }
      }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_prefetch_next_tile_pass() { return std::make_unique<PrefetchNextTilePass>(); }

}  // namespace radix
