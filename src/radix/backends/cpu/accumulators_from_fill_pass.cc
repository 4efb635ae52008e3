// "radix-accumulators-from-fill": the packed matmul's register tiles (the
// panel loops the schedule marks radix.acc_tile_loop) start their first K
// block from the value C was filled with instead of reading it back.
//
// Why: the packed schedule splits K into blocks (so that a tile's rows of A
// and panel of B stay in cache), so each register tile loads its
// accumulators from C before its K loop and stores them after. In the first
// K block that load only brings back the zeros just written, from memory or
// a far cache: C's blocks are written long before their tiles run. Measured
// in a C++ copy of the schedule (one Zen 5 core, the two forms alternated in
// one process): 1024^3 1.03-1.06x, 4096^3 1.00-1.01x (C is read 2 times per
// tile at 1024^3, 8 times at 4096^3).
//
// The load becomes `scf.if (first K block) { fill value } else { load }`,
// where the first K block is the first iteration of every loop between the
// fill and the tile whose index the tile's address does not use (a loop
// that visits the same tile again); with no such loop, just the fill value.
// Only where the IR shows that this is what the load would have read:
//  - a linalg.fill writes a scalar into a view that the tile is a view of,
//    earlier in the block of the outermost loop around the tile;
//  - from the fill to that loop's end, nothing but the tile's own store
//    after its K loop writes to the buffer C views (ops of unknown effects:
//    no rewrite);
//  - the tile's address comes from loop indices through integer arithmetic
//    and views (no select, min or max that could send two iterations to one
//    tile), and every loop around it is scf.for or scf.forall.
// The fill stays: it is cheap (measured: dropping it as well made no
// difference) and other code may read C.
//
// Runs after bufferization, before radix-prefetch-next-tile, which takes the
// marks and finds the load in the scf.if's else branch.
#include <optional>
#include <utility>
#include <vector>

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/buffer_effects.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/prefetch_util.h"

namespace radix {

namespace {

// The loop induction variables `values` are computed from within `scope`
// (values defined outside it are the same on every iteration); false when
// the computation takes anything but integer arithmetic, affine maps and
// views, or a block argument that is not an induction variable.
bool induction_vars_of(llvm::ArrayRef<mlir::Value> values, mlir::Operation* scope,
                       llvm::SmallPtrSetImpl<mlir::Value>& ivs) {
  llvm::SmallVector<mlir::Value> work(values.begin(), values.end());
  llvm::SmallPtrSet<mlir::Value, 16> seen;
  while (!work.empty()) {
    mlir::Value v = work.pop_back_val();
    if (!seen.insert(v).second) continue;
    if (!scope->isAncestor(v.getParentRegion()->getParentOp())) continue;  // defined outside the loops: invariant
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
      mlir::Operation* owner = arg.getOwner()->getParentOp();
      if (auto f = llvm::dyn_cast<mlir::scf::ForOp>(owner); f && f.getInductionVar() == v) {
        ivs.insert(v);
        continue;
      }
      if (auto f = llvm::dyn_cast<mlir::scf::ForallOp>(owner);
          f && llvm::is_contained(f.getInductionVars(), v)) {
        ivs.insert(v);
        continue;
      }
      return false;
    }
    mlir::Operation* def = v.getDefiningOp();
    if (!llvm::isa<mlir::arith::ConstantOp, mlir::arith::AddIOp, mlir::arith::SubIOp, mlir::arith::MulIOp,
                   mlir::affine::AffineApplyOp, mlir::memref::SubViewOp, mlir::memref::ExpandShapeOp,
                   mlir::memref::CollapseShapeOp>(def))
      return false;
    for (mlir::Value operand : def->getOperands()) work.push_back(operand);
  }
  return true;
}

// Whether the elements `written` views are none of the tile's: some view
// on its way to the buffer is a subview of a view the tile's chain also
// slices (`tile_views`, from the tile to the buffer), both static and apart
// along some dim (another part of a split product: rows 0-191 and 192-263).
bool apart_from_tile(mlir::Value written, llvm::ArrayRef<mlir::Value> tile_views) {
  for (mlir::Value m = written; m;) {
    mlir::Operation* def = m.getDefiningOp();
    if (auto sv = llvm::dyn_cast_or_null<mlir::memref::SubViewOp>(def)) {
      const auto* at = llvm::find(tile_views, sv.getSource());
      if (at != tile_views.end() && at != tile_views.begin()) {
        auto tile_sv = (at - 1)->getDefiningOp<mlir::memref::SubViewOp>();
        if (!tile_sv) return false;
        // Along a dim, a subview spans [offset, offset + (size - 1) * stride]
        // (empty when its size is 0).
        auto span = [](mlir::memref::SubViewOp v, size_t d) -> std::optional<std::pair<int64_t, int64_t>> {
          const int64_t o = v.getStaticOffsets()[d], n = v.getStaticSizes()[d], st = v.getStaticStrides()[d];
          if (mlir::ShapedType::isDynamic(o) || mlir::ShapedType::isDynamic(n) || mlir::ShapedType::isDynamic(st) ||
              n < 1 || st < 1)
            return std::nullopt;
          return std::pair<int64_t, int64_t>{o, o + (n - 1) * st};
        };
        const size_t rank = sv.getStaticOffsets().size();
        if (tile_sv.getStaticOffsets().size() != rank) return false;
        for (size_t d = 0; d < rank; ++d) {
          auto a = span(sv, d), t = span(tile_sv, d);
          if (a && t && (a->second < t->first || t->second < a->first)) return true;
        }
        return false;
      }
      m = sv.getSource();
    } else if (llvm::isa_and_nonnull<mlir::memref::ExpandShapeOp, mlir::memref::CollapseShapeOp>(def)) {
      m = def->getOperand(0);
    } else {
      return false;
    }
  }
  return false;
}

void start_from_fill(mlir::scf::ForOp panels) {
  // The tile: read before its K loop, the loop's result stored back to the
  // same place after it.
  std::optional<AccTile> tile = acc_tile(panels);
  if (!tile) return;
  mlir::scf::ForOp k_loop = tile->k_loop;
  mlir::vector::TransferReadOp load = tile->load;
  if (load->getBlock() != panels.getBody() || !load->hasOneUse() || load.getMask()) return;
  mlir::vector::TransferWriteOp store;
  for (mlir::Operation* user : k_loop.getResult(0).getUsers())
    if (auto w = llvm::dyn_cast<mlir::vector::TransferWriteOp>(user);
        w && w.getBase() == load.getBase() && llvm::equal(w.getIndices(), load.getIndices()) && !w.getMask() &&
        w->getBlock() == panels.getBody())
      store = w;
  if (!store) return;

  // The fill: in the block of some loop around the tile, before it, with
  // the tile a view of its output.
  llvm::SmallVector<mlir::Value> views;
  for (mlir::Value m = load.getBase();;) {
    views.push_back(m);
    auto view = llvm::dyn_cast_or_null<mlir::ViewLikeOpInterface>(m.getDefiningOp());
    if (!view) break;
    m = view.getViewSource();
  }
  mlir::linalg::FillOp fill;
  mlir::Operation* nest = nullptr;
  for (mlir::Operation* loop = panels; loop && !fill; loop = loop->getParentOp()) {
    if (!llvm::isa<mlir::scf::ForOp, mlir::scf::ForallOp>(loop)) return;
    for (mlir::Operation* op = loop->getPrevNode(); op; op = op->getPrevNode())
      if (auto f = llvm::dyn_cast<mlir::linalg::FillOp>(op);
          f && f.hasPureBufferSemantics() && llvm::is_contained(views, f.getOutputs()[0])) {
        fill = f;
        nest = loop;
        break;
      }
  }
  if (!fill || fill.getInputs()[0].getType() != load.getVectorType().getElementType()) return;

  // Nothing but the tile's store writes the tile's part of C after the fill.
  const mlir::Value c_root = root_of(fill.getOutputs()[0]);
  for (mlir::Operation* op = fill->getNextNode(); op; op = op->getNextNode()) {
    std::optional<std::vector<Access>> acc = accesses(op, store);
    if (!acc) return;
    for (const Access& a : *acc)
      if (a.write && may_alias(a.root, c_root) && !(a.view && apart_from_tile(a.view, views))) return;
    if (op == nest) break;
  }

  // The loops that visit a tile again: those whose index its address does
  // not use.
  llvm::SmallVector<mlir::Value> address = {load.getBase()};
  llvm::append_range(address, load.getIndices());
  llvm::SmallPtrSet<mlir::Value, 8> ivs;
  if (!induction_vars_of(address, nest, ivs)) return;
  llvm::SmallVector<mlir::scf::ForOp> again;
  for (mlir::Operation* loop = panels;; loop = loop->getParentOp()) {
    if (auto f = llvm::dyn_cast<mlir::scf::ForOp>(loop)) {
      if (!ivs.contains(f.getInductionVar())) again.push_back(f);
    } else {
      for (mlir::Value iv : llvm::cast<mlir::scf::ForallOp>(loop).getInductionVars())
        if (!ivs.contains(iv)) return;  // a parallel loop whose iterations share a tile
    }
    if (loop == nest) break;
  }
  if (llvm::is_contained(again, panels)) return;

  mlir::OpBuilder b(load);
  const mlir::Location loc = load.getLoc();
  const mlir::VectorType vt = load.getVectorType();
  const mlir::Value value = fill.getInputs()[0];
  if (again.empty()) {
    load.replaceAllUsesWith(mlir::vector::BroadcastOp::create(b, loc, vt, value).getResult());
    load.erase();
    return;
  }
  mlir::Value first;
  for (mlir::scf::ForOp f : again) {
    mlir::Value at_lb = mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::eq, f.getInductionVar(),
                                                    f.getLowerBound());
    first = first ? mlir::arith::AndIOp::create(b, loc, first, at_lb).getResult() : at_lb;
  }
  auto branch = mlir::scf::IfOp::create(
      b, loc, first,
      [&](mlir::OpBuilder& tb, mlir::Location l) {
        mlir::scf::YieldOp::create(tb, l, mlir::ValueRange{mlir::vector::BroadcastOp::create(tb, l, vt, value)});
      },
      [&](mlir::OpBuilder& eb, mlir::Location l) {
        mlir::Operation* read = eb.clone(*load);
        mlir::scf::YieldOp::create(eb, l, read->getResults());
      });
  load.replaceAllUsesWith(branch.getResult(0));
  load.erase();
}

struct AccumulatorsFromFillPass
    : public mlir::PassWrapper<AccumulatorsFromFillPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AccumulatorsFromFillPass)

  llvm::StringRef getArgument() const override { return "radix-accumulators-from-fill"; }
  llvm::StringRef getDescription() const override {
    return "Start the packed matmul's register tiles from C's fill value in the first K block";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    // The marks stay for radix-prefetch-next-tile.
    for (mlir::Operation* loop : marked_ops(getOperation(), kAccTileLoopMark))
      if (auto f = llvm::dyn_cast<mlir::scf::ForOp>(loop)) start_from_fill(f);
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_accumulators_from_fill_pass() { return std::make_unique<AccumulatorsFromFillPass>(); }

}  // namespace radix
