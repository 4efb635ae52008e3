#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "radix/compiler/passes.h"

namespace radix {

namespace {

struct ResultsToDestinationsPass
    : public mlir::PassWrapper<ResultsToDestinationsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ResultsToDestinationsPass)

  llvm::StringRef getArgument() const override { return "radix-results-to-destinations"; }
  llvm::StringRef getDescription() const override {
    return "Turn @main's tensor results into destination memref arguments";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::bufferization::BufferizationDialect, mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
    if (!fn) {
      module.emitError("radix-results-to-destinations: no func.func @main");
      return signalPassFailure();
    }
    mlir::MLIRContext* ctx = &getContext();
    mlir::OpBuilder b(ctx);
    auto ret = llvm::cast<mlir::func::ReturnOp>(fn.front().getTerminator());
    const unsigned n_in = fn.getNumArguments();
    llvm::SmallVector<mlir::Value> results(ret.getOperands());

    for (unsigned i = 0; i < n_in; ++i) fn.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
    for (mlir::Value r : results) {
      auto tt = llvm::cast<mlir::RankedTensorType>(r.getType());
      auto mt = mlir::MemRefType::get(tt.getShape(), tt.getElementType());
      unsigned idx = fn.getNumArguments();
      if (mlir::failed(fn.insertArgument(idx, mt, b.getDictionaryAttr({}), fn.getLoc()))) return signalPassFailure();
      b.setInsertionPoint(ret);
      mlir::bufferization::MaterializeInDestinationOp::create(b, ret.getLoc(), mlir::Type(), r, fn.getArgument(idx),
                                                              /*restrict=*/true, /*writable=*/true);
    }
    b.setInsertionPoint(ret);
    mlir::func::ReturnOp::create(b, ret.getLoc());
    ret.erase();
    llvm::BitVector all(fn.getNumResults(), true);
    if (mlir::failed(fn.eraseResults(all))) return signalPassFailure();
    fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_results_to_destinations_pass() {
  return std::make_unique<ResultsToDestinationsPass>();
}

}  // namespace radix
