// "radix-flat-fills": a linalg.fill of a contiguous buffer of rank 2 or more
// (static shape, row-major strides, any offset) fills its one-dimensional
// view (memref.collapse_shape) instead: one loop, which LLVM turns into one
// memset.
//
// Why: radix-fills-into-foralls has each thread fill its own block of a
// packed matmul's C, a [96, 8, 16] slice on AVX2, inside the parallel loop.
// As a three-deep loop nest LLVM made a 512-byte memset of each row and
// unrolled the 96 rows: 1,536 vector stores in one basic block, on which
// the instruction schedulers spend quadratic time. stories110M f32's
// prefill executable on two threads compiled in 10-11 s (seven such
// blocks, ~1.1 s of llc each) against 1.9 s on one thread; with this pass
// 2.3-2.4 s, its prefill as fast (Zen 3, 2026-12-06: 832 / 815 tok/s with /
// without, alternated). Fills of non-contiguous blocks (a thread's half of
// C's panels) keep a memset per row: up to 48 rows here, not a problem yet.
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/kernel_loops.h"

namespace radix {

namespace {

struct FlatFillsPass : public mlir::PassWrapper<FlatFillsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FlatFillsPass)

  llvm::StringRef getArgument() const override { return "radix-flat-fills"; }
  llvm::StringRef getDescription() const override {
    return "Fill contiguous multi-dimensional buffers through their one-dimensional view (one memset)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::linalg::LinalgDialect, mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::FillOp> fills;
    getOperation().walk([&](mlir::linalg::FillOp f) {
      if (!f.hasPureBufferSemantics()) return;
      auto t = llvm::dyn_cast<mlir::MemRefType>(f.getDpsInitOperand(0)->get().getType());
      if (t && t.getRank() >= 2 && mlir::memref::isStaticShapeAndContiguousRowMajor(t)) fills.push_back(f);
    });
    for (mlir::linalg::FillOp f : fills) {
      mlir::OpBuilder b(f);
      mlir::Value dst = f.getDpsInitOperand(0)->get();
      mlir::Value flat = flat_view(b, f.getLoc(), dst);
      mlir::linalg::FillOp::create(b, f.getLoc(), mlir::ValueRange{f.getInputs()[0]}, mlir::ValueRange{flat});
      f.erase();
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_flat_fills_pass() { return std::make_unique<FlatFillsPass>(); }

}  // namespace radix
