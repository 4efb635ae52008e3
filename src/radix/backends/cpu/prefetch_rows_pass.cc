// "radix-prefetch-next-row": in the row loops of row-fused groups (softmax,
// RMSNorm, LayerNorm: marked radix.row_loop by the schedule), the column loop
// with the most work that runs after a row has been read once, when it
// evaluates a transcendental function (softmax's exp) or the rows are long
// and many (see kStreamedMinBytes), prefetches the same columns of the next
// row. A row only written by a later pass (softmax's
// output) is prefetched for writing, same row, in the compute-heavy loop
// before that pass.
//
// Why: a fused row is read from memory by its first pass (a max, a sum of
// squares) and then from L1 by the compute-heavy passes (exp, the scaling).
// The hardware prefetchers stop at page boundaries and idle during the
// compute, so the first pass of every row waits on memory. Prefetching the
// next row during the current row's compute overlaps the two: softmax over
// 4096 x 4096 f32 went from 18-19 to 12-13 ms on one core (Xeon, AVX-512;
// the generated code with and without its prefetch calls, same process).
//
// Runs after bufferization (it needs the loops over memrefs) and removes the
// marks. Prefetches are hints: the next row index is clamped to the last row,
// so every address stays inside the buffer.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/prefetch_util.h"

namespace radix {

namespace {

// Rows up to this size are prefetched into L1 (the current row, the next and
// the output row fit in a 48 KiB L1 with room to spare), larger ones into L2,
// and rows beyond the last limit not at all (they do not stay cached between
// the passes anyway).
constexpr int64_t kL1RowBytes = 16 * 1024;
constexpr int64_t kMaxRowBytes = 512 * 1024;

// Without a transcendental (RMSNorm, LayerNorm: the loop after the first
// pass is bound by its stores), only rows of at least kStreamedRowMinBytes
// of a buffer of at least kStreamedMinBytes are prefetched: rows read from
// memory (or the LLC) in pieces of a page or more. Then the first pass of
// each row no longer waits on memory either. Measured on Zen 5, one core,
// RMSNorm with / without, alternated in one process, GB/s read + written:
// 4096 x 4096 f32 1.36-1.55x (24-28 -> 32-44), two cores 1.46-1.51x;
// LayerNorm 4096 x 4096 1.35x (1.13x on two cores); 16384 x 768 1.6x (1.35x
// on two); 4096 x 768 (12 MiB) 1.13x, 1024 x 4096 (16 MiB) 1.2x, 16384 x
// 1024 1.25x, 65536 x 256 1.06x; at 8 MiB (512 x 4096) 1.0x / 0.97x on
// two cores. Below: data from the L2 or the LLC, where the prefetches only
// cost (64 x 4096 0.89-0.93x, 256 x 4096 0.97x, 1024 x 768 0.96x), and rows
// of 128 bytes (200000 x 32, 0.97x), which the hardware prefetchers stream.
constexpr int64_t kStreamedRowMinBytes = 1024;
constexpr int64_t kStreamedMinBytes = int64_t{8} << 20;

// A row of a buffer defined outside `loop`: subview %M[o..., iv, 0] [1..., 1, C]
// with unit strides, `iv` the row loop's induction variable.
bool is_row_of(mlir::memref::SubViewOp sv, mlir::Operation* loop, mlir::Value iv) {
  auto src = llvm::cast<mlir::MemRefType>(sv.getSource().getType());
  const int64_t rank = src.getRank();
  if (rank < 2 || !src.hasStaticShape() || !src.getLayout().isIdentity()) return false;
  if (loop->isAncestor(sv.getSource().getParentRegion()->getParentOp())) return false;
  if (sv.getSource().getDefiningOp<mlir::memref::AllocaOp>()) return false;
  llvm::SmallVector<mlir::OpFoldResult> off = sv.getMixedOffsets(), size = sv.getMixedSizes(),
                                        stride = sv.getMixedStrides();
  for (int64_t d = 0; d < rank; ++d) {
    std::optional<int64_t> st = mlir::getConstantIntValue(stride[d]);
    std::optional<int64_t> sz = mlir::getConstantIntValue(size[d]);
    if (!st || *st != 1 || !sz || *sz != (d == rank - 1 ? src.getDimSize(d) : 1)) return false;
  }
  std::optional<int64_t> last = mlir::getConstantIntValue(off[rank - 1]);
  return last && *last == 0 && llvm::dyn_cast_if_present<mlir::Value>(off[rank - 2]) == iv;
}

bool uses_value(mlir::Operation* op, mlir::Value v) {
  bool found = false;
  op->walk([&](mlir::Operation* inner) {
    for (mlir::Value o : inner->getOperands()) found |= o == v;
  });
  return found;
}

// Whether `m` is `v` or a subview of it (through any chain of subviews).
bool views(mlir::Value m, mlir::Value v) {
  while (m != v)
    if (auto sv = m.getDefiningOp<mlir::memref::SubViewOp>())
      m = sv.getSource();
    else
      return false;
  return true;
}

// Whether anything in `op` reads (a transfer_read or load) or writes (a
// transfer_write or store) `v` or a view of it.
bool reads(mlir::Operation* op, mlir::Value v) {
  bool found = false;
  op->walk([&](mlir::vector::TransferReadOp r) { found |= views(r.getBase(), v); });
  op->walk([&](mlir::memref::LoadOp l) { found |= views(l.getMemRef(), v); });
  return found;
}
bool writes(mlir::Operation* op, mlir::Value v) {
  bool found = false;
  op->walk([&](mlir::vector::TransferWriteOp w) { found |= views(w.getBase(), v); });
  op->walk([&](mlir::memref::StoreOp s) { found |= views(s.getMemRef(), v); });
  return found;
}

int64_t op_count(mlir::Operation* op) {
  int64_t n = 0;
  op->walk([&](mlir::Operation*) { ++n; });
  return n;
}

void prefetch_next_rows(mlir::Operation* loop) {
  mlir::Value iv;
  if (auto f = llvm::dyn_cast<mlir::scf::ForOp>(loop)) iv = f.getInductionVar();
  if (auto f = llvm::dyn_cast<mlir::scf::ForallOp>(loop)) iv = f.getInductionVars().back();
  if (!iv) return;
  mlir::Block* body = iv.getParentBlock();
  std::vector<mlir::scf::ForOp> columns;
  for (mlir::Operation& op : *body)
    if (auto f = llvm::dyn_cast<mlir::scf::ForOp>(op)) columns.push_back(f);
  for (mlir::Operation& op : *body) {
    auto row = llvm::dyn_cast<mlir::memref::SubViewOp>(op);
    if (!row || !is_row_of(row, loop, iv)) continue;
    auto src = llvm::cast<mlir::MemRefType>(row.getSource().getType());
    const int64_t rank = src.getRank();
    const int64_t elem_bytes = src.getElementTypeBitWidth() / 8;
    const int64_t row_bytes = src.getDimSize(rank - 1) * elem_bytes;
    if (elem_bytes == 0 || row_bytes > kMaxRowBytes) continue;
    size_t first = 0;
    while (first < columns.size() && !uses_value(columns[first], row.getResult())) ++first;
    if (first == columns.size()) continue;
    // A row only written, by a loop after the compute-heavy one (softmax's
    // output, written by its last pass): that loop claims the row's lines
    // for writing during the compute (prefetchw), instead of stalling on
    // them in the store-bound last pass.
    const bool written_later = writes(columns[first], row.getResult()) && !reads(columns[first], row.getResult());
    // The column loop doing the most work before that writing loop, or
    // (an input row) after the first one reading the row.
    const size_t begin = written_later ? 0 : first + 1, end = written_later ? first : columns.size();
    mlir::scf::ForOp target;
    int64_t target_ops = 0;
    for (size_t i = begin; i < end; ++i)
      if (const int64_t n = op_count(columns[i]); !target || n > target_ops) {
        target = columns[i];
        target_ops = n;
      }
    if (!target) continue;
    if (!computes_transcendentals(target) &&
        (row_bytes < kStreamedRowMinBytes || src.getNumElements() * elem_bytes < kStreamedMinBytes))
      continue;
    // The row's other offsets must be available where the prefetch goes.
    bool available = true;
    for (mlir::Value o : row.getOffsets())
      if (mlir::Operation* def = o.getDefiningOp(); def && def->getBlock() == body && !def->isBeforeInBlock(target))
        available = false;
    if (!available) continue;
    std::optional<int64_t> step = mlir::getConstantIntValue(target.getStep());
    if (!step || *step <= 0) continue;

    mlir::OpBuilder b(target);
    mlir::Location loc = target.getLoc();
    // The next row (clamped to the last), or this one for an output row.
    mlir::Value next = iv;
    if (!written_later) {
      mlir::Value one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
      mlir::Value last_row = mlir::arith::ConstantIndexOp::create(b, loc, src.getDimSize(rank - 2) - 1);
      next = mlir::arith::MinUIOp::create(b, loc, mlir::arith::AddIOp::create(b, loc, iv, one), last_row);
    }
    llvm::SmallVector<mlir::Value> base;
    for (mlir::OpFoldResult o : row.getMixedOffsets())
      base.push_back(mlir::getValueOrCreateConstantIndexOp(b, loc, o));
    base[rank - 2] = next;

    b.setInsertionPointToStart(target.getBody());
    const uint32_t locality = row_bytes <= kL1RowBytes ? 3 : kLocalityL2;
    base[rank - 1] = target.getInductionVar();
    prefetch_lines(b, loc, row.getSource(), base, *step, elem_bytes, /*is_write=*/written_later, locality);
  }
}

struct PrefetchNextRowPass : public mlir::PassWrapper<PrefetchNextRowPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrefetchNextRowPass)

  llvm::StringRef getArgument() const override { return "radix-prefetch-next-row"; }
  llvm::StringRef getDescription() const override {
    return "Prefetch the next row in the compute-heavy pass of row-fused loops";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    for (mlir::Operation* loop : take_marked_ops(getOperation(), kRowLoopMark)) prefetch_next_rows(loop);
  }
};

}  // namespace

std::vector<mlir::Operation*> marked_ops(mlir::Operation* root, const char* mark) {
  std::vector<mlir::Operation*> ops;
  root->walk([&](mlir::Operation* op) {
    if (op->hasAttr(mark)) ops.push_back(op);
  });
  return ops;
}

std::vector<mlir::Operation*> take_marked_ops(mlir::Operation* root, const char* mark) {
  std::vector<mlir::Operation*> ops = marked_ops(root, mark);
  for (mlir::Operation* op : ops) op->removeAttr(mark);
  return ops;
}

std::unique_ptr<mlir::Pass> create_prefetch_next_row_pass() { return std::make_unique<PrefetchNextRowPass>(); }

}  // namespace radix
