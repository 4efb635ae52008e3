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

    // Donations (tf.aliasing_output = o on argument a): a's tensor becomes a
    // writable memref argument that result o is materialized into, so the
    // program updates the caller's buffer in place (no output allocation,
    // no copy; an insert_slice into it writes just the slice). Every other
    // argument is read-only, so bufferization never writes a caller's buffer.
    llvm::SmallVector<int> donated_into(results.size(), -1);
    for (unsigned i = 0; i < n_in; ++i) {
      auto alias = fn.getArgAttrOfType<mlir::IntegerAttr>(i, "tf.aliasing_output");
      if (!alias) {
        fn.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
        continue;
      }
      int64_t o = alias.getInt();
      if (o < 0 || o >= static_cast<int64_t>(results.size()) || donated_into[o] >= 0 ||
          results[o].getType() != fn.getArgument(i).getType()) {
        fn.emitError("radix-results-to-destinations: invalid tf.aliasing_output on argument ") << i;
        return signalPassFailure();
      }
      donated_into[o] = static_cast<int>(i);
      auto tt = llvm::cast<mlir::RankedTensorType>(fn.getArgument(i).getType());
      auto mt = mlir::MemRefType::get(tt.getShape(), tt.getElementType());
      mlir::BlockArgument arg = fn.getArgument(i);
      arg.setType(mt);
      b.setInsertionPointToStart(&fn.front());
      auto as_tensor = mlir::bufferization::ToTensorOp::create(b, fn.getLoc(), tt, arg, /*restrict=*/true,
                                                               /*writable=*/true);
      arg.replaceAllUsesExcept(as_tensor.getResult(), as_tensor);
    }
    if (results.size() != donated_into.size()) return signalPassFailure();
    // The function type follows the argument types changed above.
    llvm::SmallVector<mlir::Type> arg_types(fn.front().getArgumentTypes());
    fn.setType(mlir::FunctionType::get(ctx, arg_types, fn.getResultTypes()));

    for (size_t o = 0; o < results.size(); ++o) {
      mlir::Value r = results[o];
      b.setInsertionPoint(ret);
      if (donated_into[o] >= 0) {
        mlir::Value dest = fn.getArgument(static_cast<unsigned>(donated_into[o]));
        mlir::bufferization::MaterializeInDestinationOp::create(b, ret.getLoc(), mlir::Type(), r, dest,
                                                                /*restrict=*/false, /*writable=*/true);
        continue;
      }
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
