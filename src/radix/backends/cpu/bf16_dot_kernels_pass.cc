// "radix-bf16-dot-kernels": products of f32 activations and bf16 weights
// read as [n, k] (linalg.matmul x[m, k] · W[n, k]ᵀ, the Llama's linears with
// bf16 weights) that the schedule planned for bf16 kernels
// (radix.bf16_kernel = [tm, tn, parallel]) become loops of AVX-512 BF16
// vdpbf16ps.
//
// vdpbf16ps multiplies 32 bf16 pairs and adds each two neighbours' products
// into 16 f32 lanes: twice the multiply-adds of an f32 FMA, and W's bytes
// are used as they are (the other schedules widen every bf16 to f32 first,
// two instructions per 16 values). Both operands must be bf16, so x is
// rounded to bf16 (to nearest even, vcvtneps2bf16) once per product into a
// buffer [m, k] (on the stack up to kStackBytes, else the heap); the
// products of two bf16 are exact in f32, the sums f32 (the instruction
// treats bf16 subnormals as zero).
//
// Loops: the n axis in tiles of tn weight rows (an scf.forall over the tiles
// when the plan says parallel: the "lower" stage turns it into an OpenMP
// loop), then m in tiles of tm rows (the last M % tm rows one at a time),
// then k in steps of 32 with tm x tn accumulators, each a dot product's 16
// partial sums along k (rows of x and W are both contiguous in k: nothing
// is repacked). A tile's
// accumulators are summed as one shuffle tree (see sum_lanes) and its tn
// sums per row stored as one vector.
//
// Runs after bufferization; an op it does not recognize stays a
// linalg.matmul and becomes plain loops (slow, still correct).
#include <optional>
#include <tuple>
#include <vector>

#include "llvm/Support/MathExtras.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/kernel_loops.h"

namespace radix {

namespace {

constexpr const char* kBf16KernelAttr = "radix.bf16_kernel";
constexpr int64_t kLanes = 16;                  // f32 lanes of a 512-bit register
constexpr int64_t kStep = 2 * kLanes;           // bf16 values per vdpbf16ps operand
constexpr int64_t kStackBytes = int64_t{1} << 18;  // x's bf16 copy on the stack up to this size

using mlir::Value;

struct Plan {
  int64_t tm = 1, tn = 1;
  bool parallel = false;
};

class Bf16KernelBuilder {
 public:
  Bf16KernelBuilder(mlir::linalg::MatmulOp op, const Plan& plan)
      : op_(op), plan_(plan), b_(op), loc_(op.getLoc()) {}

  // Replaces the op; false (nothing created) when it is not the product the
  // plan was made for.
  bool build() {
    auto lin = llvm::cast<mlir::linalg::LinalgOp>(op_.getOperation());
    llvm::SmallVector<int64_t> r = lin.getStaticLoopRanges();
    if (r.size() != 3 || !lin.hasPureBufferSemantics() || op_.getNumDpsInputs() != 2) return false;
    const int64_t M = r[0], N = r[1], K = r[2];
    const int64_t tm = plan_.tm, tn = plan_.tn;
    if (K % kStep != 0 || N % tn != 0) return false;
    if (!llvm::isPowerOf2_64(static_cast<uint64_t>(tm * tn)) || tm * tn > kLanes) return false;
    for (Value v : op_->getOperands()) {
      auto mt = llvm::dyn_cast<mlir::MemRefType>(v.getType());
      if (!mt || !mt.isLastDimUnitStride()) return false;
    }
    auto et = [&](unsigned i) { return llvm::cast<mlir::MemRefType>(op_->getOperand(i).getType()).getElementType(); };
    if (!et(0).isF32() || !et(1).isBF16() || !et(2).isF32()) return false;

    // x rounded to bf16, row by row.
    auto scope = mlir::memref::AllocaScopeOp::create(b_, loc_, mlir::TypeRange{});
    scope.getBodyRegion().push_back(new mlir::Block());
    b_.setInsertionPointToStart(&scope.getBodyRegion().front());
    mlir::memref::AllocaScopeReturnOp::create(b_, loc_, mlir::ValueRange{});
    b_.setInsertionPointToStart(&scope.getBodyRegion().front());
    auto xt = mlir::MemRefType::get({M, K}, b_.getBF16Type());
    const bool heap = M * K * 2 > kStackBytes;
    xb_ = heap ? mlir::memref::AllocOp::create(b_, loc_, xt, b_.getI64IntegerAttr(64)).getResult()
               : mlir::memref::AllocaOp::create(b_, loc_, xt, b_.getI64IntegerAttr(64)).getResult();
    round_x(M, K);

    auto body = [&](mlir::OpBuilder& b, Value tile) {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
      Value n0 = mlir::arith::MulIOp::create(b_, loc_, tile, idx(tn));
      // Rows in tiles of tm, the last M % tm (a prompt of 129 tokens) one
      // at a time against the same tn weight rows.
      const int64_t whole = M / tm * tm;
      for (auto [begin, end, rows_per_tile] : {std::tuple<int64_t, int64_t, int64_t>{0, whole, tm}, {whole, M, 1}}) {
        if (begin == end) continue;
        mlir::OpBuilder::InsertionGuard rg(b_);
        auto rows = mlir::scf::ForOp::create(b_, loc_, idx(begin), idx(end), idx(rows_per_tile));
        b_.setInsertionPointToStart(rows.getBody());
        emit_tile(rows.getInductionVar(), n0, K, rows_per_tile);
      }
    };
    const int64_t tiles = N / tn;
    emit_tile_loop(b_, loc_, tiles, plan_.parallel && tiles > 1, body);
    if (heap) mlir::memref::DeallocOp::create(b_, loc_, xb_);
    op_.erase();
    return true;
  }

 private:
  Value idx(int64_t v) { return mlir::arith::ConstantIndexOp::create(b_, loc_, v); }

  // Operand `i`'s indices at loop indices (m, n, k), through its indexing
  // map (a projection).
  llvm::SmallVector<Value> indices(unsigned i, Value m, Value n, Value k) {
    const Value loops[] = {m, n, k};
    mlir::AffineMap map = op_.getIndexingMapsArray()[i];
    llvm::SmallVector<Value> out;
    for (mlir::AffineExpr e : map.getResults()) out.push_back(loops[llvm::cast<mlir::AffineDimExpr>(e).getPosition()]);
    return out;
  }

  Value intrinsic(const char* name, mlir::Type result, mlir::ValueRange args) {
    return mlir::LLVM::CallIntrinsicOp::create(b_, loc_, result, b_.getStringAttr(name), args).getResult(0);
  }

  mlir::VectorType vec(int64_t lanes, mlir::Type et) { return mlir::VectorType::get({lanes}, et); }

  // xb_[m, k] = bf16(x[m, k]): two 16-lane conversions per 32 values.
  void round_x(int64_t M, int64_t K) {
    mlir::OpBuilder::InsertionGuard g(b_);
    auto rows = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(M), idx(1));
    b_.setInsertionPointToStart(rows.getBody());
    auto cols = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(K), idx(kStep));
    b_.setInsertionPointToStart(cols.getBody());
    Value m = rows.getInductionVar(), k = cols.getInductionVar(), c0 = idx(0);
    auto half = [&](Value kk) {
      Value v = mlir::vector::LoadOp::create(b_, loc_, vec(kLanes, b_.getF32Type()), op_->getOperand(0),
                                             indices(0, m, c0, kk));
      return intrinsic("llvm.x86.avx512bf16.cvtneps2bf16.512", vec(kLanes, b_.getBF16Type()), {v});
    };
    Value lo = half(k), hi = half(mlir::arith::AddIOp::create(b_, loc_, k, idx(kLanes)));
    llvm::SmallVector<int64_t> all;
    for (int64_t i = 0; i < kStep; ++i) all.push_back(i);
    Value both = mlir::vector::ShuffleOp::create(b_, loc_, lo, hi, all);
    mlir::vector::StoreOp::create(b_, loc_, both, xb_, mlir::ValueRange{m, k});
  }

  // One tile: tm rows of x (from m0) times tn rows of W (from n0).
  void emit_tile(Value m0, Value n0, int64_t K, int64_t tm) {
    const int64_t tn = plan_.tn;
    auto f32v = vec(kLanes, b_.getF32Type());
    auto bf16v = vec(kStep, b_.getBF16Type());
    Value zero = mlir::arith::ConstantOp::create(b_, loc_, mlir::DenseElementsAttr::get(f32v, b_.getF32FloatAttr(0)));
    std::vector<Value> m{m0}, n{n0};
    for (int64_t i = 1; i < tm; ++i) m.push_back(mlir::arith::AddIOp::create(b_, loc_, m0, idx(i)));
    for (int64_t j = 1; j < tn; ++j) n.push_back(mlir::arith::AddIOp::create(b_, loc_, n0, idx(j)));
    llvm::SmallVector<Value> init(static_cast<size_t>(tm * tn), zero);
    auto ks = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(K), idx(kStep), init);
    {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(ks.getBody());
      Value k = ks.getInductionVar(), c0 = idx(0);
      std::vector<Value> x, w;
      for (int64_t i = 0; i < tm; ++i)
        x.push_back(mlir::vector::LoadOp::create(b_, loc_, bf16v, xb_, mlir::ValueRange{m[size_t(i)], k}));
      for (int64_t j = 0; j < tn; ++j)
        w.push_back(mlir::vector::LoadOp::create(b_, loc_, bf16v, op_->getOperand(1), indices(1, c0, n[size_t(j)], k)));
      llvm::SmallVector<Value> acc;
      for (int64_t i = 0; i < tm; ++i)
        for (int64_t j = 0; j < tn; ++j)
          acc.push_back(intrinsic("llvm.x86.avx512bf16.dpbf16ps.512", f32v,
                                  {ks.getRegionIterArgs()[size_t(i * tn + j)], x[size_t(i)], w[size_t(j)]}));
      mlir::scf::YieldOp::create(b_, loc_, acc);
    }
    Value sums = sum_lanes(llvm::SmallVector<Value>(ks.getResults().begin(), ks.getResults().end()));
    // out[m, n] += sums, tn contiguous outputs per row where out's last index is n.
    Value out = op_.getDpsInitOperand(0)->get();
    const mlir::AffineMap out_map = op_.getIndexingMapsArray()[2];
    const bool n_last = llvm::cast<mlir::AffineDimExpr>(out_map.getResults().back()).getPosition() == 1;
    Value c0 = idx(0);
    for (int64_t i = 0; i < tm; ++i) {
      if (n_last && tn > 1) {
        Value row = mlir::vector::ExtractStridedSliceOp::create(b_, loc_, sums, llvm::ArrayRef<int64_t>{i * tn},
                                                                llvm::ArrayRef<int64_t>{tn}, llvm::ArrayRef<int64_t>{1});
        llvm::SmallVector<Value> at = indices(2, m[size_t(i)], n[0], c0);
        Value old = mlir::vector::LoadOp::create(b_, loc_, row.getType(), out, at);
        mlir::vector::StoreOp::create(b_, loc_, mlir::arith::AddFOp::create(b_, loc_, old, row), out, at);
        continue;
      }
      for (int64_t j = 0; j < tn; ++j) {
        Value s = mlir::vector::ExtractOp::create(b_, loc_, sums, i * tn + j);
        llvm::SmallVector<Value> at = indices(2, m[size_t(i)], n[size_t(j)], c0);
        Value old = mlir::memref::LoadOp::create(b_, loc_, out, at);
        mlir::memref::StoreOp::create(b_, loc_, mlir::arith::AddFOp::create(b_, loc_, old, s), out, at);
      }
    }
  }

  // The lane sums of P = acc.size() accumulators (a power of two <= 16) as
  // lanes 0..P-1 of one vector, accumulator p in lane p. Pairs of vectors
  // holding g groups of s partial sums become one of 2g groups of s / 2
  // (two shuffles and an add: each group's halves added, a's groups first)
  // until one vector is left; its groups' halves are then added in place
  // down to one lane each. 16 accumulators: 15 adds and 30 shuffles, where
  // a horizontal reduction each took 4 adds and 4 shuffles.
  Value sum_lanes(llvm::SmallVector<Value> v) {
    int64_t g = 1, s = kLanes;
    while (v.size() > 1) {
      llvm::SmallVector<Value> next;
      for (size_t p = 0; p + 1 < v.size(); p += 2) {
        llvm::SmallVector<int64_t> lo, hi;
        for (int64_t G = 0; G < 2 * g; ++G) {
          const int64_t base = (G < g ? 0 : kLanes) + (G % g) * s;
          for (int64_t t = 0; t < s / 2; ++t) {
            lo.push_back(base + t);
            hi.push_back(base + s / 2 + t);
          }
        }
        Value a = mlir::vector::ShuffleOp::create(b_, loc_, v[p], v[p + 1], lo);
        Value c = mlir::vector::ShuffleOp::create(b_, loc_, v[p], v[p + 1], hi);
        next.push_back(mlir::arith::AddFOp::create(b_, loc_, a, c));
      }
      v = next;
      g *= 2;
      s /= 2;
    }
    Value x = v[0];
    while (s > 1) {
      llvm::SmallVector<int64_t> lo, hi;
      for (int64_t G = 0; G < g; ++G)
        for (int64_t t = 0; t < s / 2; ++t) {
          lo.push_back(G * s + t);
          hi.push_back(G * s + s / 2 + t);
        }
      for (int64_t pad = static_cast<int64_t>(lo.size()); pad < kLanes; ++pad) {
        lo.push_back(pad);
        hi.push_back(pad);
      }
      x = mlir::arith::AddFOp::create(b_, loc_, mlir::vector::ShuffleOp::create(b_, loc_, x, x, lo),
                                      mlir::vector::ShuffleOp::create(b_, loc_, x, x, hi));
      s /= 2;
    }
    return x;
  }

  mlir::linalg::MatmulOp op_;
  Plan plan_;
  mlir::OpBuilder b_;
  mlir::Location loc_;
  Value xb_;  // x rounded to bf16, [M, K]
};

class Bf16DotKernelsPass : public mlir::PassWrapper<Bf16DotKernelsPass, mlir::OperationPass<mlir::ModuleOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Bf16DotKernelsPass)
  llvm::StringRef getArgument() const override { return "radix-bf16-dot-kernels"; }
  llvm::StringRef getDescription() const override {
    return "f32 x bf16 products as AVX-512 BF16 vdpbf16ps loops (x rounded to bf16)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::LLVM::LLVMDialect, mlir::memref::MemRefDialect,
                    mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::MatmulOp> ops;
    getOperation().walk([&](mlir::linalg::MatmulOp op) {
      if (op->hasAttr(kBf16KernelAttr)) ops.push_back(op);
    });
    for (mlir::linalg::MatmulOp op : ops) {
      auto plan_attr = op->getAttrOfType<mlir::DenseI64ArrayAttr>(kBf16KernelAttr);
      op->removeAttr(kBf16KernelAttr);
      if (!plan_attr || plan_attr.size() != 3) continue;
      llvm::ArrayRef<int64_t> p = plan_attr.asArrayRef();
      if (p[0] >= 1 && p[1] >= 1) Bf16KernelBuilder(op, Plan{p[0], p[1], p[2] != 0}).build();
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_bf16_dot_kernels_pass() { return std::make_unique<Bf16DotKernelsPass>(); }

}  // namespace radix
