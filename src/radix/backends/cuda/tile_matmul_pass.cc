// "radix-gpu-tile-matmul": linalg.matmul (bufferized; f32, f16 or bf16
// operands, widened to f32 as they are staged, sums in f32) as one kernel
// with shared-memory tiles, instead of radix-gpu-map's one thread per output.
//
// A block of 16 x 16 threads computes a 64 x 64 tile of C; each thread owns
// 4 x 4 outputs, rows ty + 16 i and columns tx + 16 j (so a warp's stores
// and shared-memory reads of B are consecutive). K advances 16 at a time:
// the block stages A[64 x 16] and B[16 x 64] in shared memory (each thread
// loads 4 + 4 values; out-of-range ones are zero), synchronizes, and runs 16
// rank-1 updates from shared memory into its 16 register accumulators.
// The result is added to C (linalg.matmul accumulates into its output; the
// traced program zero-fills it first). A stored [n, k] right operand (a
// transposed indexing map, as Llama weights are read) is staged by columns
// so that its loads stay coalesced.
//
// Small products (M or N under 32: decode's mat-vecs) keep the one thread per
// output mapping, which reads the weights once per output column.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cuda/cuda_passes.h"

namespace radix {

namespace {

constexpr int64_t kTile = 64, kStep = 16, kThreads = 16, kPerThread = 4;

// (row dim, col dim) of `map` over (m, n, k) = (d0, d1, d2); {-1, -1} if not
// a permutation of two of them.
std::pair<int, int> dims_of(mlir::AffineMap map) {
  if (map.getNumResults() != 2) return {-1, -1};
  auto d = [&](unsigned i) {
    auto e = llvm::dyn_cast<mlir::AffineDimExpr>(map.getResult(i));
    return e ? static_cast<int>(e.getPosition()) : -1;
  };
  return {d(0), d(1)};
}

struct TileMatmulPass : public mlir::PassWrapper<TileMatmulPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TileMatmulPass)
  llvm::StringRef getArgument() const override { return "radix-gpu-tile-matmul"; }
  llvm::StringRef getDescription() const override {
    return "Float matmuls as shared-memory tiled kernels (64x64 tiles, 16x16 threads, 4x4 outputs each)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::gpu::GPUDialect, mlir::scf::SCFDialect, mlir::arith::ArithDialect,
                    mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::MatmulOp> ops;
    getOperation().walk([&](mlir::linalg::MatmulOp op) {
      if (!op->getParentOfType<mlir::gpu::LaunchOp>() && suitable(op)) ops.push_back(op);
    });
    for (auto op : ops) rewrite(op);
  }

  static bool suitable(mlir::linalg::MatmulOp op) {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2) return false;
    for (mlir::Value v : {op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInits()[0]}) {
      auto t = llvm::dyn_cast<mlir::MemRefType>(v.getType());
      if (!t || t.getRank() != 2) return false;
      mlir::Type e = t.getElementType();
      if (!e.isF32() && !e.isF16() && !e.isBF16()) return false;
    }
    auto maps = op.getIndexingMapsArray();
    auto [ar, ac] = dims_of(maps[0]);
    auto [br, bc] = dims_of(maps[1]);
    auto [cr, cc] = dims_of(maps[2]);
    const bool a_ok = (ar == 0 && ac == 2) || (ar == 2 && ac == 0);
    const bool b_ok = (br == 2 && bc == 1) || (br == 1 && bc == 2);
    if (!a_ok || !b_ok || cr != 0 || cc != 1) return false;
    // Static sizes under a tile's worth stay one thread per output.
    auto c = llvm::cast<mlir::MemRefType>(op.getDpsInits()[0].getType());
    for (int64_t d : c.getShape())
      if (!mlir::ShapedType::isDynamic(d) && d < 32) return false;
    return true;
  }

  void rewrite(mlir::linalg::MatmulOp op) {
    mlir::OpBuilder b(op);
    mlir::Location loc = op.getLoc();
    mlir::MLIRContext* ctx = b.getContext();
    mlir::Value A = op.getDpsInputs()[0], B = op.getDpsInputs()[1], C = op.getDpsInits()[0];
    auto maps = op.getIndexingMapsArray();
    const bool a_km = dims_of(maps[0]).first == 2;  // A stored [k, m]
    const bool b_nk = dims_of(maps[1]).first == 1;  // B stored [n, k]
    auto cidx = [&](int64_t v) -> mlir::Value { return mlir::arith::ConstantIndexOp::create(b, loc, v); };
    mlir::Value M = mlir::memref::DimOp::create(b, loc, C, 0), N = mlir::memref::DimOp::create(b, loc, C, 1);
    mlir::Value K = mlir::memref::DimOp::create(b, loc, A, a_km ? 0 : 1);
    mlir::Value c_tile = cidx(kTile), one = cidx(1), threads = cidx(kThreads);
    mlir::Value gx = mlir::arith::CeilDivSIOp::create(b, loc, N, c_tile);
    mlir::Value gy = mlir::arith::CeilDivSIOp::create(b, loc, M, c_tile);
    // An empty product still launches one (idle) block: zero blocks is a launch error.
    gx = mlir::arith::MaxSIOp::create(b, loc, gx, one);
    gy = mlir::arith::MaxSIOp::create(b, loc, gy, one);
    auto ws = mlir::gpu::AddressSpaceAttr::get(ctx, mlir::gpu::AddressSpace::Workgroup);
    auto tile_t = mlir::MemRefType::get({kStep, kTile}, b.getF32Type(), mlir::MemRefLayoutAttrInterface{}, ws);
    auto launch = mlir::gpu::LaunchOp::create(b, loc, gx, gy, one, threads, threads, one, nullptr, nullptr, {},
                                              mlir::TypeRange{tile_t, tile_t});
    mlir::Block& body = launch.getBody().front();
    b.setInsertionPointToStart(&body);
    auto term = mlir::gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(term);
    mlir::Value As = launch.getWorkgroupAttributions()[0], Bs = launch.getWorkgroupAttributions()[1];
    mlir::Value tx = launch.getThreadIds().x, ty = launch.getThreadIds().y;
    mlir::Value row0 = mlir::arith::MulIOp::create(b, loc, launch.getBlockIds().y, c_tile);
    mlir::Value col0 = mlir::arith::MulIOp::create(b, loc, launch.getBlockIds().x, c_tile);
    mlir::Value tid = mlir::arith::AddIOp::create(b, loc, mlir::arith::MulIOp::create(b, loc, ty, threads), tx);
    mlir::Value zero_f = mlir::arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    auto add = [&](mlir::OpBuilder& bb, mlir::Value x, mlir::Value y) -> mlir::Value {
      return mlir::arith::AddIOp::create(bb, loc, x, y);
    };
    auto lt = [&](mlir::OpBuilder& bb, mlir::Value x, mlir::Value y) -> mlir::Value {
      return mlir::arith::CmpIOp::create(bb, loc, mlir::arith::CmpIPredicate::slt, x, y);
    };
    // 16-bit floats are widened as they are staged: tiles and sums are f32.
    auto to_f32 = [&](mlir::OpBuilder& bb, mlir::Value v) -> mlir::Value {
      return v.getType().isF32() ? v : mlir::arith::ExtFOp::create(bb, loc, bb.getF32Type(), v).getResult();
    };
    // global[i0][i1] if both in range, else 0.
    auto masked_load = [&](mlir::OpBuilder& bb, mlir::Value mem, mlir::Value i0, mlir::Value i1, mlir::Value in_range) {
      auto ifop = mlir::scf::IfOp::create(bb, loc, mlir::TypeRange{bb.getF32Type()}, in_range, /*withElse=*/true);
      {
        mlir::OpBuilder tb = mlir::OpBuilder::atBlockBegin(ifop.thenBlock());
        mlir::Value v = mlir::memref::LoadOp::create(tb, loc, mem, mlir::ValueRange{i0, i1});
        mlir::scf::YieldOp::create(tb, loc, to_f32(tb, v));
      }
      {
        mlir::OpBuilder eb = mlir::OpBuilder::atBlockBegin(ifop.elseBlock());
        mlir::scf::YieldOp::create(eb, loc, zero_f);
      }
      return ifop.getResult(0);
    };
    llvm::SmallVector<mlir::Value> init(kPerThread * kPerThread, zero_f);
    auto kloop = mlir::scf::ForOp::create(b, loc, cidx(0), K, cidx(kStep), init);
    {
      mlir::OpBuilder lb = mlir::OpBuilder::atBlockBegin(kloop.getBody());
      mlir::Value k0 = kloop.getInductionVar();
      // Stage the tiles: 1024 values each, 4 per thread. e -> (index along
      // the 16-wide K step, index along the 64-wide tile) such that
      // neighbouring threads read neighbouring addresses of the operand.
      for (int64_t q = 0; q < kPerThread; ++q) {
        mlir::Value e = add(lb, tid, mlir::arith::ConstantIndexOp::create(lb, loc, q * kThreads * kThreads));
        mlir::Value c16 = mlir::arith::ConstantIndexOp::create(lb, loc, kStep);
        mlir::Value c64 = mlir::arith::ConstantIndexOp::create(lb, loc, kTile);
        auto stage = [&](mlir::Value mem, mlir::Value tile, bool k_fastest, bool stored_k_first, mlir::Value base,
                         mlir::Value limit) {
          // k_fastest: e = t * 16 + kk (the operand's rows run along K);
          // otherwise e = kk * 64 + t.
          mlir::Value kk = k_fastest ? mlir::arith::RemUIOp::create(lb, loc, e, c16).getResult()
                                     : mlir::arith::DivUIOp::create(lb, loc, e, c64).getResult();
          mlir::Value t = k_fastest ? mlir::arith::DivUIOp::create(lb, loc, e, c16).getResult()
                                    : mlir::arith::RemUIOp::create(lb, loc, e, c64).getResult();
          mlir::Value gk = add(lb, k0, kk), gt = add(lb, base, t);
          mlir::Value ok = mlir::arith::AndIOp::create(lb, loc, lt(lb, gk, K), lt(lb, gt, limit));
          mlir::Value v = stored_k_first ? masked_load(lb, mem, gk, gt, ok) : masked_load(lb, mem, gt, gk, ok);
          mlir::memref::StoreOp::create(lb, loc, v, tile, mlir::ValueRange{kk, t});
        };
        // A row-major [m, k]: K fastest; A [k, m]: M fastest.
        stage(A, As, /*k_fastest=*/!a_km, /*stored_k_first=*/a_km, row0, M);
        // B [k, n]: N fastest; B [n, k]: K fastest.
        stage(B, Bs, /*k_fastest=*/b_nk, /*stored_k_first=*/!b_nk, col0, N);
      }
      mlir::gpu::BarrierOp::create(lb, loc);
      auto inner = mlir::scf::ForOp::create(lb, loc, mlir::arith::ConstantIndexOp::create(lb, loc, 0),
                                            mlir::arith::ConstantIndexOp::create(lb, loc, kStep),
                                            mlir::arith::ConstantIndexOp::create(lb, loc, 1), kloop.getRegionIterArgs());
      {
        mlir::OpBuilder ib = mlir::OpBuilder::atBlockBegin(inner.getBody());
        mlir::Value kk = inner.getInductionVar();
        llvm::SmallVector<mlir::Value> a(kPerThread), bv(kPerThread);
        for (int64_t i = 0; i < kPerThread; ++i) {
          mlir::Value off = mlir::arith::ConstantIndexOp::create(ib, loc, i * kThreads);
          a[i] = mlir::memref::LoadOp::create(ib, loc, As, mlir::ValueRange{kk, add(ib, ty, off)});
          bv[i] = mlir::memref::LoadOp::create(ib, loc, Bs, mlir::ValueRange{kk, add(ib, tx, off)});
        }
        llvm::SmallVector<mlir::Value> next;
        for (int64_t i = 0; i < kPerThread; ++i)
          for (int64_t j = 0; j < kPerThread; ++j) {
            mlir::Value acc = inner.getRegionIterArgs()[static_cast<unsigned>(i * kPerThread + j)];
            next.push_back(mlir::math::FmaOp::create(ib, loc, a[i], bv[j], acc));
          }
        mlir::scf::YieldOp::create(ib, loc, next);
      }
      mlir::gpu::BarrierOp::create(lb, loc);
      mlir::scf::YieldOp::create(lb, loc, inner.getResults());
    }
    // C[r][c] += acc where in range.
    for (int64_t i = 0; i < kPerThread; ++i)
      for (int64_t j = 0; j < kPerThread; ++j) {
        mlir::Value r = add(b, row0, add(b, ty, cidx(i * kThreads)));
        mlir::Value c = add(b, col0, add(b, tx, cidx(j * kThreads)));
        mlir::Value ok = mlir::arith::AndIOp::create(b, loc, lt(b, r, M), lt(b, c, N));
        auto ifop = mlir::scf::IfOp::create(b, loc, ok, /*withElseRegion=*/false);
        mlir::OpBuilder tb(ifop.thenBlock()->getTerminator());
        mlir::Value old = mlir::memref::LoadOp::create(tb, loc, C, mlir::ValueRange{r, c});
        mlir::Value sum = mlir::arith::AddFOp::create(
            tb, loc, to_f32(tb, old), kloop.getResult(static_cast<unsigned>(i * kPerThread + j)));
        if (sum.getType() != old.getType()) sum = mlir::arith::TruncFOp::create(tb, loc, old.getType(), sum);
        mlir::memref::StoreOp::create(tb, loc, sum, C, mlir::ValueRange{r, c});
      }
    op.erase();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_tile_matmul_pass() { return std::make_unique<TileMatmulPass>(); }

}  // namespace radix
