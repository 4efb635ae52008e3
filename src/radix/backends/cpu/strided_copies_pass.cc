// "radix-strided-copies-to-loops": a memref.copy between buffers that are not
// both contiguous (a column slice, a strided pad or concat piece) becomes a
// linalg.copy, which the lower stage turns into loops that LLVM vectorizes.
//
// Why: finalize-memref-to-llvm lowers contiguous copies to memcpy but the
// others to a call to `memrefCopy` from MLIR's C runner library, which the
// JIT does not link (and which copies one element at a time through a
// generic descriptor walk). With every-copy, contiguous copies too (CUDA).
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

bool contiguous(mlir::Value v) {
  auto t = llvm::dyn_cast<mlir::MemRefType>(v.getType());
  return t && mlir::memref::isStaticShapeAndContiguousRowMajor(t);
}

struct StridedCopiesToLoopsPass
    : public mlir::PassWrapper<StridedCopiesToLoopsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(StridedCopiesToLoopsPass)

  StridedCopiesToLoopsPass() = default;
  StridedCopiesToLoopsPass(const StridedCopiesToLoopsPass& o) : PassWrapper(o) {}
  // Contiguous copies too: the CUDA backend, whose host code may not touch
  // device buffers (a copy must become a kernel like any other linalg op).
  Option<bool> every_copy{*this, "every-copy", llvm::cl::desc("convert contiguous copies too"), llvm::cl::init(false)};

  llvm::StringRef getArgument() const override { return "radix-strided-copies-to-loops"; }
  llvm::StringRef getDescription() const override {
    return "Turn memref.copy of non-contiguous buffers into linalg.copy (loops, no runtime library call)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::linalg::LinalgDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::memref::CopyOp> copies;
    getOperation().walk([&](mlir::memref::CopyOp c) {
      if (every_copy || !contiguous(c.getSource()) || !contiguous(c.getTarget())) copies.push_back(c);
    });
    for (mlir::memref::CopyOp c : copies) {
      mlir::OpBuilder b(c);
      mlir::linalg::CopyOp::create(b, c.getLoc(), c.getSource(), c.getTarget());
      c.erase();
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_strided_copies_to_loops_pass() { return std::make_unique<StridedCopiesToLoopsPass>(); }

}  // namespace radix
