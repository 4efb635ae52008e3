// "radix-strided-copies-to-loops": a memref.copy between buffers that are not
// both contiguous (a column slice, a strided pad or concat piece) becomes
// loops: static ones whose rows are unit-stride on both sides copy each row
// in 64-byte vectors, the last partial one masked (vector.maskedload /
// maskedstore); others become a linalg.copy, which the lower stage turns
// into loops.
//
// Why: finalize-memref-to-llvm lowers contiguous copies to memcpy but the
// others to a call to `memrefCopy` from MLIR's C runner library, which the
// JIT does not link (and which copies one element at a time through a
// generic descriptor walk). Rows as vectors: LLVM did not vectorize a
// linalg.copy's rows of 13 (the 13 columns past whole tiles of attention
// scores over 301 tokens, copied out of their padded product: 12 x 296
// rows, one scalar load and store per element, ~2% of that product's time
// on one thread, all of it serial). With every-copy, contiguous copies too,
// always as linalg.copy (CUDA: a copy must become a kernel like any other
// linalg op).
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

bool contiguous(mlir::Value v) {
  auto t = llvm::dyn_cast<mlir::MemRefType>(v.getType());
  return t && mlir::memref::isStaticShapeAndContiguousRowMajor(t);
}

constexpr int64_t kVectorBytes = 64;
// Rows of more vectors than this loop over them instead of unrolling.
constexpr int64_t kMaxUnrolledVectors = 8;

// The vector width (elements) for copying `t`'s rows: static, rank >= 1,
// integer or float elements of whole bytes, unit stride along the rows.
std::optional<int64_t> row_lanes(mlir::MemRefType t) {
  if (!t.hasStaticShape() || t.getRank() < 1 || !t.getElementType().isIntOrFloat()) return std::nullopt;
  const unsigned bits = t.getElementType().getIntOrFloatBitWidth();
  if (bits % 8 != 0 || (kVectorBytes * 8) % bits != 0) return std::nullopt;
  llvm::SmallVector<int64_t> strides;
  int64_t offset = 0;
  if (mlir::failed(t.getStridesAndOffset(strides, offset)) || strides.back() != 1) return std::nullopt;
  return kVectorBytes * 8 / bits;
}

// `src` copied into `dst` (the same static shape) row by row in vectors of
// `lanes`, the rest of a row in one masked vector.
void copy_rows(mlir::OpBuilder& b, mlir::Location loc, mlir::Value src, mlir::Value dst, int64_t lanes) {
  auto t = llvm::cast<mlir::MemRefType>(src.getType());
  const int64_t rank = t.getRank(), n = t.getShape().back();
  auto cst = [&](mlir::OpBuilder& ob, int64_t v) { return mlir::arith::ConstantIndexOp::create(ob, loc, v).getResult(); };
  const auto vt = mlir::VectorType::get({lanes}, t.getElementType());
  llvm::SmallVector<mlir::Value> lbs, ubs, steps;
  for (int64_t d = 0; d + 1 < rank; ++d) {
    lbs.push_back(cst(b, 0));
    ubs.push_back(cst(b, t.getDimSize(d)));
    steps.push_back(cst(b, 1));
  }
  mlir::scf::buildLoopNest(b, loc, lbs, ubs, steps, [&](mlir::OpBuilder& rb, mlir::Location l, mlir::ValueRange ivs) {
    auto copy_vector = [&](mlir::OpBuilder& vb, mlir::Value col) {
      llvm::SmallVector<mlir::Value> idx(ivs.begin(), ivs.end());
      idx.push_back(col);
      mlir::Value v = mlir::vector::LoadOp::create(vb, l, vt, src, idx);
      mlir::vector::StoreOp::create(vb, l, v, dst, idx);
    };
    const int64_t whole = n / lanes;
    if (whole > kMaxUnrolledVectors) {
      mlir::scf::ForOp::create(rb, l, cst(rb, 0), cst(rb, whole * lanes), cst(rb, lanes), mlir::ValueRange{},
                               [&](mlir::OpBuilder& fb, mlir::Location, mlir::Value col, mlir::ValueRange) {
                                 copy_vector(fb, col);
                                 mlir::scf::YieldOp::create(fb, l);
                               });
    } else {
      for (int64_t j = 0; j < whole; ++j) copy_vector(rb, cst(rb, j * lanes));
    }
    if (const int64_t rest = n % lanes; rest > 0) {
      llvm::SmallVector<mlir::Value> idx(ivs.begin(), ivs.end());
      idx.push_back(cst(rb, whole * lanes));
      mlir::Value mask = mlir::vector::ConstantMaskOp::create(
          rb, l, mlir::VectorType::get({lanes}, rb.getI1Type()), llvm::ArrayRef<int64_t>{rest});
      mlir::Value zeros = mlir::arith::ConstantOp::create(rb, l, vt, rb.getZeroAttr(vt));
      mlir::Value v = mlir::vector::MaskedLoadOp::create(rb, l, vt, src, idx, mask, zeros);
      mlir::vector::MaskedStoreOp::create(rb, l, dst, idx, mask, v);
    }
  });
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
    return "Turn memref.copy of non-contiguous buffers into loops (rows as vectors, else linalg.copy; no runtime library call)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::linalg::LinalgDialect, mlir::scf::SCFDialect,
                    mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::memref::CopyOp> copies;
    getOperation().walk([&](mlir::memref::CopyOp c) {
      if (every_copy || !contiguous(c.getSource()) || !contiguous(c.getTarget())) copies.push_back(c);
    });
    for (mlir::memref::CopyOp c : copies) {
      mlir::OpBuilder b(c);
      auto st = llvm::dyn_cast<mlir::MemRefType>(c.getSource().getType());
      auto dt = llvm::dyn_cast<mlir::MemRefType>(c.getTarget().getType());
      std::optional<int64_t> lanes = st && dt ? row_lanes(st) : std::nullopt;
      if (!every_copy && lanes && row_lanes(dt) == lanes && st.getShape() == dt.getShape() &&
          st.getElementType() == dt.getElementType())
        copy_rows(b, c.getLoc(), c.getSource(), c.getTarget(), *lanes);
      else
        mlir::linalg::CopyOp::create(b, c.getLoc(), c.getSource(), c.getTarget());
      c.erase();
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_strided_copies_to_loops_pass() { return std::make_unique<StridedCopiesToLoopsPass>(); }

}  // namespace radix
