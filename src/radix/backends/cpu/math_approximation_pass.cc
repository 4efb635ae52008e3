// "radix-math-approximation": replaces f32 transcendental math ops (exp, log,
// tanh, ...) — scalar or vector — with MLIR's polynomial approximations.
//
// Why: LLVM lowers a vector math.exp to one libm call per lane, so a
// vectorized sigmoid or tanh chain runs at scalar libm speed. The
// approximations are plain FMAs and bit tricks that stay vectorized. Their
// error is a few ulp (the op tests bound it); f64 keeps libm.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

struct MathApproximationPass
    : public mlir::PassWrapper<MathApproximationPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MathApproximationPass)

  llvm::StringRef getArgument() const override { return "radix-math-approximation"; }
  llvm::StringRef getDescription() const override {
    return "Replace f32 exp/log/tanh/... with vectorizable polynomial approximations";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::math::MathDialect, mlir::arith::ArithDialect, mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    // The predicate receives full op names ("math.exp").
    mlir::populateMathPolynomialApproximationPatterns(patterns, [](llvm::StringRef name) {
      return llvm::is_contained({mlir::math::ExpOp::getOperationName(), mlir::math::ExpM1Op::getOperationName(),
                                 mlir::math::LogOp::getOperationName(), mlir::math::Log1pOp::getOperationName(),
                                 mlir::math::Log2Op::getOperationName(), mlir::math::TanhOp::getOperationName(),
                                 mlir::math::ErfOp::getOperationName()},
                                name);
    });
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_math_approximation_pass() { return std::make_unique<MathApproximationPass>(); }

}  // namespace radix
