// "radix-gpu-map": the CUDA backend's mapping of a bufferized program onto
// kernels. It runs after convert-linalg-to-parallel-loops, on every host
// function (func.func):
//
// * every outermost scf.parallel becomes one gpu.launch over the product of
//   its loop extents, linearized: 256 threads per block, the last loop
//   dimension fastest (consecutive threads touch consecutive elements of a
//   row-major buffer, so loads coalesce); a reduction loop inside the body
//   runs sequentially in its thread. Any rank maps, not only the three
//   dimensions of the hardware grid.
// * other host-level work that touches buffers and yields no value (the
//   loops of a full reduction, a sort, a scan; a scalar store) becomes a
//   one-thread kernel, so it is ordered on the executable's stream with the
//   rest.
// * host-level ops that must read device memory on the host (a scalar load
//   that decides a loop bound, an scf.while condition, a custom call) get a
//   call to the runtime's radix_cuda_host_sync() first: buffers are CUDA
//   managed memory, which the host may read once the stream has drained.
//
// Host control flow (loops and conditionals around kernels, calls of the
// function cache's functions) stays on the host.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"
#include "radix/backends/cuda/cuda_passes.h"

namespace radix {

namespace {

constexpr int64_t kThreadsPerBlock = 256;
constexpr llvm::StringLiteral kHostSync = "radix_cuda_host_sync";

bool is_memref(mlir::Value v) { return llvm::isa<mlir::BaseMemRefType>(v.getType()); }

// True for a view of a memref.alloca: host stack memory (the address arrays
// the FFI lowering builds), which only the host may touch.
bool on_host_stack(mlir::Value v) {
  while (v) {
    mlir::Operation* def = v.getDefiningOp();
    if (!def) return false;
    if (llvm::isa<mlir::memref::AllocaOp>(def)) return true;
    auto view = llvm::dyn_cast<mlir::ViewLikeOpInterface>(def);
    if (!view) return false;
    v = view.getViewSource();
  }
  return false;
}

// True if `op` (or anything nested in it) reads or writes buffer contents.
// Allocation, deallocation and views (subview, reshape, cast) do not.
bool touches_memory(mlir::Operation* op) {
  bool found = false;
  op->walk([&](mlir::Operation* o) {
    if (llvm::isa<mlir::memref::AllocOp, mlir::memref::AllocaOp, mlir::memref::DeallocOp>(o)) return mlir::WalkResult::advance();
    if (auto eff = llvm::dyn_cast<mlir::MemoryEffectOpInterface>(o)) {
      llvm::SmallVector<mlir::MemoryEffects::EffectInstance> effects;
      eff.getEffects(effects);
      for (auto& e : effects) {
        if (!llvm::isa<mlir::MemoryEffects::Read, mlir::MemoryEffects::Write>(e.getEffect())) continue;
        if (!e.getValue() || (is_memref(e.getValue()) && !on_host_stack(e.getValue()))) {
          found = true;
          return mlir::WalkResult::interrupt();
        }
      }
      return mlir::WalkResult::advance();
    }
    if (o->hasTrait<mlir::OpTrait::HasRecursiveMemoryEffects>() || o->getNumRegions() > 0 ||
        mlir::isMemoryEffectFree(o))
      return mlir::WalkResult::advance();
    found = true;  // unknown effects: assume it reads memory
    return mlir::WalkResult::interrupt();
  });
  return found;
}

bool contains_host_work(mlir::Operation* op) {
  return op->walk([](mlir::Operation* o) {
             return llvm::isa<mlir::gpu::LaunchOp, mlir::func::CallOp, mlir::memref::AllocOp>(o)
                        ? mlir::WalkResult::interrupt()
                        : mlir::WalkResult::advance();
           }).wasInterrupted();
}

struct GpuMapPass : public mlir::PassWrapper<GpuMapPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuMapPass)

  llvm::StringRef getArgument() const override { return "radix-gpu-map"; }
  llvm::StringRef getDescription() const override {
    return "Map parallel loops to linearized gpu.launch kernels, host-level buffer work to one-thread kernels, "
           "and synchronize before host reads of device memory";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::gpu::GPUDialect, mlir::scf::SCFDialect, mlir::arith::ArithDialect>();
  }

  mlir::func::FuncOp sync_fn;

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    sync_fn = nullptr;  // of this module, declared on first use
    llvm::SmallVector<mlir::func::FuncOp> funcs;
    for (auto f : module.getOps<mlir::func::FuncOp>())
      if (!f.isDeclaration()) funcs.push_back(f);
    for (auto f : funcs) process_block(f.getBody().front());
    // A constant tensor is a global of the host object: a kernel that reads
    // it gets its own copy (gpu-kernel-outlining copies a global referenced
    // inside a launch into the kernel's module).
    module.walk([](mlir::gpu::LaunchOp launch) {
      llvm::SetVector<mlir::Value> used;
      mlir::getUsedValuesDefinedAbove(launch.getBody(), used);
      mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(&launch.getBody().front());
      for (mlir::Value v : used) {
        auto global = v.getDefiningOp<mlir::memref::GetGlobalOp>();
        if (!global) continue;
        mlir::Value inside = b.clone(*global)->getResult(0);
        v.replaceUsesWithIf(inside, [&](mlir::OpOperand& use) { return launch->isProperAncestor(use.getOwner()); });
      }
    });
  }

  void insert_sync(mlir::Operation* before) {
    // One sync covers every host read up to the next launch.
    for (mlir::Operation* prev = before->getPrevNode(); prev; prev = prev->getPrevNode()) {
      if (auto call = llvm::dyn_cast<mlir::func::CallOp>(prev); call && call.getCallee() == kHostSync) return;
      if (llvm::isa<mlir::gpu::LaunchOp, mlir::func::CallOp>(prev) || prev->getNumRegions() > 0) break;
    }
    mlir::OpBuilder b(before);
    if (!sync_fn) {
      mlir::ModuleOp module = getOperation();
      sync_fn = module.lookupSymbol<mlir::func::FuncOp>(kHostSync);
      if (!sync_fn) {
        mlir::OpBuilder mb(module.getBodyRegion());
        mb.setInsertionPointToStart(module.getBody());
        sync_fn = mlir::func::FuncOp::create(mb, module.getLoc(), kHostSync, mb.getFunctionType({}, {}));
        sync_fn.setPrivate();
      }
    }
    mlir::func::CallOp::create(b, before->getLoc(), sync_fn, mlir::ValueRange{});
  }

  void process_block(mlir::Block& block) {
    llvm::SmallVector<mlir::Operation*> ops;
    for (mlir::Operation& op : block) ops.push_back(&op);
    for (mlir::Operation* op : ops) process_op(op);
  }

  void process_op(mlir::Operation* op) {
    if (llvm::isa<mlir::gpu::LaunchOp>(op)) return;
    if (auto par = llvm::dyn_cast<mlir::scf::ParallelOp>(op); par && par.getNumResults() == 0 &&
                                                               !contains_host_work(par)) {
      to_launch(par);
      return;
    }
    if (auto call = llvm::dyn_cast<mlir::func::CallOp>(op)) {
      // A function-cache callee is a host function of its own; an external
      // function (the FFI, the runtime) may read the buffers on the host.
      auto callee = getOperation().lookupSymbol<mlir::func::FuncOp>(call.getCallee());
      if ((!callee || callee.isDeclaration()) && call.getCallee() != kHostSync) insert_sync(op);
      return;
    }
    if (contains_host_work(op)) {
      // Host control flow around kernels: map inside, then synchronize if
      // the op itself (its condition, its bounds) reads device memory.
      for (mlir::Region& r : op->getRegions())
        for (mlir::Block& b : r) process_block(b);
      if (auto w = llvm::dyn_cast<mlir::scf::WhileOp>(op)) {
        // The condition region runs on the host each iteration.
        for (mlir::Operation& o : w.getBefore().front())
          if (touches_memory(&o) && !llvm::isa<mlir::gpu::LaunchOp>(o)) {
            insert_sync(&o);
            break;
          }
      }
      return;
    }
    if (!touches_memory(op)) return;
    if (op->getNumResults() == 0 && !llvm::isa<mlir::func::ReturnOp>(op)) {
      to_serial_launch(op);
      return;
    }
    insert_sync(op);
  }

  // gpu.launch with a 1-D grid of `blocks` x `threads`, `b` positioned in its
  // body before the terminator.
  static mlir::gpu::LaunchOp make_launch(mlir::OpBuilder& b, mlir::Location loc, mlir::Value blocks,
                                         mlir::Value threads) {
    mlir::Value one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
    auto launch = mlir::gpu::LaunchOp::create(b, loc, blocks, one, one, threads, one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    b.setInsertionPoint(mlir::gpu::TerminatorOp::create(b, loc));
    return launch;
  }

  void to_launch(mlir::scf::ParallelOp par) {
    mlir::OpBuilder b(par);
    mlir::Location loc = par.getLoc();
    const size_t n = par.getNumLoops();
    llvm::SmallVector<mlir::Value> extents;
    mlir::Value total = mlir::arith::ConstantIndexOp::create(b, loc, 1);
    for (size_t i = 0; i < n; ++i) {
      mlir::Value lb = par.getLowerBound()[i], ub = par.getUpperBound()[i], st = par.getStep()[i];
      mlir::Value span = mlir::arith::SubIOp::create(b, loc, ub, lb);
      mlir::Value e = mlir::arith::CeilDivSIOp::create(b, loc, span, st);
      extents.push_back(e);
      total = mlir::arith::MulIOp::create(b, loc, total, e);
    }
    mlir::Value tpb = mlir::arith::ConstantIndexOp::create(b, loc, kThreadsPerBlock);
    mlir::Value blocks = mlir::arith::CeilDivSIOp::create(b, loc, total, tpb);
    // An empty iteration space still launches one (idle) block: a grid of
    // zero blocks is a launch error.
    blocks = mlir::arith::MaxSIOp::create(b, loc, blocks, mlir::arith::ConstantIndexOp::create(b, loc, 1));
    auto launch = make_launch(b, loc, blocks, tpb);
    mlir::Value lin = mlir::arith::AddIOp::create(
        b, loc, mlir::arith::MulIOp::create(b, loc, launch.getBlockIds().x, tpb), launch.getThreadIds().x);
    mlir::Value in_range = mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::slt, lin, total);
    auto guard = mlir::scf::IfOp::create(b, loc, in_range, /*withElseRegion=*/false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    mlir::IRMapping map;
    mlir::Value rest = lin;
    for (size_t k = n; k-- > 0;) {
      mlir::Value idx = mlir::arith::RemUIOp::create(b, loc, rest, extents[k]);
      if (k > 0) rest = mlir::arith::DivUIOp::create(b, loc, rest, extents[k]);
      mlir::Value iv = mlir::arith::AddIOp::create(
          b, loc, par.getLowerBound()[k], mlir::arith::MulIOp::create(b, loc, idx, par.getStep()[k]));
      map.map(par.getInductionVars()[k], iv);
    }
    for (mlir::Operation& inner : par.getBody()->without_terminator()) b.clone(inner, map);
    par.erase();
  }

  static void to_serial_launch(mlir::Operation* op) {
    mlir::OpBuilder b(op);
    mlir::Location loc = op->getLoc();
    mlir::Value one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
    auto launch = make_launch(b, loc, one, one);
    op->moveBefore(launch.getBody().front().getTerminator());
  }
};

// "radix-gpu-wrap-scalar-ops" (see cuda_passes.h).
struct WrapScalarOpsPass : public mlir::PassWrapper<WrapScalarOpsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(WrapScalarOpsPass)
  llvm::StringRef getArgument() const override { return "radix-gpu-wrap-scalar-ops"; }
  llvm::StringRef getDescription() const override {
    return "Put each linalg op without loops (a 0-d computation) into a one-thread gpu.launch";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::gpu::GPUDialect, mlir::arith::ArithDialect>();
  }
  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation*> ops;
    getOperation().walk([&](mlir::linalg::LinalgOp op) {
      if (op.getNumLoops() == 0 && !op->getParentOfType<mlir::gpu::LaunchOp>()) ops.push_back(op);
    });
    for (mlir::Operation* op : ops) GpuMapPass::to_serial_launch(op);
  }
};

// "radix-gpu-parallel-first" (see cuda_passes.h).
struct ParallelFirstPass : public mlir::PassWrapper<ParallelFirstPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ParallelFirstPass)
  llvm::StringRef getArgument() const override { return "radix-gpu-parallel-first"; }
  llvm::StringRef getDescription() const override {
    return "Interchange linalg.generic loops so that every parallel loop comes before the reductions";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::linalg::LinalgDialect>();
  }
  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::GenericOp> ops;
    getOperation().walk([&](mlir::linalg::GenericOp op) {
      if (!op->getParentOfType<mlir::gpu::LaunchOp>()) ops.push_back(op);
    });
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::linalg::GenericOp op : ops) {
      // Stable: the parallel loops in their order, then the reductions in theirs.
      llvm::SmallVector<unsigned> perm;
      auto kinds = op.getIteratorTypesArray();
      for (unsigned i = 0; i < kinds.size(); ++i)
        if (kinds[i] == mlir::utils::IteratorType::parallel) perm.push_back(i);
      for (unsigned i = 0; i < kinds.size(); ++i)
        if (kinds[i] != mlir::utils::IteratorType::parallel) perm.push_back(i);
      if (llvm::is_sorted(perm)) continue;  // already parallel-first
      rewriter.setInsertionPoint(op);
      (void)mlir::linalg::interchangeGenericOp(rewriter, op, perm);
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_parallel_first_pass() { return std::make_unique<ParallelFirstPass>(); }

std::unique_ptr<mlir::Pass> create_wrap_scalar_ops_pass() { return std::make_unique<WrapScalarOpsPass>(); }

std::unique_ptr<mlir::Pass> create_gpu_map_pass() { return std::make_unique<GpuMapPass>(); }

}  // namespace radix
