// Internal: what the CPU passes that call into Radix's runtime share
// (radix-collectives-to-mpi, radix-custom-calls). The runtime's entry points
// take plain i64 values — buffer addresses, sizes, codes — so the compiled
// code needs no memref descriptors to call them.
#pragma once

#include "llvm/ADT/SmallVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace radix::detail {

// Declares the runtime function `name`(i64 x n) -> () in `module` once.
inline mlir::func::FuncOp declare_runtime_function(mlir::OpBuilder& b, mlir::ModuleOp module, llvm::StringRef name,
                                                   unsigned n) {
  if (auto f = module.lookupSymbol<mlir::func::FuncOp>(name)) return f;
  mlir::OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(module.getBody());
  auto f = mlir::func::FuncOp::create(b, module.getLoc(), name,
                                      b.getFunctionType(llvm::SmallVector<mlir::Type>(n, b.getI64Type()), {}));
  f.setPrivate();
  return f;
}

// The address of a memref's first element, as an i64.
inline mlir::Value buffer_address(mlir::OpBuilder& b, mlir::Location loc, mlir::Value memref) {
  mlir::Value idx = mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  return mlir::arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
}

}  // namespace radix::detail
