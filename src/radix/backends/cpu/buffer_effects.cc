#include "radix/backends/cpu/buffer_effects.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace radix {

namespace {

bool is_allocation(mlir::Value root) {
  return llvm::isa_and_nonnull<mlir::memref::AllocOp, mlir::memref::AllocaOp>(root.getDefiningOp());
}

bool is_function_argument(mlir::Value root) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(root);
  return arg && llvm::isa<mlir::FunctionOpInterface>(arg.getOwner()->getParentOp()) &&
         arg.getOwner()->isEntryBlock();
}

// Whether a function argument is a buffer of its own: the arguments of a
// public function (an executable's entry: its inputs, and its outputs' fresh
// buffers) other than those donated to an output (tf.aliasing_output).
// A private callee's arguments may be any of its caller's buffers.
bool distinct_argument(mlir::Value root) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(root);
  if (!arg || !is_function_argument(root)) return false;
  auto fn = llvm::cast<mlir::FunctionOpInterface>(arg.getOwner()->getParentOp());
  return fn.isPublic() && !fn.getArgAttr(arg.getArgNumber(), "tf.aliasing_output");
}

}  // namespace

mlir::Value root_of(mlir::Value v) {
  while (true) {
    mlir::Operation* def = v.getDefiningOp();
    auto view = llvm::dyn_cast_or_null<mlir::ViewLikeOpInterface>(def);
    if (!view) return v;
    v = view.getViewSource();
  }
}

bool may_alias(mlir::Value a, mlir::Value b) {
  if (!a || !b) return true;
  if (a == b) return true;
  if (is_allocation(a) && (is_allocation(b) || is_function_argument(b))) return false;
  if (is_allocation(b) && is_function_argument(a)) return false;
  if (distinct_argument(a) && distinct_argument(b)) return false;
  return true;
}

std::optional<std::vector<Access>> accesses(mlir::Operation* op, mlir::Operation* skip) {
  std::vector<Access> out;
  bool known = true;
  op->walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* inner) {
    if (!known) return mlir::WalkResult::interrupt();
    if (inner == skip) return mlir::WalkResult::skip();
    if (auto call = llvm::dyn_cast<mlir::LLVM::CallIntrinsicOp>(inner)) {
      for (mlir::Value v : call->getOperands())
        if (!llvm::isa<mlir::VectorType, mlir::IntegerType, mlir::FloatType>(v.getType())) known = false;
      return mlir::WalkResult::advance();
    }
    // A prefetch changes no memory and never faults.
    if (llvm::isa<mlir::memref::PrefetchOp>(inner)) return mlir::WalkResult::advance();
    // An op's own effects (a linalg.generic's on its operands), if it
    // declares them; those of its regions' ops are visited on their own.
    auto iface = llvm::dyn_cast<mlir::MemoryEffectOpInterface>(inner);
    if (!iface) {
      if (inner->hasTrait<mlir::OpTrait::HasRecursiveMemoryEffects>()) return mlir::WalkResult::advance();
      known = false;
      return mlir::WalkResult::interrupt();
    }
    llvm::SmallVector<mlir::MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const auto& e : effects) {
      // Allocating or freeing counts as writing the buffer.
      const bool write = !llvm::isa<mlir::MemoryEffects::Read>(e.getEffect());
      mlir::Value v = e.getValue();
      if (!v && llvm::isa<mlir::MemoryEffects::Allocate>(e.getEffect())) continue;  // a fresh buffer
      if (v && !llvm::isa<mlir::BaseMemRefType>(v.getType())) v = nullptr;
      out.push_back(Access{v ? root_of(v) : mlir::Value(), write, v});
    }
    return mlir::WalkResult::advance();
  });
  if (!known) return std::nullopt;
  return out;
}

bool conflict(const std::vector<Access>& a, const std::vector<Access>& b) {
  for (const Access& x : a)
    for (const Access& y : b)
      if ((x.write || y.write) && may_alias(x.root, y.root)) return true;
  return false;
}

}  // namespace radix
