// "radix-stack-small-buffers": small, statically shaped temporaries that live
// within one loop iteration become stack buffers (memref.alloca), hoisted to
// the nearest point where they run once per call or once per parallel
// iteration.
//
// Why: a row-fused softmax or RMSNorm allocates its row's max / sum (one
// element) and its row temporary (a row of floats) inside the row loop.
// As heap buffers that is three malloc/free pairs per row, and, worse, LLVM
// cannot tell the one-element buffer from the output being written (the
// 64-byte-aligned pointer is computed from malloc's result through integer
// arithmetic), so the row scalar is reloaded and its 1/sum or rsqrt is
// recomputed for every vector of the row. A stack scalar is promoted to a
// register and hoisted; the row temporary stays in L1 across rows.
//
// Runs after one-shot bufferization and before the deallocation pipeline
// (which leaves stack buffers alone), and again after the kernel passes
// (radix-int8-dot-kernels allocates a decode product's per-block x sums,
// 36 bytes for stories15M's 288-wide rows, and frees them after it: ~25
// malloc / free pairs of a stories15M decode token). A buffer is moved only
// when no use of it, or of a view of it, can carry it out of the iteration
// (a yield, a return, a call, an op returning a non-view memref; a dealloc
// only in its own block), so reusing one stack slot for every iteration of
// a sequential loop is safe. It is never hoisted out of an scf.forall /
// scf.parallel body (iterations run concurrently); the OpenMP lowering
// wraps such bodies in a stack scope of their own.
#include "llvm/ADT/SmallPtrSet.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

// One buffer at most this large (a row of 16K f32), and at most this much
// moved to the stack per placement point: OpenMP worker threads have a few
// MiB of stack, and a deep call chain of layer functions each keeps its own.
constexpr int64_t kMaxBufferBytes = 64 * 1024;
constexpr int64_t kMaxBytesPerScope = 256 * 1024;

// A stack buffer's footprint: its bytes in whole 64-byte lines.
int64_t slot_bytes(int64_t bytes) { return (bytes + 63) / 64 * 64; }

std::optional<int64_t> static_bytes(mlir::MemRefType t) {
  if (!t.hasStaticShape() || !t.getLayout().isIdentity()) return std::nullopt;
  mlir::Type e = t.getElementType();
  if (!e.isIntOrIndexOrFloat() || e.isIndex()) return std::nullopt;
  const int64_t bits = e.getIntOrFloatBitWidth();
  if (bits % 8 != 0) return std::nullopt;
  return t.getNumElements() * (bits / 8);
}

// True when every use of `v` (through views) stays inside the op using it:
// loads, stores, transfers, copies, linalg ops... but no terminator, call,
// or op producing a memref that is not a view of `v`. One-shot
// bufferization threads a tile loop's output buffer through its iter_args
// (an scf.for per tiled dim, each inner loop's result yielded by the one
// around it): followed through the loops, in and out. A yield is safe only
// from a loop that does not contain `alloc`: there the same buffer goes
// around; yielded from the loop it is allocated in, one stack slot would
// hold two iterations' values at once. `seen`: values already followed (a
// loop's iter arg reaches its own yield).
bool stays_local(mlir::Value v, mlir::Operation* alloc, llvm::SmallPtrSetImpl<mlir::Value>& seen) {
  if (!seen.insert(v).second) return true;
  // The buffer flows into loop `loop`'s iter arg and result i.
  auto through_loop = [&](mlir::scf::ForOp loop, unsigned i) {
    return stays_local(loop.getRegionIterArgs()[i], alloc, seen) && stays_local(loop.getResult(i), alloc, seen);
  };
  for (mlir::OpOperand& use : v.getUses()) {
    mlir::Operation* user = use.getOwner();
    if (auto y = llvm::dyn_cast<mlir::scf::YieldOp>(user)) {
      auto loop = llvm::dyn_cast<mlir::scf::ForOp>(y->getParentOp());
      if (loop && !loop->isAncestor(alloc) && through_loop(loop, use.getOperandNumber())) continue;
      return false;
    }
    if (auto loop = llvm::dyn_cast<mlir::scf::ForOp>(user)) {
      const unsigned first_init = loop.getNumControlOperands();
      if (use.getOperandNumber() < first_init || !through_loop(loop, use.getOperandNumber() - first_init)) return false;
      continue;
    }
    // A dealloc of the buffer itself in its own block ends its life there
    // (the kernel passes, which run after the deallocation pipeline, free
    // their scratch so); it goes with the move.
    if (llvm::isa<mlir::memref::DeallocOp>(user) && v == alloc->getResult(0) && user->getBlock() == alloc->getBlock())
      continue;
    if (user->hasTrait<mlir::OpTrait::IsTerminator>() || llvm::isa<mlir::CallOpInterface>(user) ||
        llvm::isa<mlir::memref::DeallocOp>(user))
      return false;
    if (auto view = llvm::dyn_cast<mlir::ViewLikeOpInterface>(user)) {
      if (view.getViewSource() == v) {
        for (mlir::Value r : user->getResults())
          if (!stays_local(r, alloc, seen)) return false;
        continue;
      }
    }
    for (mlir::Value r : user->getResults())
      if (llvm::isa<mlir::BaseMemRefType>(r.getType())) return false;
  }
  return true;
}
bool stays_local(mlir::memref::AllocOp a) {
  llvm::SmallPtrSet<mlir::Value, 16> seen;
  return stays_local(a.getResult(), a, seen);
}

// The block a buffer allocated at `op` moves to: up through sequential
// control flow, stopping at a function, a parallel loop's body, or any op
// not known to be sequential.
mlir::Block* placement(mlir::Operation* op) {
  mlir::Block* block = op->getBlock();
  while (true) {
    mlir::Operation* owner = block->getParentOp();
    if (!llvm::isa<mlir::scf::ForOp, mlir::scf::WhileOp, mlir::scf::IfOp, mlir::scf::ExecuteRegionOp,
                   mlir::scf::IndexSwitchOp>(owner))
      return block;
    block = owner->getBlock();
  }
}

struct StackSmallBuffersPass
    : public mlir::PassWrapper<StackSmallBuffersPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(StackSmallBuffersPass)

  llvm::StringRef getArgument() const override { return "radix-stack-small-buffers"; }
  llvm::StringRef getDescription() const override {
    return "Move small per-iteration heap temporaries to hoisted stack buffers";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    std::vector<mlir::memref::AllocOp> allocs;
    getOperation().walk([&](mlir::memref::AllocOp a) { allocs.push_back(a); });
    llvm::DenseMap<mlir::Block*, int64_t> used;
    for (mlir::memref::AllocOp a : allocs) {
      std::optional<int64_t> bytes = static_bytes(a.getType());
      if (!bytes || *bytes > kMaxBufferBytes || !a.getDynamicSizes().empty() || !a.getSymbolOperands().empty())
        continue;
      if (!stays_local(a)) continue;
      mlir::Block* to = placement(a);
      // Only blocks that run their ops once per call or per parallel
      // iteration: a function's body or a parallel loop's body.
      mlir::Operation* scope = to->getParentOp();
      if (!llvm::isa<mlir::func::FuncOp, mlir::scf::ForallOp, mlir::scf::ParallelOp>(scope)) continue;
      const int64_t aligned = slot_bytes(*bytes);
      if (!used.count(to)) {  // stack buffers already there (an earlier run) count too
        int64_t there = 0;
        for (mlir::Operation& op : *to)
          if (auto al = llvm::dyn_cast<mlir::memref::AllocaOp>(op))
            there += slot_bytes(static_bytes(al.getType()).value_or(kMaxBufferBytes));
        used[to] = there;
      }
      if (used[to] + aligned > kMaxBytesPerScope) continue;
      used[to] += aligned;
      mlir::OpBuilder b(to, to->begin());
      auto stack = mlir::memref::AllocaOp::create(b, a.getLoc(), a.getType(), a.getAlignmentAttr());
      for (mlir::Operation* user : llvm::to_vector(a->getUsers()))
        if (llvm::isa<mlir::memref::DeallocOp>(user)) user->erase();
      a.getResult().replaceAllUsesWith(stack.getResult());
      a.erase();
    }
  }
};

// "radix-lower-alloca-scopes": memref.alloca_scope (the OpenMP lowering
// wraps each parallel loop body in one) becomes stack save / restore around
// its inlined body. Needed before convert-scf-to-cf: a scope whose body then
// has several blocks no longer verifies, and the scope must stay when the
// body holds stack buffers (each parallel iteration releases its own).
struct LowerAllocaScopesPass
    : public mlir::PassWrapper<LowerAllocaScopesPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerAllocaScopesPass)

  llvm::StringRef getArgument() const override { return "radix-lower-alloca-scopes"; }
  llvm::StringRef getDescription() const override {
    return "Lower memref.alloca_scope to llvm.intr.stacksave / stackrestore around its body";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::LLVM::LLVMDialect>();
  }

  void runOnOperation() override {
    std::vector<mlir::memref::AllocaScopeOp> scopes;
    getOperation().walk([&](mlir::memref::AllocaScopeOp s) { scopes.push_back(s); });
    auto ptr = mlir::LLVM::LLVMPointerType::get(&getContext());
    // Innermost first (post-order walk): each body is spliced into its parent.
    for (mlir::memref::AllocaScopeOp scope : scopes) {
      mlir::Block& body = scope.getBodyRegion().front();
      auto ret = llvm::cast<mlir::memref::AllocaScopeReturnOp>(body.getTerminator());
      mlir::OpBuilder b(scope);
      mlir::Value saved = mlir::LLVM::StackSaveOp::create(b, scope.getLoc(), ptr);
      b.setInsertionPoint(ret);
      mlir::LLVM::StackRestoreOp::create(b, scope.getLoc(), saved);
      llvm::SmallVector<mlir::Value> results(ret.getResults());
      ret.erase();
      scope->getBlock()->getOperations().splice(scope->getIterator(), body.getOperations());
      scope->replaceAllUsesWith(results);
      scope.erase();
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_lower_alloca_scopes_pass() { return std::make_unique<LowerAllocaScopesPass>(); }

std::unique_ptr<mlir::Pass> create_stack_small_buffers_pass() { return std::make_unique<StackSmallBuffersPass>(); }

}  // namespace radix
