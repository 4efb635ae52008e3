// "radix-omp-static-chunks": each worksharing loop that
// convert-scf-to-openmp made of a schedule's scf.forall (an omp.wsloop,
// alone in its omp.parallel, no reductions, no schedule clause) becomes a
// plain scf.for over this thread's share of the (collapsed) iterations,
// from omp_get_thread_num / omp_get_num_threads: a static schedule computed
// in the loop's own code.
//
// Why: the wsloop lowers to __kmpc_for_static_init / _fini plus a barrier
// before the parallel region's own join barrier. Debian's libomp is built
// with its debug traces, so every __kmpc_for_static_init also formats a
// trace string (vsnprintf + malloc + free) on each thread, whether tracing
// is on or not. A small model's decode step runs ~50 such loops per token
// (perf showed the printf, malloc and free samples in every step). Measured
// on Zen 3, two threads, in one process with and without this pass, decode
// tok/s: stories15M Q4_0 1019 -> 1174 and 824 -> 904, stories110M Q4_0
// 120 -> 140; stories15M f32 (bound by reading weights) 198 -> 198; the
// 15M Q4_0 prefill of 128 tokens 3629 -> 3818. The iterations and what
// each thread computes are unchanged in kind (one contiguous run of
// iterations per thread, as schedule(static)); the schedule's tiles never
// split a reduction, so results do not depend on which thread runs which.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

// A wsloop this pass may replace: alone in its parallel region (so the
// region's join barrier still ends the loop for every thread), no clause
// but the default static schedule, one exclusive-bound loop nest.
bool plain_wsloop(mlir::omp::WsloopOp ws) {
  if (!llvm::isa_and_nonnull<mlir::omp::ParallelOp>(ws->getParentOp())) return false;
  mlir::Operation* next = ws->getNextNode();
  if (!next || !llvm::isa<mlir::omp::TerminatorOp>(next)) return false;
  if (!ws.getReductionVars().empty() || !ws.getPrivateVars().empty() || !ws.getLinearVars().empty() ||
      ws.getScheduleKind() || ws.getScheduleChunk() || ws.getOrdered() || ws.getOrder() || ws.getNowait())
    return false;
  auto nest = llvm::dyn_cast<mlir::omp::LoopNestOp>(ws.getWrappedLoop());
  return nest && !nest.getLoopInclusive() && nest.getRegion().hasOneBlock();
}

mlir::func::FuncOp runtime_function(mlir::ModuleOp module, llvm::StringRef name) {
  if (auto f = module.lookupSymbol<mlir::func::FuncOp>(name)) return f;
  mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(module.getBody());
  auto f = mlir::func::FuncOp::create(b, module.getLoc(), name, b.getFunctionType({}, {b.getI32Type()}));
  f.setPrivate();
  return f;
}

struct OmpStaticChunksPass : public mlir::PassWrapper<OmpStaticChunksPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OmpStaticChunksPass)

  llvm::StringRef getArgument() const override { return "radix-omp-static-chunks"; }
  llvm::StringRef getDescription() const override {
    return "Replace plain omp.wsloop loops by scf.for over the thread's static share of the iterations";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::func::FuncDialect, mlir::scf::SCFDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    std::vector<mlir::omp::WsloopOp> loops;
    module.walk([&](mlir::omp::WsloopOp ws) {
      if (plain_wsloop(ws)) loops.push_back(ws);
    });
    if (loops.empty()) return;
    mlir::func::FuncOp thread_num = runtime_function(module, "omp_get_thread_num");
    mlir::func::FuncOp num_threads = runtime_function(module, "omp_get_num_threads");
    mlir::IRRewriter rewriter(&getContext());
    for (mlir::omp::WsloopOp ws : loops) {
      auto nest = llvm::cast<mlir::omp::LoopNestOp>(ws.getWrappedLoop());
      const mlir::Location loc = ws.getLoc();
      rewriter.setInsertionPoint(ws);
      auto index = [&](mlir::func::FuncOp f) -> mlir::Value {
        mlir::Value v = mlir::func::CallOp::create(rewriter, loc, f, mlir::ValueRange{}).getResult(0);
        return mlir::arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), v);
      };
      mlir::Value tid = index(thread_num), nt = index(num_threads);
      auto cst = [&](int64_t v) -> mlir::Value { return mlir::arith::ConstantIndexOp::create(rewriter, loc, v); };
      // Iterations per dim (positive steps, as scf.parallel requires), and in all.
      llvm::SmallVector<mlir::Value> lbs(nest.getLoopLowerBounds()), ubs(nest.getLoopUpperBounds()),
          steps(nest.getLoopSteps()), trips;
      mlir::Value total = cst(1);
      for (size_t d = 0; d < lbs.size(); ++d) {
        mlir::Value span = mlir::arith::SubIOp::create(rewriter, loc, ubs[d], lbs[d]);
        trips.push_back(mlir::arith::CeilDivSIOp::create(rewriter, loc, span, steps[d]));
        trips.back() = mlir::arith::MaxSIOp::create(rewriter, loc, trips.back(), cst(0));
        total = mlir::arith::MulIOp::create(rewriter, loc, total, trips.back());
      }
      // Thread t of T runs iterations [t * n / T, (t + 1) * n / T).
      auto share = [&](mlir::Value t) -> mlir::Value {
        mlir::Value scaled = mlir::arith::MulIOp::create(rewriter, loc, t, total);
        return mlir::arith::DivUIOp::create(rewriter, loc, scaled, nt);
      };
      mlir::Value begin = share(tid);
      mlir::Value end = share(mlir::arith::AddIOp::create(rewriter, loc, tid, cst(1)));
      auto loop = mlir::scf::ForOp::create(rewriter, loc, begin, end, cst(1));
      mlir::Block* body = loop.getBody();
      rewriter.setInsertionPointToStart(body);
      // The linear iteration back to one index per dim, innermost fastest.
      llvm::SmallVector<mlir::Value> ivs(lbs.size());
      mlir::Value rest = loop.getInductionVar();
      for (size_t d = lbs.size(); d-- > 0;) {
        mlir::Value idx = d == 0 ? rest : mlir::arith::RemUIOp::create(rewriter, loc, rest, trips[d]).getResult();
        if (d > 0) rest = mlir::arith::DivUIOp::create(rewriter, loc, rest, trips[d]);
        mlir::Value offset = mlir::arith::MulIOp::create(rewriter, loc, idx, steps[d]);
        ivs[d] = mlir::arith::AddIOp::create(rewriter, loc, lbs[d], offset);
      }
      mlir::Block& nest_body = nest.getRegion().front();
      mlir::Operation* yield = nest_body.getTerminator();
      rewriter.eraseOp(yield);
      rewriter.inlineBlockBefore(&nest_body, body->getTerminator(), ivs);
      rewriter.eraseOp(ws);
      // Fixed-size stack buffers of an iteration (a row-fusion group's row
      // buffers, in the memref.alloca_scope convert-scf-to-openmp wraps the
      // body in) move in front of the loop: one set per thread, reused by
      // its iterations, as a forall's iterations are independent. Left in,
      // canonicalize drops the scope (its parent is no allocation scope)
      // and nothing releases them between iterations: a thread running
      // 2048 rows of 16 KiB overflowed its stack.
      llvm::SmallVector<mlir::memref::AllocaOp> fixed;
      loop.getBody()->walk([&](mlir::memref::AllocaOp a) {
        if (a->getNumOperands() != 0) return;
        for (mlir::Operation* p = a->getParentOp(); p != loop.getOperation(); p = p->getParentOp())
          if (p->hasTrait<mlir::OpTrait::AutomaticAllocationScope>() && !llvm::isa<mlir::memref::AllocaScopeOp>(p))
            return;
        fixed.push_back(a);
      });
      for (mlir::memref::AllocaOp a : fixed) a->moveBefore(loop);
      // The sfence that ends each iteration's non-temporal stores
      // (radix-streaming-stores) runs once, after the thread's iterations.
      llvm::SmallVector<mlir::Operation*> fences;
      loop.getBody()->walk([&](mlir::LLVM::CallIntrinsicOp f) {
        if (!f->hasAttr(kThreadFenceMark)) return;
        for (mlir::Operation* p = f->getParentOp(); p != loop.getOperation(); p = p->getParentOp())
          if (!llvm::isa<mlir::memref::AllocaScopeOp>(p)) return;
        fences.push_back(f);
      });
      for (size_t i = 0; i < fences.size(); ++i) {
        if (i == 0) fences[i]->moveAfter(loop);
        else rewriter.eraseOp(fences[i]);
      }
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_omp_static_chunks_pass() { return std::make_unique<OmpStaticChunksPass>(); }

}  // namespace radix
