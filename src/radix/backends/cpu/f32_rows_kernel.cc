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
// when the plan says so, each row of x in turn (decode steps: one or two
// rows, see int8_kernel_plan). Prompts (plan.prompt) dequantize each row
// group once into a stack buffer and run tiles of 4 (AVX-512) or 3 rows of
// x against it: see build_prompt. Prompts in plain Q8_0 / Q4_0 rows
// (plan.plain: W [N/16, 16, KB, 8 or 4, 4]) fill the same buffer from 16
// plain rows, rearranged into the lanes' order (dequantize_plain_block).
#include "radix/backends/cpu/f32_rows_kernel.h"

#include <algorithm>
#include <vector>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "radix/backends/cpu/kernel_loops.h"

namespace radix {

namespace {

using mlir::Value;

// A prompt's dequantized blocks per chunk (and so its stack buffer): 128
// blocks, 4096 elements of k, 256 KiB of f32 for 16 rows (the integer
// kernels' cap on their tiles' stack buffers); a longer k runs in chunks,
// each adding its sums to the output.
constexpr int64_t kPromptChunkBlocks = 128;
// A prompt's rows of x per block (see build_prompt): as many as fit in
// kPromptBlockBytes, at least kPromptMinBlockRows; a multiple of 12 (whole
// tiles of 4 and of 3 rows).
constexpr int64_t kPromptBlockBytes = int64_t{8} << 20, kPromptMinBlockRows = 256;

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
    const llvm::SmallVector<int64_t> w_shape = plan_.plain ? llvm::SmallVector<int64_t>{NR, 16, KB_, steps, 4}
                                                           : llvm::SmallVector<int64_t>{NR, KB_, steps, 16, 4};
    const llvm::SmallVector<int64_t> s_shape =
        plan_.plain ? llvm::SmallVector<int64_t>{NR, 16, KB_} : llvm::SmallVector<int64_t>{NR, KB_, 16};
    if (op_.getNumDpsInputs() != unsigned(out) || op_.getNumDpsInits() != 1 || !op_.hasPureBufferSemantics() ||
        !shape_is(0, xs, f32) || (!plan_.q8 && !shape_is(1, xs, f32)) || !shape_is(w_op_, w_shape, i8) ||
        !shape_is(w_op_ + 1, s_shape, f16) || !shape_is(out, outs, f32))
      return false;
    if (plan_.plain && !(plan_.prompt && has_m_)) return false;  // plain rows: prompts only
    if (plan_.prompt && has_m_) {
      build_prompt(NR);
      op_.erase();
      return true;
    }
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

  // W's bytes of vector j (L/4 rows x 4 bytes: rows 16 r0 + L p + L/4 j ..)
  // in byte group grp of block kb.
  Value w_bytes(Value r0, Value kb, int64_t grp, int64_t p, int64_t j) {
    const int64_t L = plan_.lanes;
    return mlir::vector::LoadOp::create(b_, loc_, vec(L, b_.getI8Type()), operand(w_op_),
                                        mlir::ValueRange{r0, kb, idx(grp), idx(L * p + L / 4 * j), idx(0)});
  }

  // Q4_0 bytes' low and high nibbles as f32 lanes.
  std::pair<Value, Value> nibbles(Value bytes) {
    const int64_t n = llvm::cast<mlir::VectorType>(bytes.getType()).getNumElements();
    auto vi = vec(n, b_.getI32Type()), vf = vec(n, b_.getF32Type());
    Value wide = mlir::arith::ExtUIOp::create(b_, loc_, vi, bytes);
    Value lo = mlir::arith::AndIOp::create(b_, loc_, wide, splat(vi, b_.getI32IntegerAttr(15)));
    Value hi = mlir::arith::ShRUIOp::create(b_, loc_, wide, splat(vi, b_.getI32IntegerAttr(4)));
    return {mlir::arith::UIToFPOp::create(b_, loc_, vf, lo), mlir::arith::UIToFPOp::create(b_, loc_, vf, hi)};
  }

  // Block kb's scales of rows 16 r0 + L p .. in the lanes' (row, t) order,
  // one vector per j: lane l of vector j is row L/4 j + l / 4.
  llvm::SmallVector<Value> lane_scales(Value r0, Value kb, int64_t p) {
    const int64_t L = plan_.lanes;
    Value s = mlir::arith::ExtFOp::create(
        b_, loc_, vec(L, b_.getF32Type()),
        mlir::vector::LoadOp::create(b_, loc_, vec(L, b_.getF16Type()), operand(w_op_ + 1), mlir::ValueRange{r0, kb, idx(L * p)})
            .getResult());
    llvm::SmallVector<Value> out;
    for (int64_t j = 0; j < 4; ++j) {
      llvm::SmallVector<int64_t> rows;
      for (int64_t l = 0; l < L; ++l) rows.push_back(L / 4 * j + l / 4);
      out.push_back(shuffle(s, s, rows));
    }
    return out;
  }

  // Rows 16 r0 + L p .. + L of x's row m: 4 vectors of L/4 rows x 4 partial
  // sums over the blocks, then summed into one vector of the L rows.
  void emit_pass(Value m, Value r0, int64_t p) {
    const int64_t L = plan_.lanes;
    auto vf = vec(L, b_.getF32Type());
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
      Value xsum;  // Q4_0: the block's sum of x, as (t) partial sums
      if (plan_.q8) {
        for (int64_t grp = 0; grp < 8; ++grp) {
          Value x = x_pattern(0, m, kb, grp);
          for (size_t j = 0; j < 4; ++j)
            accumulate(int(grp % 2), j, mlir::arith::SIToFPOp::create(b_, loc_, vf, w_bytes(r0, kb, grp, p, int64_t(j))), x);
        }
      } else {
        for (int64_t grp = 0; grp < 4; ++grp) {
          Value xl = x_pattern(0, m, kb, grp), xh = x_pattern(1, m, kb, grp);
          Value both = add(xl, xh);
          xsum = xsum ? add(xsum, both) : both;
          for (size_t j = 0; j < 4; ++j) {
            auto [lo, hi] = nibbles(w_bytes(r0, kb, grp, p, int64_t(j)));
            accumulate(0, j, lo, xl);
            accumulate(1, j, hi, xh);
          }
        }
        xsum = mlir::arith::MulFOp::create(b_, loc_, xsum, splat(vf, b_.getF32FloatAttr(-8)));
      }
      llvm::SmallVector<Value> s = lane_scales(r0, kb, p);
      for (size_t j = 0; j < 4; ++j) {
        Value sums = add(chain[0][j], chain[1][j]);
        if (xsum) sums = add(sums, xsum);
        total[j] = fma(sums, s[j], total[j]);
      }
      mlir::scf::YieldOp::create(b_, loc_, total);
    }
    Value rows = fold_rows(blocks.getResult(0), blocks.getResult(1), blocks.getResult(2), blocks.getResult(3));
    Value out = op_.getDpsInitOperand(0)->get();
    llvm::SmallVector<Value> where = at_m(m, {r0, idx(L * p)});
    if (!plan_.overwrite) rows = add(mlir::vector::LoadOp::create(b_, loc_, vf, out, where), rows);
    mlir::vector::StoreOp::create(b_, loc_, rows, out, where);
  }

  // ---- Prompts -------------------------------------------------------------
  // Per row group: blocks of W dequantized into `buf` [CB * 32, L] in the
  // lanes' (row, t) order, (nibble - 8) * d or byte * d exactly as
  // dequantize() computes them; row e * 4 + j of block kb's 32 holds vector j
  // of x's elements 4e .. 4e + 3 (Q4_0: e < 4 low nibbles, e >= 4 high ones).
  // Then tiles of tm rows of x: per block and e, tm 128-bit broadcasts of x
  // and 4 loads of the buffer against 4 tm accumulators: FMAs only, W's
  // widening and scaling paid once per group rather than per row of x.
  void build_prompt(int64_t NR) {
    const int64_t L = plan_.lanes, CB = std::min(KB_, kPromptChunkBlocks);
    auto buf_type = mlir::MemRefType::get({CB * 32, L}, b_.getF32Type());
    const bool parallel = plan_.parallel && NR > 1;
    // As the integer kernels' tile buffers: once per thread (an alloca_scope
    // in a parallel body), or once before a sequential loop.
    auto alloc = [&] { return mlir::memref::AllocaOp::create(b_, loc_, buf_type, b_.getI64IntegerAttr(64)).getResult(); };
    Value shared = parallel ? Value() : alloc();
    auto body = [&](mlir::OpBuilder& b, Value r0) {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
      Value buf = shared;
      if (parallel) {
        enter_alloca_scope(b_, loc_);
        buf = alloc();
      }
      for (int64_t p = 0; p < 16 / L; ++p) {
        if (KB_ <= CB) {
          emit_prompt_chunk(r0, p, buf, idx(0), idx(KB_), Value());
          continue;
        }
        auto chunks = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(KB_), idx(CB));
        mlir::OpBuilder::InsertionGuard cg(b_);
        b_.setInsertionPointToStart(chunks.getBody());
        Value kc = chunks.getInductionVar();
        Value ub = mlir::arith::MinSIOp::create(b_, loc_, mlir::arith::AddIOp::create(b_, loc_, kc, idx(CB)), idx(KB_));
        Value first = mlir::arith::CmpIOp::create(b_, loc_, mlir::arith::CmpIPredicate::eq, kc, idx(0));
        emit_prompt_chunk(r0, p, buf, kc, ub, first);
      }
    };
    // Long prompts in blocks of rows of x whose rows stay in the last-level
    // cache while every row group reads them (each block dequantizes the
    // groups again: a few % at 256 rows). Measured on Zen 5, one core,
    // x[2048,4096]·W[2048,4096]ᵀ Q8_0x16 (x: 32 MiB) 103 -> 112 GFLOP/s, two
    // cores 203 -> 221 (the f32 matmul 209-216).
    const int64_t mb = std::max<int64_t>(kPromptMinBlockRows, kPromptBlockBytes / (KB_ * 32 * 4)) / 12 * 12;
    auto tiles = [&](Value begin, int64_t rows) {
      rows_begin_ = begin;
      rows_count_ = rows;
      emit_tile_loop(b_, loc_, NR, parallel, body);
    };
    if (M_ <= mb) {
      tiles(idx(0), M_);
      return;
    }
    const int64_t whole = M_ / mb * mb;
    {
      auto blocks = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(whole), idx(mb));
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(blocks.getBody());
      tiles(blocks.getInductionVar(), mb);
    }
    if (M_ > whole) tiles(idx(whole), M_ - whole);
  }

  // Row index kl * 32 + c of the buffer.
  Value buf_row(Value kl, int64_t c) {
    return mlir::arith::AddIOp::create(b_, loc_, mlir::arith::MulIOp::create(b_, loc_, kl, idx(32)), idx(c));
  }

  // Blocks [kc, ub) of rows 16 r0 + L p ..: dequantized, then every row of
  // x against them. `first`: the chunk starting at block 0 (null: the only
  // chunk).
  void emit_prompt_chunk(Value r0, int64_t p, Value buf, Value kc, Value ub, Value first) {
    const int64_t L = plan_.lanes;
    {
      auto blocks = mlir::scf::ForOp::create(b_, loc_, kc, ub, idx(1));
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(blocks.getBody());
      Value kb = blocks.getInductionVar(), kl = mlir::arith::SubIOp::create(b_, loc_, kb, kc);
      if (plan_.plain)
        dequantize_plain_block(r0, p, kb, kl, buf);
      else
        dequantize_x16_block(r0, p, kb, kl, buf);
    }
    // Rows of x per tile: 4 on 32 registers (16 accumulators), 3 on 16 (12:
    // all 16 in use with x's 3 and W's vector, no spills). Measured on Zen 5,
    // one core, [128,768]·W[2048,768]ᵀ GFLOP/s (the f32 matmul 106-113):
    // AVX-512 4 / 5 / 6 rows 109-111 alike; Zen 3's code there 2 / 3 / 4 rows
    // 101 / 108-110 / 52 (spills).
    const int64_t tm = L == 16 ? 4 : 3, whole = rows_count_ / tm * tm;
    Value end = mlir::arith::AddIOp::create(b_, loc_, rows_begin_, idx(whole));
    if (whole > 0) {
      auto rows = mlir::scf::ForOp::create(b_, loc_, rows_begin_, end, idx(tm));
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(rows.getBody());
      emit_prompt_rows(rows.getInductionVar(), tm, r0, p, buf, kc, ub, first);
    }
    if (rows_count_ > whole) emit_prompt_rows(end, rows_count_ - whole, r0, p, buf, kc, ub, first);
  }

  // Block kb of x16 rows 16 r0 + L p .. + L into the buffer's rows kl * 32
  // .. (W's bytes are already in the lanes' order).
  void dequantize_x16_block(Value r0, int64_t p, Value kb, Value kl, Value buf) {
    auto vf = vec(plan_.lanes, b_.getF32Type());
    llvm::SmallVector<Value> s = lane_scales(r0, kb, p);
    Value minus8 = splat(vf, b_.getF32FloatAttr(-8));
    for (int64_t j = 0; j < 4; ++j) {
      auto put = [&](int64_t e, Value w) {
        mlir::vector::StoreOp::create(b_, loc_, mlir::arith::MulFOp::create(b_, loc_, w, s[size_t(j)]), buf,
                                      mlir::ValueRange{buf_row(kl, e * 4 + j), idx(0)});
      };
      for (int64_t grp = 0; grp < (plan_.q8 ? 8 : 4); ++grp) {
        Value bytes = w_bytes(r0, kb, grp, p, j);
        if (plan_.q8) {
          put(grp, mlir::arith::SIToFPOp::create(b_, loc_, vf, bytes));
          continue;
        }
        auto [lo, hi] = nibbles(bytes);
        put(grp, add(lo, minus8));
        put(4 + grp, add(hi, minus8));
      }
    }
  }

  // Block kb of plain rows 16 r0 + L p .. + L into the buffer's rows kl * 32
  // .., in the x16 lanes' order: row e * 4 + j holds elements 4e .. 4e + 3
  // of rows L/4 j .. L/4 j + L/4 - 1, 128 bits each. Each row's 32 values
  // are dequantized as two vectors of 16 (elements 0-15, 16-31: Q4_0's low
  // and high nibbles) and scaled by its block's scale, then L/4 rows at a
  // time their 128-bit pieces are transposed: on AVX-512 a 4 x 4 transpose
  // of 128-bit lanes (two vshuff64x2 or vinsertf64x4 per stored vector).
  void dequantize_plain_block(Value r0, int64_t p, Value kb, Value kl, Value buf) {
    const int64_t L = plan_.lanes, q = L / 4;
    auto v16 = vec(16, b_.getF32Type());
    Value minus8 = splat(v16, b_.getF32FloatAttr(-8));
    auto store = [&](int64_t e, int64_t j, Value v) {
      mlir::vector::StoreOp::create(b_, loc_, v, buf, mlir::ValueRange{buf_row(kl, e * 4 + j), idx(0)});
    };
    // 128-bit pieces: piece c of x (src 0) or y (src 1), in turn.
    auto pieces = [&](Value x, Value y, llvm::ArrayRef<std::pair<int, int64_t>> from) {
      llvm::SmallVector<int64_t> mask;
      for (auto [src, c] : from)
        for (int64_t t = 0; t < 4; ++t) mask.push_back(src * 16 + 4 * c + t);
      return shuffle(x, y, mask);
    };
    for (int64_t j = 0; j < 4; ++j) {
      // half[h][r]: row L p + q j + r's elements 16 h .. 16 h + 15.
      llvm::SmallVector<Value> half[2];
      for (int64_t r = 0; r < q; ++r) {
        Value i = idx(L * p + q * j + r);
        Value d = mlir::arith::ExtFOp::create(
            b_, loc_, b_.getF32Type(),
            mlir::memref::LoadOp::create(b_, loc_, operand(w_op_ + 1), mlir::ValueRange{r0, i, kb}).getResult());
        Value sd = mlir::vector::BroadcastOp::create(b_, loc_, v16, d);
        auto scale = [&](Value v) { return mlir::arith::MulFOp::create(b_, loc_, v, sd).getResult(); };
        auto bytes = [&](int64_t g) {
          return mlir::vector::LoadOp::create(b_, loc_, vec(16, b_.getI8Type()), operand(w_op_),
                                              mlir::ValueRange{r0, i, kb, idx(g), idx(0)})
              .getResult();
        };
        if (plan_.q8) {
          for (int64_t h = 0; h < 2; ++h) half[h].push_back(scale(mlir::arith::SIToFPOp::create(b_, loc_, v16, bytes(4 * h))));
          continue;
        }
        auto [lo, hi] = nibbles(bytes(0));
        half[0].push_back(scale(add(lo, minus8)));
        half[1].push_back(scale(add(hi, minus8)));
      }
      for (int64_t h = 0; h < 2; ++h) {
        const auto& R = half[h];
        if (L == 8) {
          for (int64_t c = 0; c < 4; ++c) store(4 * h + c, j, pieces(R[0], R[1], {{0, c}, {1, c}}));
          continue;
        }
        Value u0 = pieces(R[0], R[1], {{0, 0}, {0, 1}, {1, 0}, {1, 1}});
        Value u1 = pieces(R[0], R[1], {{0, 2}, {0, 3}, {1, 2}, {1, 3}});
        Value u2 = pieces(R[2], R[3], {{0, 0}, {0, 1}, {1, 0}, {1, 1}});
        Value u3 = pieces(R[2], R[3], {{0, 2}, {0, 3}, {1, 2}, {1, 3}});
        store(4 * h + 0, j, pieces(u0, u2, {{0, 0}, {0, 2}, {1, 0}, {1, 2}}));
        store(4 * h + 1, j, pieces(u0, u2, {{0, 1}, {0, 3}, {1, 1}, {1, 3}}));
        store(4 * h + 2, j, pieces(u1, u3, {{0, 0}, {0, 2}, {1, 0}, {1, 2}}));
        store(4 * h + 3, j, pieces(u1, u3, {{0, 1}, {0, 3}, {1, 1}, {1, 3}}));
      }
    }
  }

  // Rows m0 .. m0 + tm of x times the buffer's blocks [kc, ub).
  void emit_prompt_rows(Value m0, int64_t tm, Value r0, int64_t p, Value buf, Value kc, Value ub, Value first) {
    const int64_t L = plan_.lanes;
    auto vf = vec(L, b_.getF32Type());
    Value zero = splat(vf, b_.getF32FloatAttr(0));
    llvm::SmallVector<Value> m(static_cast<size_t>(tm), Value());
    for (int64_t r = 0; r < tm; ++r) m[size_t(r)] = mlir::arith::AddIOp::create(b_, loc_, m0, idx(r));
    auto blocks = mlir::scf::ForOp::create(b_, loc_, kc, ub, idx(1), llvm::SmallVector<Value>(size_t(4 * tm), zero));
    {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(blocks.getBody());
      Value kb = blocks.getInductionVar(), kl = mlir::arith::SubIOp::create(b_, loc_, kb, kc);
      llvm::SmallVector<Value> acc(blocks.getRegionIterArgs().begin(), blocks.getRegionIterArgs().end());
      for (int64_t e = 0; e < 8; ++e) {
        const int half = plan_.q8 ? 0 : int(e / 4);
        const int64_t grp = plan_.q8 ? e : e % 4;
        llvm::SmallVector<Value> x(static_cast<size_t>(tm), Value());
        for (int64_t r = 0; r < tm; ++r) x[size_t(r)] = x_pattern(half, m[size_t(r)], kb, grp);
        for (int64_t j = 0; j < 4; ++j) {
          Value w = mlir::vector::LoadOp::create(b_, loc_, vf, buf, mlir::ValueRange{buf_row(kl, e * 4 + j), idx(0)});
          for (int64_t r = 0; r < tm; ++r) acc[size_t(r * 4 + j)] = fma(w, x[size_t(r)], acc[size_t(r * 4 + j)]);
        }
      }
      mlir::scf::YieldOp::create(b_, loc_, acc);
    }
    Value out = op_.getDpsInitOperand(0)->get();
    for (int64_t r = 0; r < tm; ++r) {
      const unsigned a = unsigned(4 * r);
      Value rows = fold_rows(blocks.getResult(a), blocks.getResult(a + 1), blocks.getResult(a + 2), blocks.getResult(a + 3));
      llvm::SmallVector<Value> where = {m[size_t(r)], r0, idx(L * p)};
      if (!plan_.overwrite || first) {
        Value old = mlir::vector::LoadOp::create(b_, loc_, vf, out, where);
        if (plan_.overwrite) old = mlir::arith::SelectOp::create(b_, loc_, first, zero, old);
        rows = add(old, rows);
      }
      mlir::vector::StoreOp::create(b_, loc_, rows, out, where);
    }
  }

  // Four vectors of L/4 rows x 4 partial sums (vector j: rows j L/4 ..) as
  // one of the L rows in order: pairs' even and odd lanes added, twice.
  Value fold_rows(Value a0, Value a1, Value a2, Value a3) {
    llvm::SmallVector<int64_t> even, odd;
    for (int64_t l = 0; l < plan_.lanes; ++l) {
      even.push_back(2 * l);
      odd.push_back(2 * l + 1);
    }
    auto fold = [&](Value a, Value b) { return add(shuffle(a, b, even), shuffle(a, b, odd)); };
    return fold(fold(a0, a1), fold(a2, a3));
  }

  mlir::linalg::GenericOp op_;
  F32RowsKernelPlan plan_;
  mlir::OpBuilder b_;
  mlir::Location loc_;
  int w_op_;  // W's operand (its scales follow, then the output)
  bool has_m_ = true;
  int64_t M_ = 1, KB_ = 0;
  Value rows_begin_;        // a prompt's block of rows of x: its first row
  int64_t rows_count_ = 0;  // and how many
};

}  // namespace

bool build_f32_rows_kernel(mlir::linalg::GenericOp op, const F32RowsKernelPlan& plan) {
  return F32RowsKernelBuilder(op, plan).build();
}

}  // namespace radix
