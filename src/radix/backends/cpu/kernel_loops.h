// Loop scaffolding shared by the CPU backend's hand-built kernels
// (radix-int8-dot-kernels, radix-bf16-dot-kernels, f32_rows_kernel.cc): the
// tile loop over threads, the per-thread stack scope of a tile's buffers,
// and small constants, indices and views they all build.
#pragma once

#include <cstdint>

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace radix {

// A vector constant with every lane `v`, at b's insertion point.
inline mlir::Value splat_constant(mlir::OpBuilder& b, mlir::Location loc, mlir::VectorType t, mlir::TypedAttr v) {
  return mlir::arith::ConstantOp::create(b, loc, mlir::DenseElementsAttr::get(t, v));
}

// `v`, a static contiguous row-major memref, as one dimension (a
// memref.collapse_shape of all its dims, at b's insertion point); a null
// Value when it is not contiguous.
inline mlir::Value flat_view(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v) {
  auto t = llvm::cast<mlir::MemRefType>(v.getType());
  if (!mlir::memref::isStaticShapeAndContiguousRowMajor(t)) return {};
  llvm::SmallVector<mlir::ReassociationIndices, 1> all(1);
  for (int64_t d = 0; d < t.getRank(); ++d) all[0].push_back(d);
  return mlir::memref::CollapseShapeOp::create(b, loc, v, all).getResult();
}

// Indices into an operand of x: row m first where the op has an m loop
// (a single row's is folded away), then `rest`.
inline llvm::SmallVector<mlir::Value> row_indices(bool has_m, mlir::Value m, llvm::ArrayRef<mlir::Value> rest) {
  llvm::SmallVector<mlir::Value> out;
  if (has_m) out.push_back(m);
  out.append(rest.begin(), rest.end());
  return out;
}

// body(builder, tile) for tile in [0, tiles): an scf.forall when `parallel`
// (the "lower" stage makes it an OpenMP loop), else an scf.for, built at b's
// insertion point.
inline void emit_tile_loop(mlir::OpBuilder& b, mlir::Location loc, int64_t tiles, bool parallel,
                           llvm::function_ref<void(mlir::OpBuilder&, mlir::Value)> body) {
  if (parallel) {
    mlir::scf::ForallOp::create(b, loc, llvm::ArrayRef<mlir::OpFoldResult>{b.getIndexAttr(tiles)}, mlir::ValueRange{},
                                std::nullopt, [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange iv) {
                                  body(nb, iv[0]);
                                  mlir::scf::InParallelOp::create(nb, l);
                                });
    return;
  }
  mlir::Value zero = mlir::arith::ConstantIndexOp::create(b, loc, 0);
  mlir::Value count = mlir::arith::ConstantIndexOp::create(b, loc, tiles);
  mlir::Value one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = mlir::scf::ForOp::create(b, loc, zero, count, one);
  mlir::OpBuilder inner(loop.getBody(), loop.getBody()->begin());
  body(inner, loop.getInductionVar());
}

// Opens a memref.alloca_scope at b's insertion point and moves b to the
// start of its body. Why: in a parallel tile loop's body, canonicalize
// hoists the scope's allocations to the OpenMP region's start, once per
// thread (in an scf.for body it inlines the scope instead, so sequential
// loops allocate their buffers before the loop).
inline void enter_alloca_scope(mlir::OpBuilder& b, mlir::Location loc) {
  auto scope = mlir::memref::AllocaScopeOp::create(b, loc, mlir::TypeRange{});
  mlir::Block* blk = new mlir::Block();
  scope.getBodyRegion().push_back(blk);
  b.setInsertionPointToStart(blk);
  mlir::memref::AllocaScopeReturnOp::create(b, loc, mlir::ValueRange{});
  b.setInsertionPointToStart(blk);
}

}  // namespace radix
