// "radix-materialize-reduction-indices": a linalg.generic whose body reads
// `linalg.index d` of a *reduction* loop d gets that index as an extra input
// operand instead — an iota tensor of the loop's extent, read through the
// map (d0..dn) -> (d) — and the body reads the operand.
//
// Why: the CPU schedule splits innermost reductions with
// transform.structured.tile_reduction_using_for. In MLIR 22 that tiling does
// not add the chunk's offset to `linalg.index` of the split loop, so the
// vectorized body sees lane numbers 0..V-1 in every chunk (wrong rows from an
// iota-vs-ids one-hot contraction). A tensor operand is sliced correctly by
// every tiling, so the indices stay right whatever the schedule does with the
// op; the extra read is one small vector per chunk. Indices of parallel loops
// are left alone: plain tile_using_for offsets them correctly.
#include <vector>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

// Extents up to this many get their iota as a constant (read-only data of
// the executable): a generic computing it wrote it into a buffer allocated
// per call (a greedy sampler's argmax over 32000 logits: 128 KiB malloc'd,
// written and read back per token).
constexpr int64_t kConstantIotaMax = int64_t{1} << 18;

// An i32 (or i64 for extents past 2^31) iota tensor of `n` elements: a
// constant up to kConstantIotaMax, past it a one-loop generic that the
// schedule vectorizes like any elementwise op.
mlir::Value emit_iota(mlir::OpBuilder& b, mlir::Location loc, int64_t n) {
  mlir::Type et = n <= (int64_t{1} << 31) ? b.getI32Type() : b.getI64Type();
  if (n <= kConstantIotaMax) {
    std::vector<int32_t> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    auto type = mlir::RankedTensorType::get({n}, et);
    return mlir::arith::ConstantOp::create(b, loc, type,
                                           mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int32_t>(values)));
  }
  mlir::Value init = mlir::tensor::EmptyOp::create(b, loc, llvm::ArrayRef<int64_t>{n}, et);
  mlir::AffineMap id = b.getMultiDimIdentityMap(1);
  auto op = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{init.getType()}, mlir::ValueRange{}, mlir::ValueRange{init},
      llvm::ArrayRef<mlir::AffineMap>{id}, llvm::ArrayRef<mlir::utils::IteratorType>{mlir::utils::IteratorType::parallel},
      [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange) {
        mlir::Value i = mlir::linalg::IndexOp::create(nb, nl, 0);
        mlir::linalg::YieldOp::create(nb, nl, mlir::arith::IndexCastOp::create(nb, nl, et, i).getResult());
      });
  return op.getResult(0);
}

// Rewrites one generic if its body reads an index of a reduction loop.
void materialize(mlir::linalg::GenericOp g) {
  llvm::SmallVector<mlir::utils::IteratorType> iters = g.getIteratorTypesArray();
  llvm::SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  // Reduction loops whose index the body reads, in first-use order.
  llvm::SmallVector<unsigned> dims;
  g.getRegion().walk([&](mlir::linalg::IndexOp idx) {
    const unsigned d = static_cast<unsigned>(idx.getDim());
    if (iters[d] == mlir::utils::IteratorType::reduction && !llvm::is_contained(dims, d) &&
        !mlir::ShapedType::isDynamic(ranges[d]))
      dims.push_back(d);
  });
  if (dims.empty()) return;

  mlir::OpBuilder b(g);
  mlir::Location loc = g.getLoc();
  mlir::MLIRContext* ctx = g.getContext();
  const unsigned n_loops = g.getNumLoops();
  llvm::SmallVector<mlir::Value> inputs(g.getDpsInputs());
  llvm::SmallVector<mlir::AffineMap> maps;
  for (mlir::OpOperand* in : g.getDpsInputOperands()) maps.push_back(g.getMatchingIndexingMap(in));
  for (unsigned d : dims) {
    inputs.push_back(emit_iota(b, loc, ranges[d]));
    maps.push_back(mlir::AffineMap::get(n_loops, 0, {mlir::getAffineDimExpr(d, ctx)}, ctx));
  }
  for (mlir::OpOperand& out : g.getDpsInitsMutable()) maps.push_back(g.getMatchingIndexingMap(&out));

  auto ng = mlir::linalg::GenericOp::create(b, loc, g->getResultTypes(), inputs, g.getDpsInits(), maps, iters);
  ng->setDiscardableAttrs(g->getDiscardableAttrDictionary());
  ng.getRegion().takeBody(g.getRegion());
  mlir::Block* body = ng.getBody();
  // Block arguments are [inputs..., inits...]: the new inputs go before the inits.
  const unsigned first_new = static_cast<unsigned>(g.getNumDpsInputs());
  llvm::SmallVector<mlir::Value> index_of(n_loops);
  b.setInsertionPointToStart(body);
  for (size_t k = 0; k < dims.size(); ++k) {
    mlir::Value v = inputs[first_new + k];
    mlir::BlockArgument arg =
        body->insertArgument(first_new + static_cast<unsigned>(k), llvm::cast<mlir::ShapedType>(v.getType()).getElementType(), loc);
    index_of[dims[k]] = mlir::arith::IndexCastOp::create(b, loc, b.getIndexType(), arg);
  }
  llvm::SmallVector<mlir::linalg::IndexOp> reads;
  ng.getRegion().walk([&](mlir::linalg::IndexOp idx) { reads.push_back(idx); });
  for (mlir::linalg::IndexOp idx : reads) {
    mlir::Value v = index_of[idx.getDim()];
    if (!v) continue;
    idx.getResult().replaceAllUsesWith(v);
    idx.erase();
  }
  g->replaceAllUsesWith(ng->getResults());
  g.erase();
}

struct MaterializeReductionIndicesPass
    : public mlir::PassWrapper<MaterializeReductionIndicesPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MaterializeReductionIndicesPass)

  llvm::StringRef getArgument() const override { return "radix-materialize-reduction-indices"; }
  llvm::StringRef getDescription() const override {
    return "Feed linalg.index of reduction loops to linalg.generic as an iota operand";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::GenericOp> generics;
    getOperation().walk([&](mlir::linalg::GenericOp g) {
      if (g.hasPureTensorSemantics()) generics.push_back(g);
    });
    for (mlir::linalg::GenericOp g : generics) materialize(g);
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_materialize_reduction_indices_pass() {
  return std::make_unique<MaterializeReductionIndicesPass>();
}

}  // namespace radix
