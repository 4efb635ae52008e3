// Q8_0x16 / Q4_0x16 weights times f32 activations (loops (m, R, i, kb, g,
// t), m absent for one row of x; inputs x [M, KB, 8, 4] (Q8_0) or x's block
// halves [M, KB, 4, 4] twice (Q4_0: elements 4g + t and 16 + 4g + t), W's
// bytes [N/16, KB, 8 or 4, 16, 4], W's scales f16 [N/16, KB, 16]; output
// [M, N/16, 16]).
//
// Each 64 bytes of W are 4 bytes (t) of 16 rows (i) side by side, so a
// vector of L bytes widened to L f32 lanes holds L/4 rows x 4 values of
// one row each; x's matching 4 values are one 128-bit broadcast
// (vbroadcastf32x4) against all of them. The lanes are partial sums
// (row, t): a block's products go to per-block accumulators in two chains
// (Q8_0: even and odd byte groups; Q4_0: low and high nibbles), which are
// scaled once per block by the rows' scales put in the same (row, t) order
// (one permute per vector) and added to the tile's totals. Q4_0's nibble - 8
// is nibble alone plus -8 * sum(x) of the block (one vector per block of x,
// added before the scaling), so a nibble costs a mask or a shift and its
// conversion. After the blocks, the 4 partial sums of each row are added
// as a shuffle tree whose result is the rows in order: 16 (AVX-512) or 8
// (AVX2, two passes over the row group) outputs per store.
// Per 64 bytes of Q8_0 (16 rows x 4): 4 widening loads, 4 conversions and
// 4 FMAs; no horizontal sums inside the loop, no rewriting of W.
//
// Tiles: one row group (16 rows: one forward stream of W), over the threads
// when the plan says so, each row of x in turn (at most
// kQuantizedDotMaxRows of them: larger products dequantize W instead).
#include "radix/backends/cpu/f32_rows_kernel.h"

#include <vector>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "radix/backends/cpu/kernel_loops.h"

namespace radix {

namespace {

using mlir::Value;

class F32RowsKernelBuilder {
 public:
  F32RowsKernelBuilder(mlir::linalg::GenericOp op, const F32RowsKernelPlan& plan)
      : op_(op), plan_(plan), b_(op), loc_(op.getLoc()), w_op_(plan.q8 ? 1 : 2) {}

  bool build() {
    llvm::SmallVector<int64_t> r = op_.getStaticLoopRanges();
    if (r.size() != 5 && r.size() != 6) return false;
    if (plan_.lanes != 16 && plan_.lanes != 8) return false;
    has_m_ = r.size() == 6;
    M_ = has_m_ ? r[0] : 1;
    const int64_t NR = r[has_m_ ? 1 : 0];
    KB_ = r[has_m_ ? 3 : 2];
    const int64_t steps = plan_.q8 ? 8 : 4;
    auto shape_is = [&](int i, llvm::ArrayRef<int64_t> want, mlir::Type et) {
      auto mt = llvm::dyn_cast<mlir::MemRefType>(op_->getOperand(unsigned(i)).getType());
      return mt && mt.isLastDimUnitStride() && mt.getShape() == want && mt.getElementType() == et;
    };
    llvm::SmallVector<int64_t> xs, outs;
    if (has_m_) xs = outs = {M_};
    xs.append({KB_, steps, 4});
    outs.append({NR, 16});
    const int out = w_op_ + 2;
    mlir::Type f32 = b_.getF32Type(), i8 = b_.getI8Type(), f16 = b_.getF16Type();
    if (op_.getNumDpsInputs() != unsigned(out) || op_.getNumDpsInits() != 1 || !op_.hasPureBufferSemantics() ||
        !shape_is(0, xs, f32) || (!plan_.q8 && !shape_is(1, xs, f32)) || !shape_is(w_op_, {NR, KB_, steps, 16, 4}, i8) ||
        !shape_is(w_op_ + 1, {NR, KB_, 16}, f16) || !shape_is(out, outs, f32))
      return false;
    auto body = [&](mlir::OpBuilder& b, Value r0) {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
      auto rows = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(M_), idx(1));
      b_.setInsertionPointToStart(rows.getBody());
      for (int64_t p = 0; p < 16 / plan_.lanes; ++p) emit_pass(rows.getInductionVar(), r0, p);
    };
    emit_tile_loop(b_, loc_, NR, plan_.parallel && NR > 1, body);
    op_.erase();
    return true;
  }

 private:
  Value idx(int64_t v) { return mlir::arith::ConstantIndexOp::create(b_, loc_, v); }
  Value operand(int i) { return op_->getOperand(static_cast<unsigned>(i)); }
  mlir::VectorType vec(int64_t n, mlir::Type et) { return mlir::VectorType::get({n}, et); }
  Value splat(mlir::VectorType t, mlir::TypedAttr v) { return splat_constant(b_, loc_, t, v); }
  llvm::SmallVector<Value> at_m(Value m, llvm::ArrayRef<Value> rest) { return row_indices(has_m_, m, rest); }
  Value shuffle(Value a, Value b, llvm::ArrayRef<int64_t> mask) {
    return mlir::vector::ShuffleOp::create(b_, loc_, a, b, mask);
  }
  Value add(Value a, Value b) { return mlir::arith::AddFOp::create(b_, loc_, a, b); }
  Value fma(Value a, Value b, Value c) { return mlir::vector::FMAOp::create(b_, loc_, a, b, c); }

  // x's 4 values of byte group g (half 1: Q4_0's elements 16 + 4g..) at
  // (m, kb), repeated over L lanes (one 128-bit broadcast).
  Value x_pattern(int half, Value m, Value kb, int64_t g) {
    Value v = mlir::vector::LoadOp::create(b_, loc_, vec(4, b_.getF32Type()), operand(half), at_m(m, {kb, idx(g), idx(0)}));
    llvm::SmallVector<int64_t> mask;
    for (int64_t l = 0; l < plan_.lanes; ++l) mask.push_back(l % 4);
    return shuffle(v, v, mask);
  }

  // Rows 16 r0 + L p .. + L of x's row m: 4 vectors of L/4 rows x 4 partial
  // sums over the blocks, then summed into one vector of the L rows.
  void emit_pass(Value m, Value r0, int64_t p) {
    const int64_t L = plan_.lanes, q = L / 4;
    mlir::Type f32 = b_.getF32Type(), i32 = b_.getI32Type();
    auto vf = vec(L, f32), vi = vec(L, i32), vb = vec(L, b_.getI8Type());
    Value zero = splat(vf, b_.getF32FloatAttr(0));
    llvm::SmallVector<Value> init(4, zero);
    auto blocks = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(KB_), idx(1), init);
    {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(blocks.getBody());
      Value kb = blocks.getInductionVar();
      llvm::SmallVector<Value> total(blocks.getRegionIterArgs().begin(), blocks.getRegionIterArgs().end());
      // chain[c][j]: this block's partial sums of vector j (rows L p + q j ..).
      std::vector<std::vector<Value>> chain(2, std::vector<Value>(4));
      auto accumulate = [&](int c, size_t j, Value w, Value x) {
        chain[size_t(c)][j] = chain[size_t(c)][j] ? fma(w, x, chain[size_t(c)][j])
                                                  : mlir::arith::MulFOp::create(b_, loc_, w, x).getResult();
      };
      auto w_bytes = [&](int64_t grp, size_t j) {
        return mlir::vector::LoadOp::create(b_, loc_, vb, operand(w_op_),
                                            mlir::ValueRange{r0, kb, idx(grp), idx(L * p + q * int64_t(j)), idx(0)})
            .getResult();
      };
      Value xsum;  // Q4_0: the block's sum of x, as (t) partial sums
      if (plan_.q8) {
        for (int64_t grp = 0; grp < 8; ++grp) {
          Value x = x_pattern(0, m, kb, grp);
          for (size_t j = 0; j < 4; ++j)
            accumulate(int(grp % 2), j, mlir::arith::SIToFPOp::create(b_, loc_, vf, w_bytes(grp, j)), x);
        }
      } else {
        Value mask = splat(vi, b_.getI32IntegerAttr(15)), four = splat(vi, b_.getI32IntegerAttr(4));
        for (int64_t grp = 0; grp < 4; ++grp) {
          Value xl = x_pattern(0, m, kb, grp), xh = x_pattern(1, m, kb, grp);
          Value both = add(xl, xh);
          xsum = xsum ? add(xsum, both) : both;
          for (size_t j = 0; j < 4; ++j) {
            Value bytes = mlir::arith::ExtUIOp::create(b_, loc_, vi, w_bytes(grp, j));
            Value hi = mlir::arith::ShRUIOp::create(b_, loc_, bytes, four);
            Value lo = mlir::arith::AndIOp::create(b_, loc_, bytes, mask);
            accumulate(0, j, mlir::arith::UIToFPOp::create(b_, loc_, vf, lo), xl);
            accumulate(1, j, mlir::arith::UIToFPOp::create(b_, loc_, vf, hi), xh);
          }
        }
        xsum = mlir::arith::MulFOp::create(b_, loc_, xsum, splat(vf, b_.getF32FloatAttr(-8)));
      }
      // The rows' scales in the lanes' (row, t) order: lane l of vector j
      // is row q j + l / 4.
      Value s = mlir::arith::ExtFOp::create(
          b_, loc_, vf,
          mlir::vector::LoadOp::create(b_, loc_, vec(L, b_.getF16Type()), operand(w_op_ + 1), mlir::ValueRange{r0, kb, idx(L * p)})
              .getResult());
      for (size_t j = 0; j < 4; ++j) {
        llvm::SmallVector<int64_t> rows;
        for (int64_t l = 0; l < L; ++l) rows.push_back(q * int64_t(j) + l / 4);
        Value sums = add(chain[0][j], chain[1][j]);
        if (xsum) sums = add(sums, xsum);
        total[j] = fma(sums, shuffle(s, s, rows), total[j]);
      }
      mlir::scf::YieldOp::create(b_, loc_, total);
    }
    // Pairs of vectors (2q rows x 4 partials) become one of 4q = L rows:
    // the sum of the even and the odd lanes of the pair, twice.
    llvm::SmallVector<int64_t> even, odd;
    for (int64_t l = 0; l < L; ++l) {
      even.push_back(2 * l);
      odd.push_back(2 * l + 1);
    }
    auto fold = [&](Value a, Value b) { return add(shuffle(a, b, even), shuffle(a, b, odd)); };
    Value rows = fold(fold(blocks.getResult(0), blocks.getResult(1)), fold(blocks.getResult(2), blocks.getResult(3)));
    Value out = op_.getDpsInitOperand(0)->get();
    llvm::SmallVector<Value> where = at_m(m, {r0, idx(L * p)});
    if (!plan_.overwrite) rows = add(mlir::vector::LoadOp::create(b_, loc_, vf, out, where), rows);
    mlir::vector::StoreOp::create(b_, loc_, rows, out, where);
  }

  mlir::linalg::GenericOp op_;
  F32RowsKernelPlan plan_;
  mlir::OpBuilder b_;
  mlir::Location loc_;
  int w_op_;  // W's operand (its scales follow, then the output)
  bool has_m_ = true;
  int64_t M_ = 1, KB_ = 0;
};

}  // namespace

bool build_f32_rows_kernel(mlir::linalg::GenericOp op, const F32RowsKernelPlan& plan) {
  return F32RowsKernelBuilder(op, plan).build();
}

}  // namespace radix
