// "radix-scalar-vector-transfers": vector transfers of one element (0-D, or
// vector<1xT>) become memref.load / memref.store (+ a broadcast).
//
// Why: a row-wise op reads its row's scalar (a max, a sum) as a 0-D
// transfer_read broadcast across the row; from a strided buffer (a column of a
// larger one) MLIR 22's vector-to-LLVM conversion leaves such a read
// unconverted. A scalar load is what the read means anyway.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

// A 0-D transfer_read at index 0 of a one-element buffer (always in bounds,
// whatever its strides): a scalar load, broadcast to the 0-D vector.
struct ZeroDimReadOfOneElement : mlir::OpRewritePattern<mlir::vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::vector::TransferReadOp read,
                                      mlir::PatternRewriter& rewriter) const override {
    auto memref = llvm::dyn_cast<mlir::MemRefType>(read.getBase().getType());
    if (!memref || read.getVectorType().getRank() != 0 || read.getMask()) return mlir::failure();
    for (int64_t d : memref.getShape())
      if (d != 1) return mlir::failure();
    for (mlir::Value i : read.getIndices()) {
      auto c = i.getDefiningOp<mlir::arith::ConstantIndexOp>();
      if (!c || c.value() != 0) return mlir::failure();
    }
    mlir::Value x = mlir::memref::LoadOp::create(rewriter, read.getLoc(), read.getBase(), read.getIndices());
    rewriter.replaceOpWithNewOp<mlir::vector::BroadcastOp>(read, read.getVectorType(), x);
    return mlir::success();
  }
};

struct ScalarVectorTransfersPass
    : public mlir::PassWrapper<ScalarVectorTransfersPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ScalarVectorTransfersPass)

  llvm::StringRef getArgument() const override { return "radix-scalar-vector-transfers"; }
  llvm::StringRef getDescription() const override {
    return "Lower one-element vector transfers to memref.load / memref.store";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::memref::MemRefDialect, mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    mlir::vector::populateScalarVectorTransferLoweringPatterns(patterns, /*benefit=*/1, /*allowMultipleUses=*/true);
    patterns.add<ZeroDimReadOfOneElement>(&getContext());
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_scalar_vector_transfers_pass() {
  return std::make_unique<ScalarVectorTransfersPass>();
}

}  // namespace radix
