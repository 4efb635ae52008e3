// "radix-untie-shared-inits": gives every user of a tensor.empty or
// linalg.fill its own copy of that op.
//
// Why: CSE merges identical inits (two results that both start from a zero
// fill share one fill). eliminate-empty-tensors then builds that shared init
// directly in the first result's destination buffer, and the second chain
// writes into the same memory — two outputs end up equal. With one init per
// user, each chain's init is placed in its own destination. Fills and empties
// are cheap; duplicating them costs at most a memset per output.
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "radix/compiler/passes.h"

namespace radix {

namespace {

// Clones `op` (single result) for every use after the first.
void untie(mlir::Operation* op) {
  mlir::Value result = op->getResult(0);
  llvm::SmallVector<mlir::OpOperand*> uses;
  for (mlir::OpOperand& u : result.getUses()) uses.push_back(&u);
  if (uses.size() < 2) return;
  mlir::OpBuilder b(op);
  for (size_t i = 1; i < uses.size(); ++i) {
    b.setInsertionPoint(op);
    mlir::Operation* copy = b.clone(*op);
    uses[i]->set(copy->getResult(0));
  }
}

struct UntieSharedInitsPass
    : public mlir::PassWrapper<UntieSharedInitsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(UntieSharedInitsPass)

  llvm::StringRef getArgument() const override { return "radix-untie-shared-inits"; }
  llvm::StringRef getDescription() const override {
    return "Give each user of a tensor.empty / linalg.fill its own copy before bufferization";
  }

  void runOnOperation() override {
    // Fills first: their clones share the fill's tensor.empty, which the
    // second sweep then unties too.
    llvm::SmallVector<mlir::Operation*> fills, empties;
    getOperation().walk([&](mlir::Operation* op) {
      if (llvm::isa<mlir::linalg::FillOp>(op) && op->getNumResults() == 1) fills.push_back(op);
    });
    for (mlir::Operation* f : fills) untie(f);
    getOperation().walk([&](mlir::Operation* op) {
      if (llvm::isa<mlir::tensor::EmptyOp>(op)) empties.push_back(op);
    });
    for (mlir::Operation* e : empties) untie(e);
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_untie_shared_inits_pass() { return std::make_unique<UntieSharedInitsPass>(); }

}  // namespace radix
