// "radix-merge-foralls": neighbouring parallel tile loops (scf.forall over
// buffers, as the schedule and the kernel passes emit them) that touch no
// buffer the other writes become one loop over both loops' tiles, so that
// they cost one OpenMP fork / join instead of two.
//
// Why: a Llama layer's decode step runs q, k and v (and w1, w3) as separate
// mat-vecs of the same x, each its own parallel region. perf of stories15M
// bf16 decode on two threads: 43 fork / join pairs per token, about 2.3 µs
// each, some 21% of the token's time (bench/RESULTS.md, 2026-12-04).
//
// What moves: the ops between two loops A and B (B's output buffer, its
// fill, B's rounding of x into its own stack buffer) go before A when
// neither side writes a buffer the other reads or writes; then A and B
// become one scf.forall with an iteration per thread, each running its
// static share of A's tiles and then of B's (see merge): what each thread
// ran of the two loops apart, without the join and fork between. A
// memref.alloca_scope with small stack buffers at a function's top level
// (the bf16 kernels wrap each product so) is inlined first, so that its
// loop stands next to its neighbours.
//
// A buffer A frees right after its loop (a kernel's temporary) is freed
// after the merged loop instead.
//
// Conservative by construction: buffers are told apart by their roots
// (through view-like ops) — two distinct allocations never alias, an
// allocation never aliases a function argument, nor do two arguments of an
// executable's entry (its inputs and its outputs' own buffers; one donated
// to an output may alias anything), while a callee's arguments may; any op
// whose effects are unknown, or a loop body that allocates or fences
// streaming stores, stops the merge. Measured on Zen 5 (two threads, about
// half speed, a noisy hour, alternated in one session), stories15M bf16
// decode: 1031-1520 -> 1318-1750 tok/s with tiles [0, nA + nB) split in
// runs (which can hand one thread all of a costly loop), 1132-1499 ->
// 1263-1529 (medians of eight rounds 1370 -> 1405) with the per-thread
// shares kept; Q8_0 and stories110M within the noise.
#include <optional>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/buffer_effects.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

// Stack bytes alloca_scopes may bring to a function's top level: per scope,
// and in all.
constexpr int64_t kMaxLiftedStackBytes = 16 * 1024, kMaxLiftedStackBytesPerFunction = 64 * 1024;

// A tile loop this pass merges: one dim from 0 in steps of 1 to a constant,
// over buffers (no shared outputs), no mapping, a body with no stack
// allocations and no streaming-store fence.
std::optional<int64_t> mergeable_tiles(mlir::scf::ForallOp f) {
  if (f.getRank() != 1 || !f.getOutputs().empty() || f.getMapping()) return std::nullopt;
  // Static values (a dynamic one is ShapedType::kDynamic, never 0, 1 or >= 1).
  llvm::ArrayRef<int64_t> lb = f.getStaticLowerBound(), ub = f.getStaticUpperBound(), step = f.getStaticStep();
  if (lb.size() != 1 || ub.size() != 1 || step.size() != 1 || lb[0] != 0 || step[0] != 1 ||
      mlir::ShapedType::isDynamic(ub[0]) || ub[0] < 1)
    return std::nullopt;
  bool plain = true;
  f.getBody()->walk([&](mlir::Operation* op) {
    if (llvm::isa<mlir::memref::AllocaOp, mlir::memref::AllocaScopeOp, mlir::memref::AllocOp>(op) ||
        op->hasAttr(kThreadFenceMark))
      plain = false;
  });
  if (!plain) return std::nullopt;
  return ub[0];
}

// Inlines an alloca_scope at a function's top level whose stack buffers are
// static and small: they then live for the whole function.
void inline_small_scopes(mlir::FunctionOpInterface fn) {
  if (fn.getFunctionBody().empty()) return;
  llvm::SmallVector<mlir::memref::AllocaScopeOp> scopes;
  for (mlir::Block& block : fn.getFunctionBody())
    for (mlir::Operation& op : block)
      if (auto s = llvm::dyn_cast<mlir::memref::AllocaScopeOp>(op); s && s->getNumResults() == 0) scopes.push_back(s);
  int64_t lifted = 0;
  for (mlir::memref::AllocaScopeOp scope : scopes) {
    int64_t bytes = 0;
    bool ok = scope.getBodyRegion().hasOneBlock();
    scope.getBodyRegion().walk([&](mlir::memref::AllocaOp a) {
      mlir::MemRefType t = a.getType();
      if (!t.hasStaticShape() || !t.getElementType().isIntOrFloat()) {
        ok = false;
        return;
      }
      bytes += t.getNumElements() * static_cast<int64_t>((t.getElementTypeBitWidth() + 7) / 8);
    });
    if (!ok || bytes > kMaxLiftedStackBytes || lifted + bytes > kMaxLiftedStackBytesPerFunction) continue;
    mlir::Block& body = scope.getBodyRegion().front();
    mlir::Operation* ret = body.getTerminator();
    if (!llvm::isa<mlir::memref::AllocaScopeReturnOp>(ret) || ret->getNumOperands() != 0) continue;
    lifted += bytes;
    ret->erase();
    scope->getBlock()->getOperations().splice(scope->getIterator(), body.getOperations());
    scope->erase();
  }
}

// A and B merged into one loop at B's place (everything between them already
// moved before A): `threads` iterations, iteration t running A's tiles
// [t nA / T, (t + 1) nA / T) and then B's share likewise — the tiles each
// thread ran of the two loops apart (radix-omp-static-chunks' shares), so
// that loops with tiles of different cost keep their balance; only the join
// and fork between them go. (Tiles [0, nA + nB) split in T runs would give
// one thread all of A's.) A merged loop has `threads` tiles, one per thread:
// merged again, each iteration runs exactly its own.
mlir::scf::ForallOp merge(mlir::scf::ForallOp a, int64_t na, mlir::scf::ForallOp b, int64_t nb, int64_t threads) {
  mlir::OpBuilder builder(b);
  mlir::Location loc = b.getLoc();
  auto merged = mlir::scf::ForallOp::create(
      builder, loc, llvm::ArrayRef<mlir::OpFoldResult>{builder.getIndexAttr(threads)}, mlir::ValueRange{}, std::nullopt,
      [&](mlir::OpBuilder& in, mlir::Location l, mlir::ValueRange iv) {
        mlir::Value t = iv[0];
        mlir::Value one = mlir::arith::ConstantIndexOp::create(in, l, 1);
        mlir::Value total = mlir::arith::ConstantIndexOp::create(in, l, threads);
        // Tiles [t n / T, (t + 1) n / T) of a loop of n, its body cloned.
        auto share = [&](mlir::scf::ForallOp from, int64_t n) {
          mlir::Value count = mlir::arith::ConstantIndexOp::create(in, l, n);
          auto bound = [&](mlir::Value k) {
            return mlir::arith::DivUIOp::create(in, l, mlir::arith::MulIOp::create(in, l, k, count), total).getResult();
          };
          mlir::Value lo = bound(t), hi = bound(mlir::arith::AddIOp::create(in, l, t, one));
          auto loop = mlir::scf::ForOp::create(in, l, lo, hi, one);
          mlir::OpBuilder body = mlir::OpBuilder::atBlockTerminator(loop.getBody());
          mlir::IRMapping map;
          map.map(from.getInductionVars()[0], loop.getInductionVar());
          for (mlir::Operation& op : from.getBody()->without_terminator()) body.clone(op, map);
        };
        share(a, na);
        share(b, nb);
        mlir::scf::InParallelOp::create(in, l);
      });
  a.erase();
  b.erase();
  return merged;
}

// Merges the loops of one block, each with the next mergeable one it can
// reach.
void merge_block(mlir::Block& block, int64_t threads) {
  mlir::scf::ForallOp a;
  int64_t na = 0;
  std::vector<Access> a_access;
  std::vector<mlir::Operation*> between;
  // Deallocations of A's own temporaries (a kernel's buffer freed right after
  // its loop): moved after the merged loop instead of stopping the merge.
  std::vector<mlir::Operation*> deferred;
  auto reset = [&] {
    a = nullptr;
    between.clear();
    deferred.clear();
  };
  for (mlir::Operation* op = block.empty() ? nullptr : &block.front(); op; op = op->getNextNode()) {
    auto f = llvm::dyn_cast<mlir::scf::ForallOp>(op);
    std::optional<int64_t> tiles = f ? mergeable_tiles(f) : std::nullopt;
    std::optional<std::vector<Access>> acc = accesses(op);
    if (a && acc && !conflict(a_access, *acc)) {
      if (tiles) {
        for (mlir::Operation* moved : between) moved->moveBefore(a);
        mlir::scf::ForallOp m = merge(a, na, f, *tiles, threads);
        for (auto it = deferred.rbegin(); it != deferred.rend(); ++it) (*it)->moveAfter(m);
        deferred.clear();
        a = m;
        na = threads;
        a_access.insert(a_access.end(), acc->begin(), acc->end());
        between.clear();
        op = m;
        continue;
      }
      // Only ops with no results used by A (none: A is earlier) and no
      // region-carrying control flow that returns values move.
      if (op->hasTrait<mlir::OpTrait::IsTerminator>()) break;
      between.push_back(op);
      continue;
    }
    if (a && llvm::isa<mlir::memref::DeallocOp>(op)) {
      deferred.push_back(op);
      continue;
    }
    reset();
    if (tiles && acc) {
      a = f;
      na = *tiles;
      a_access = std::move(*acc);
    }
  }
}

struct MergeForallsPass : public mlir::PassWrapper<MergeForallsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeForallsPass)
  MergeForallsPass() = default;
  MergeForallsPass(const MergeForallsPass& o) : PassWrapper(o) {}
  // The threads the loops run on (convert-scf-to-openmp's num-threads).
  Option<int64_t> threads{*this, "threads", llvm::cl::desc("threads the parallel loops run on"), llvm::cl::init(1)};
  llvm::StringRef getArgument() const override { return "radix-merge-foralls"; }
  llvm::StringRef getDescription() const override {
    return "merge neighbouring independent parallel tile loops (one fork / join instead of several)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::scf::SCFDialect>();
  }
  void runOnOperation() override {
    if (threads < 2) return;  // no parallel loops to merge
    getOperation().walk([&](mlir::FunctionOpInterface fn) {
      inline_small_scopes(fn);
      for (mlir::Block& block : fn.getFunctionBody()) merge_block(block, threads);
    });
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_merge_foralls_pass() { return std::make_unique<MergeForallsPass>(); }

}  // namespace radix
