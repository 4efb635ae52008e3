// "radix-half-transposes-as-integers": a vector.transpose of 16-bit floats
// (bf16, f16) becomes a bitcast to i16, the same transpose, and a bitcast
// back.
//
// Why: a transpose only moves bits, but on hosts without native 16-bit float
// vectors (AVX2) LLVM legalizes bf16 / f16 vectors element by element: the
// p x 8 transposes of a bf16 weight matrix's packing copy (prompts with bf16
// weights) became ~850 scalar instructions per tile, and stories110M's bf16
// prefill took 7.7 s of code generation (post-RA scheduling of those
// blocks). As i16 they are ordinary integer shuffles.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

struct HalfTransposeAsInteger : mlir::OpRewritePattern<mlir::vector::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::vector::TransposeOp op, mlir::PatternRewriter& rewriter) const override {
    mlir::VectorType in = op.getSourceVectorType(), out = op.getResultVectorType();
    mlir::Type et = in.getElementType();
    if (!llvm::isa<mlir::BFloat16Type, mlir::Float16Type>(et)) return mlir::failure();
    mlir::Type i16 = rewriter.getI16Type();
    mlir::Location loc = op.getLoc();
    mlir::Value bits = mlir::arith::BitcastOp::create(rewriter, loc, in.clone(i16), op.getVector());
    mlir::Value moved = mlir::vector::TransposeOp::create(rewriter, loc, bits, op.getPermutation());
    rewriter.replaceOpWithNewOp<mlir::arith::BitcastOp>(op, out, moved);
    return mlir::success();
  }
};

struct HalfTransposesPass : public mlir::PassWrapper<HalfTransposesPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HalfTransposesPass)

  llvm::StringRef getArgument() const override { return "radix-half-transposes-as-integers"; }
  llvm::StringRef getDescription() const override {
    return "Transpose bf16 / f16 vectors as i16 (bitcasts around the transpose)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<HalfTransposeAsInteger>(&getContext());
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_half_transposes_pass() { return std::make_unique<HalfTransposesPass>(); }

}  // namespace radix
