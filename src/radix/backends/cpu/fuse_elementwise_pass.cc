// "radix-fuse-elementwise": upstream linalg elementwise fusion (and the
// reshape propagation that makes it possible), restricted to linalg.generic
// producers and consumers.
//
// Why: upstream's linalg-fuse-elementwise-ops also folds a tensor reshape
// into a named contraction by expanding it — a linalg.matmul fed by the
// collapse of [1, s, d] to [s, d] becomes a 4-loop linalg.generic — and the
// schedule, which tiles named matmuls with register tiles and packing, then
// sees only a generic reduction. Every projection of a Llama layer took that
// path. Here named ops (matmul, batch_matmul, convolutions, fills) are never
// rewritten; generics fuse with each other as upstream does, except into or
// out of a quantized contraction.
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/trace/quantized_dot_marks.h"

namespace radix {

namespace {

bool is_generic(mlir::Operation* op) { return op && llvm::isa<mlir::linalg::GenericOp>(op); }

// Both sides of the fused edge are generics (or a reshape next to a
// generic); the producer has no other user (no recomputation).
bool generic_edge(mlir::OpOperand* fused) {
  mlir::Operation* producer = fused->get().getDefiningOp();
  mlir::Operation* consumer = fused->getOwner();
  if (!producer || !producer->hasOneUse()) return false;
  // Quantized contractions (trace/ops_quant.cc) keep the loops the schedule
  // tiles: a fused producer would be recomputed per weight row.
  if (producer->hasAttr(quantized_dot::kAttr) || consumer->hasAttr(quantized_dot::kAttr)) return false;
  const bool producer_ok = is_generic(producer) || llvm::isa<mlir::tensor::ExpandShapeOp, mlir::tensor::CollapseShapeOp>(producer);
  const bool consumer_ok = is_generic(consumer) || llvm::isa<mlir::tensor::ExpandShapeOp, mlir::tensor::CollapseShapeOp>(consumer);
  return producer_ok && consumer_ok && (is_generic(producer) || is_generic(consumer));
}

struct FuseElementwisePass
    : public mlir::PassWrapper<FuseElementwisePass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)

  llvm::StringRef getArgument() const override { return "radix-fuse-elementwise"; }
  llvm::StringRef getDescription() const override {
    return "Fuse elementwise linalg.generic ops (never rewriting named contractions)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect, mlir::affine::AffineDialect>();
  }

  void runOnOperation() override {
    mlir::MLIRContext* ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    mlir::linalg::populateElementwiseOpsFusionPatterns(patterns, generic_edge);
    mlir::linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, generic_edge);
    mlir::linalg::populateConstantFoldLinalgOperations(patterns, generic_edge);
    mlir::affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    mlir::linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    mlir::tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    mlir::tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<mlir::linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_fuse_elementwise_pass() { return std::make_unique<FuseElementwisePass>(); }

}  // namespace radix
