#include "radix/backends/cpu/prefetch_util.h"

#include <algorithm>
#include <optional>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace radix {

bool is_plain_slice(mlir::memref::SubViewOp sv) {
  if (sv.getSourceType().getRank() != sv.getType().getRank()) return false;
  for (mlir::OpFoldResult st : sv.getMixedStrides())
    if (std::optional<int64_t> c = mlir::getConstantIntValue(st); !c || *c != 1) return false;
  return true;
}

llvm::SmallVector<mlir::Value> add_slice_offsets(mlir::OpBuilder& b, mlir::Location loc,
                                                 const std::vector<llvm::SmallVector<mlir::OpFoldResult>>& offsets,
                                                 llvm::SmallVector<mlir::Value> indices) {
  for (const llvm::SmallVector<mlir::OpFoldResult>& off : offsets)
    for (size_t d = 0; d < indices.size(); ++d) {
      std::optional<int64_t> o = mlir::getConstantIntValue(off[d]);
      if (o && *o == 0) continue;
      indices[d] = mlir::arith::AddIOp::create(b, loc, indices[d], mlir::getValueOrCreateConstantIndexOp(b, loc, off[d]));
    }
  return indices;
}

void prefetch_lines(mlir::OpBuilder& b, mlir::Location loc, mlir::Value buffer, llvm::SmallVector<mlir::Value> idx,
                    int64_t elems, int64_t elem_bytes, bool is_write, uint32_t locality) {
  const int64_t lanes_per_line = std::max<int64_t>(1, kCacheLine / elem_bytes);
  const mlir::Value col = idx.back();
  for (int64_t j = 0; j < elems; j += lanes_per_line) {
    idx.back() = j == 0 ? col : mlir::arith::AddIOp::create(b, loc, col, mlir::arith::ConstantIndexOp::create(b, loc, j));
    mlir::memref::PrefetchOp::create(b, loc, buffer, idx, is_write, locality, /*isDataCache=*/true);
  }
}

bool computes_transcendentals(mlir::Operation* loop) {
  bool found = false;
  loop->walk([&](mlir::Operation* op) {
    found |= llvm::isa<mlir::math::ExpOp, mlir::math::Exp2Op, mlir::math::ExpM1Op, mlir::math::LogOp,
                       mlir::math::Log2Op, mlir::math::Log10Op, mlir::math::Log1pOp, mlir::math::TanhOp,
                       mlir::math::ErfOp, mlir::math::SinOp, mlir::math::CosOp, mlir::math::AtanOp,
                       mlir::math::Atan2Op, mlir::math::PowFOp>(op);
  });
  return found;
}

mlir::scf::ForOp acc_k_loop(mlir::scf::ForOp panels) {
  for (mlir::Operation& op : *panels.getBody())
    if (auto k_loop = llvm::dyn_cast<mlir::scf::ForOp>(op); k_loop && k_loop.getInitArgs().size() == 1) return k_loop;
  return {};
}

std::optional<AccTile> acc_tile(mlir::scf::ForOp panels) {
  mlir::scf::ForOp k_loop = acc_k_loop(panels);
  if (!k_loop) return std::nullopt;
  mlir::Value init = k_loop.getInitArgs()[0];
  if (auto first = init.getDefiningOp<mlir::scf::IfOp>(); first && first.elseBlock())
    init = first.elseYield()->getOperand(llvm::cast<mlir::OpResult>(init).getResultNumber());
  auto load = init.getDefiningOp<mlir::vector::TransferReadOp>();
  if (!load) return std::nullopt;
  return AccTile{k_loop, load};
}

}  // namespace radix
