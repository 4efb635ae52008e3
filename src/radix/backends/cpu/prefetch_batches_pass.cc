// "radix-prefetch-next-batch": in the reduction loops of batched products
// (marked radix.batch_stream_loop by the schedule: decode attention's
// q·kᵀ and probabilities·V, one head per batch), each vector read of an
// operand whose per-batch slab is a few KiB to 64 KiB (a chunk of a head's
// cached keys or values) also prefetches, into L2, the same elements of the
// next batch (the next head).
//
// Why: a decode step reads each head's chunk of the KV cache once (64
// positions x 64 values: 16 KiB of f32, four pages), after the layer's
// weights have evicted it, so every head starts a new stream the hardware
// prefetchers have to find again, page by page. Fetching head h + 1 while
// head h computes keeps one head of reads in flight. A C microbenchmark of
// stories110M's layout ([12 heads, 1024 positions, 64] f32 per layer, 64
// positions, a 64 MiB read in between, Zen 5) read the keys at 8.5-9.7 GB/s
// and at 12.2-14.0 GB/s with this prefetch (bench/RESULTS.md).
//
// The prefetch goes on the buffer the batch loop slices (the first subview
// of the read's chain whose offset is the batch loop's index with a unit
// size, and whose source is defined outside that loop), with the index
// clamped to its last batch: every address stays inside the buffer. Runs
// after bufferization and removes the marks.
#include <optional>
#include <vector>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/prefetch_util.h"

namespace radix {

namespace {

// Slabs smaller than a page (a head's query row) stay in L1 between steps;
// larger than 64 KiB, the next batch's lines would be fetched long before
// their use and compete with the current batch in L2.
constexpr int64_t kMinSlabBytes = 4 * 1024;
constexpr int64_t kMaxSlabBytes = 64 * 1024;

// Where a read's batch index is: the subview `sliced` of the chain whose
// offset in `dim` is the batch loop's induction variable, and the offsets
// of every subview from the read's up to `sliced` (one list each), which
// added to the read's indices give its indices in `sliced`'s source.
struct BatchAccess {
  mlir::memref::SubViewOp sliced;
  int64_t dim = 0;
  std::vector<llvm::SmallVector<mlir::OpFoldResult>> offsets;
};

// The scf.for enclosing `op` whose induction variable `v` is, if any.
mlir::scf::ForOp loop_of(mlir::Value v, mlir::Operation* op) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
  if (!arg) return {};
  auto f = llvm::dyn_cast<mlir::scf::ForOp>(arg.getOwner()->getParentOp());
  if (!f || f.getInductionVar() != v || !f->isAncestor(op)) return {};
  return f;
}

// `reduction` is the marked loop: the batch loop encloses it (the reduction
// index slices the same buffers, one step at a time).
std::optional<BatchAccess> batch_access(mlir::vector::TransferReadOp read, mlir::scf::ForOp reduction) {
  mlir::Value m = read.getBase();
  std::vector<mlir::memref::SubViewOp> chain;
  while (auto sv = m.getDefiningOp<mlir::memref::SubViewOp>()) {
    if (!is_plain_slice(sv)) return std::nullopt;
    chain.push_back(sv);
    llvm::SmallVector<mlir::OpFoldResult> off = sv.getMixedOffsets(), size = sv.getMixedSizes();
    for (size_t d = 0; d < off.size(); ++d) {
      auto v = llvm::dyn_cast_if_present<mlir::Value>(off[d]);
      std::optional<int64_t> one = mlir::getConstantIntValue(size[d]);
      if (!v || !one || *one != 1) continue;
      mlir::scf::ForOp loop = loop_of(v, read);
      if (loop == reduction) continue;
      std::optional<int64_t> step = loop ? mlir::getConstantIntValue(loop.getStep()) : std::nullopt;
      if (!step || *step != 1) continue;
      // The sliced buffer must exist before the batch loop starts.
      if (loop->isAncestor(sv.getSource().getParentRegion()->getParentOp())) continue;
      BatchAccess a{sv, static_cast<int64_t>(d), {}};
      for (mlir::memref::SubViewOp c : chain) a.offsets.push_back(c.getMixedOffsets());
      return a;
    }
    m = sv.getSource();
  }
  return std::nullopt;
}

void prefetch_next_batches(mlir::scf::ForOp loop) {
  std::vector<mlir::vector::TransferReadOp> reads;
  for (mlir::Operation& op : *loop.getBody())
    if (auto r = llvm::dyn_cast<mlir::vector::TransferReadOp>(op)) reads.push_back(r);
  for (mlir::vector::TransferReadOp read : reads) {
    mlir::VectorType vt = read.getVectorType();
    if (vt.getRank() != 1 || vt.isScalable() || !read.getPermutationMap().isMinorIdentity()) continue;
    const int64_t elem_bytes = vt.getElementTypeBitWidth() / 8;
    if (elem_bytes == 0) continue;
    std::optional<BatchAccess> a = batch_access(read, loop);
    if (!a) continue;
    auto src = llvm::cast<mlir::MemRefType>(a->sliced.getSource().getType());
    const int64_t rank = src.getRank();
    if (!src.hasStaticShape() || src.getDimSize(a->dim) < 2 || a->dim == rank - 1) continue;
    if (!src.isLastDimUnitStride()) continue;
    int64_t slab = elem_bytes;
    for (int64_t d = 0; d < rank; ++d)
      if (d != a->dim) slab *= src.getDimSize(d);
    if (slab < kMinSlabBytes || slab > kMaxSlabBytes) continue;

    mlir::OpBuilder b(read);
    mlir::Location loc = read.getLoc();
    // The read's indices in the sliced buffer.
    llvm::SmallVector<mlir::Value> idx = add_slice_offsets(b, loc, a->offsets, llvm::to_vector(read.getIndices()));
    // The batch index is the loop's induction variable (+ constant offsets
    // below, none in the schedules' chains): the next batch, clamped.
    mlir::Value one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
    mlir::Value last = mlir::arith::ConstantIndexOp::create(b, loc, src.getDimSize(a->dim) - 1);
    idx[a->dim] = mlir::arith::MinUIOp::create(b, loc, mlir::arith::AddIOp::create(b, loc, idx[a->dim], one), last);
    prefetch_lines(b, loc, a->sliced.getSource(), idx, vt.getDimSize(0), elem_bytes, /*is_write=*/false, kLocalityL2);
  }
}

struct PrefetchNextBatchPass
    : public mlir::PassWrapper<PrefetchNextBatchPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrefetchNextBatchPass)

  llvm::StringRef getArgument() const override { return "radix-prefetch-next-batch"; }
  llvm::StringRef getDescription() const override {
    return "Prefetch the next batch's operand slab in the reduction loops of batched products";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    for (mlir::Operation* loop : take_marked_ops(getOperation(), kBatchStreamLoopMark))
      if (auto f = llvm::dyn_cast<mlir::scf::ForOp>(loop)) prefetch_next_batches(f);
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_prefetch_next_batch_pass() { return std::make_unique<PrefetchNextBatchPass>(); }

}  // namespace radix
