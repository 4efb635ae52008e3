// "radix-streaming-stores{min-bytes=N}": a function argument that the
// function only writes (an output: no load, no read, no call takes it), at
// least N bytes large, is written with non-temporal vector stores (x86
// vmovntps and kin), which go to memory without first reading each line
// into the caches.
//
// Why: a normal store of a line that is not cached reads the line from
// memory first (read-for-ownership), so writing a large output costs a read
// and a write of it. An output larger than the last-level cache is evicted
// before anything reads it again anyway. Skipping the read: RMSNorm over
// 4096 x 4096 f32 ran 10.6 -> 16.8 GB/s on one Zen 5 core (a hand-written
// AVX-512 loop with and without _mm512_stream_ps); memcpy does the same
// above a size threshold. The driver sets N from the host's last-level
// cache (CpuOptions::streaming_store_bytes), so outputs that a following op
// could read from the cache keep normal stores.
//
// A non-temporal store needs its full vector width of alignment (LLVM
// splits an under-aligned one into 8-byte pieces), and callees get views of
// their caller's buffers at any offset, so each store checks its address at
// run time: aligned -> non-temporal store; 16-byte aligned -> non-temporal
// 16-byte pieces (rows of 300 or 4100 f32); else the original store. The
// branch goes the same way for a whole row (LLVM takes it out of the row's
// loop) and costs a few integer ops per 16 floats in a loop bound by
// memory.
//
// Non-temporal stores are weakly ordered: each thread's part of a parallel
// loop and the function itself end with an sfence, so a thread that reads
// the output after the parallel region or the call (the runtime, the next
// op) sees every value. The fence goes at the end of the scf.forall body
// here and after each thread's run of iterations once they are one
// (radix-omp-static-chunks): a fence per iteration made softmax over
// [200000, 32] on two threads 2.7x slower than normal stores.
//
// Write prefetches (memref.prefetch ... write) of a streamed argument are
// dropped: they would pull the lines the stores are meant to skip into the
// cache.
//
// Writes in a loop nest that also evaluates a transcendental function (exp,
// tanh, erf, log, ...: softmax, SiLU, GELU) keep normal stores: such a nest
// runs at a few cycles per element, and its normal stores' write-backs
// overlap that work where non-temporal ones did not. Measured on one Zen 5
// core at full vector rate, [4096, 4096] f32, the two forms compiled side
// by side and alternated (medians of 30 calls, GB/s read + written,
// non-temporal / normal): softmax 17.9 / 23.8, exp 25.7 / 31.9, tanh 30.9 /
// 40.6, x * sigmoid(x) 23.0 / 31.4, exp(x - rowmax) 21.2 / 24.0; two cores:
// softmax 35.3 / 49.0, exp 47.0 / 57.3. Light nests keep the non-temporal
// stores: x * 2 37.6 / 34.5 (two cores 53.6 / 46.6), RMSNorm 25.7 / 27.0
// (even; 16.8 / 10.6 on the half-rate host of the measurement above).
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/prefetch_util.h"

namespace radix {

namespace {

// The smallest non-temporal store a vector is split into (an xmm register).
constexpr int64_t kStreamPiece = 16;

// A contiguous write of one 1-D vector that can become a vector.store:
// its memref, indices and value, and the vector's size in bytes.
struct StreamWrite {
  mlir::Operation* op;
  mlir::Value memref, value;
  llvm::SmallVector<mlir::Value> indices;
  int64_t bytes;
};

int64_t element_bytes(mlir::Type t) {
  if (!t.isIntOrFloat()) return 0;
  const unsigned bits = t.getIntOrFloatBitWidth();
  return bits % 8 == 0 ? bits / 8 : 0;
}

// The vector's size in bytes if it is a power of two the ISA stores whole
// (16, 32 or 64), else 0.
int64_t vector_bytes(mlir::VectorType vt) {
  if (vt.getRank() != 1 || vt.isScalable()) return 0;
  const int64_t b = vt.getNumElements() * element_bytes(vt.getElementType());
  return (b == 16 || b == 32 || b == 64) ? b : 0;
}

// Whether the memref's innermost dimension is contiguous (stride 1).
bool unit_inner_stride(mlir::Value m) {
  auto t = llvm::cast<mlir::MemRefType>(m.getType());
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (t.getRank() == 0 || mlir::failed(t.getStridesAndOffset(strides, offset))) return false;
  return strides.back() == 1;
}

std::optional<StreamWrite> as_stream_write(mlir::Operation* op, mlir::Value m) {
  if (auto w = mlir::dyn_cast<mlir::vector::TransferWriteOp>(op)) {
    if (w.getBase() != m || w.getMask() || !w.getPermutationMap().isMinorIdentity()) return std::nullopt;
    if (!llvm::all_of(w.getInBoundsValues(), [](bool b) { return b; })) return std::nullopt;
    const int64_t bytes = vector_bytes(w.getVectorType());
    if (!bytes || !unit_inner_stride(m)) return std::nullopt;
    return StreamWrite{op, m, w.getVector(), llvm::SmallVector<mlir::Value>(w.getIndices()), bytes};
  }
  if (auto s = mlir::dyn_cast<mlir::vector::StoreOp>(op)) {
    if (s.getBase() != m || s.getNontemporal()) return std::nullopt;
    const int64_t bytes = vector_bytes(s.getVectorType());
    if (!bytes || !unit_inner_stride(m)) return std::nullopt;
    return StreamWrite{op, m, s.getValueToStore(), llvm::SmallVector<mlir::Value>(s.getIndices()), bytes};
  }
  return std::nullopt;
}

bool is_view(mlir::Operation* op) {
  return mlir::isa<mlir::memref::SubViewOp, mlir::memref::ExpandShapeOp, mlir::memref::CollapseShapeOp,
                   mlir::memref::CastOp>(op);
}

// The writes of argument `arg` and its views, if the function does nothing
// else with it (prefetches aside, returned in `prefetches`); else empty.
llvm::SmallVector<StreamWrite> writes_only(mlir::Value arg, llvm::SmallVector<mlir::memref::PrefetchOp>& prefetches) {
  llvm::SmallVector<StreamWrite> writes;
  llvm::SmallVector<mlir::Value> work = {arg};
  while (!work.empty()) {
    mlir::Value v = work.pop_back_val();
    for (mlir::OpOperand& use : v.getUses()) {
      mlir::Operation* user = use.getOwner();
      if (is_view(user) && use.getOperandNumber() == 0) {
        work.push_back(user->getResult(0));
      } else if (auto p = mlir::dyn_cast<mlir::memref::PrefetchOp>(user)) {
        prefetches.push_back(p);
      } else if (auto w = as_stream_write(user, v)) {
        writes.push_back(*w);
      } else {
        return {};
      }
    }
  }
  return writes;
}

// scf.if (address of the write % bytes == 0) { non-temporal store }
// else { the write }; a vector of more than 16 bytes at an address that only
// 16 divides (rows of 300 f32 start at every fourth 16 bytes) is stored as
// non-temporal 16-byte pieces in between, which the core's write-combining
// buffers join into whole lines again.
void stream(const StreamWrite& w) {
  mlir::OpBuilder b(w.op);
  const mlir::Location loc = w.op->getLoc();
  auto mt = llvm::cast<mlir::MemRefType>(w.memref.getType());
  const int64_t elem = element_bytes(mt.getElementType());
  auto meta = mlir::memref::ExtractStridedMetadataOp::create(b, loc, w.memref);
  mlir::Value addr = meta.getOffset();
  for (size_t d = 0; d < w.indices.size(); ++d)
    addr = mlir::arith::AddIOp::create(
        b, loc, addr, mlir::arith::MulIOp::create(b, loc, w.indices[d], meta.getStrides()[d]));
  auto index_const = [&](int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); };
  addr = mlir::arith::MulIOp::create(b, loc, addr, index_const(elem));
  mlir::Value base = mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, loc, w.memref);
  addr = mlir::arith::AddIOp::create(b, loc, base, addr);
  auto aligned_to = [&](int64_t bytes) {
    mlir::Value low = mlir::arith::AndIOp::create(b, loc, addr, index_const(bytes - 1));
    return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::eq, low, index_const(0));
  };
  auto if_op = mlir::scf::IfOp::create(b, loc, aligned_to(w.bytes), /*withElseRegion=*/true);
  b.setInsertionPointToStart(if_op.thenBlock());
  mlir::vector::StoreOp::create(b, loc, w.value, w.memref, w.indices, /*nontemporal=*/true,
                                llvm::MaybeAlign(w.bytes));
  b.setInsertionPointToStart(if_op.elseBlock());
  if (w.bytes > kStreamPiece) {
    auto pieces = mlir::scf::IfOp::create(b, loc, aligned_to(kStreamPiece), /*withElseRegion=*/true);
    b.setInsertionPointToStart(pieces.thenBlock());
    const int64_t lanes = kStreamPiece / elem;
    for (int64_t at = 0; at * elem < w.bytes; at += lanes) {
      mlir::Value piece = mlir::vector::ExtractStridedSliceOp::create(
          b, loc, w.value, llvm::ArrayRef<int64_t>{at}, llvm::ArrayRef<int64_t>{lanes}, llvm::ArrayRef<int64_t>{1});
      llvm::SmallVector<mlir::Value> indices = w.indices;
      indices.back() = mlir::arith::AddIOp::create(b, loc, indices.back(), index_const(at));
      mlir::vector::StoreOp::create(b, loc, piece, w.memref, indices, /*nontemporal=*/true,
                                    llvm::MaybeAlign(kStreamPiece));
    }
    b.setInsertionPointToStart(pieces.elseBlock());
  }
  b.clone(*w.op);
  w.op->erase();
}

// Whether the function-level op that holds `write` (its outermost loop)
// evaluates a transcendental function anywhere inside.
bool in_transcendental_nest(mlir::Operation* write) {
  mlir::Operation* nest = write;
  while (nest->getParentOp() && !mlir::isa<mlir::func::FuncOp>(nest->getParentOp())) nest = nest->getParentOp();
  return computes_transcendentals(nest);
}

// Where the thread that ran `op` finishes its part: the body of the
// innermost enclosing parallel loop, or the function.
mlir::Operation* thread_scope(mlir::Operation* op) {
  for (mlir::Operation* p = op->getParentOp(); p; p = p->getParentOp())
    if (mlir::isa<mlir::scf::ForallOp, mlir::scf::ParallelOp, mlir::func::FuncOp>(p)) return p;
  return nullptr;
}

mlir::Operation* sfence_before(mlir::Operation* op) {
  mlir::OpBuilder b(op);
  return mlir::LLVM::CallIntrinsicOp::create(b, op->getLoc(), b.getStringAttr("llvm.x86.sse.sfence"),
                                             mlir::ValueRange{});
}

// A parallel loop's fence is marked: once the loop is each thread's run of
// iterations, radix-omp-static-chunks moves it after that run.
void fence_scope(mlir::Operation* scope) {
  if (auto f = mlir::dyn_cast<mlir::func::FuncOp>(scope)) {
    f.walk([](mlir::func::ReturnOp r) { sfence_before(r); });
    return;
  }
  mlir::Builder b(scope->getContext());
  for (mlir::Region& r : scope->getRegions())
    for (mlir::Block& block : r) sfence_before(block.getTerminator())->setAttr(kThreadFenceMark, b.getUnitAttr());
}

struct StreamingStoresPass : public mlir::PassWrapper<StreamingStoresPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(StreamingStoresPass)

  StreamingStoresPass() = default;
  StreamingStoresPass(const StreamingStoresPass& o) : PassWrapper(o) {}
  // 0: off (the default: a pipeline without the host's cache size streams nothing).
  Option<int64_t> min_bytes{*this, "min-bytes", llvm::cl::desc("smallest output written with non-temporal stores"),
                            llvm::cl::init(0)};

  llvm::StringRef getArgument() const override { return "radix-streaming-stores"; }
  llvm::StringRef getDescription() const override {
    return "Write large write-only outputs with non-temporal (cache-bypassing) vector stores";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                    mlir::vector::VectorDialect, mlir::LLVM::LLVMDialect>();
  }

  void runOnOperation() override {
    if (min_bytes <= 0) return;
    llvm::SetVector<mlir::Operation*> scopes;
    getOperation().walk([&](mlir::func::FuncOp f) {
      if (f.isExternal()) return;
      for (mlir::BlockArgument arg : f.getArguments()) {
        auto mt = llvm::dyn_cast<mlir::MemRefType>(arg.getType());
        if (!mt || !mt.hasStaticShape() || !element_bytes(mt.getElementType())) continue;
        if (mt.getNumElements() * element_bytes(mt.getElementType()) < min_bytes) continue;
        llvm::SmallVector<mlir::memref::PrefetchOp> prefetches;
        llvm::SmallVector<StreamWrite> writes = writes_only(arg, prefetches);
        if (writes.empty()) continue;
        bool streamed = false;
        for (const StreamWrite& w : writes) {
          if (in_transcendental_nest(w.op)) continue;
          scopes.insert(thread_scope(w.op));
          stream(w);
          streamed = true;
        }
        for (mlir::memref::PrefetchOp p : prefetches)
          if (streamed && p.getIsWrite()) p->erase();
      }
    });
    for (mlir::Operation* s : scopes)
      if (s) fence_scope(s);
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_streaming_stores_pass() { return std::make_unique<StreamingStoresPass>(); }

}  // namespace radix
