// "radix-int8-dot-kernels": the integer-activation quantized products
// (trace/ops_quant.cc, marked radix.int8_dot with their format) that the
// schedule planned for integer kernels (radix.int8_kernel = [tm, tn,
// parallel, vnni, blocked, interleaved, wide, gfni]) become loops of x86 integer dot products.
//
// Such a product is y[m, n] += Σ_kb xd[m, kb] * wd[n, kb] * Σ_j xq[m, kb, j]
// * wq[n, kb, j] over blocks of 32 bytes. The vectorizer would widen every
// byte to i32 and multiply lane by lane; x86 has instructions that multiply
// 32 byte pairs and sum them in groups of four into eight i32 lanes at once:
// vpdpbusd (AVX-512 VNNI / AVX-VNNI), or vpmaddubsw + vpmaddwd (AVX2). Both
// take one unsigned and one signed operand, so a block is multiplied as
// |w| times x with w's sign (vpsignb): |w| * sign(x, w) = w * x, exact for
// every i8 w (|-128| is 128 as an unsigned byte) and x in [-127, 127] (the
// activation quantizer's range). Each block's eight i32 partial sums become
// f32 and are scaled into f32 accumulators (lane by lane: the horizontal
// sum happens once per output, at the end), as llama.cpp's Q8_0 dot does.
// Q4_0's weights are nibble - 8: its nibbles are unsigned as they are, so
// its blocks are dot(nibbles, x) - 8 * dot(1, x), the latter once per block
// of x for all tn weight rows (decode; see blocked below). The scales of 8
// (or 4, 2) blocks are loaded, widened (f16) and multiplied as one vector
// per tile row, and each block's broadcast from its lane: 8 vector
// instructions per block and weight row.
//
// Loops: the n axis in tiles of tn weight rows (an scf.forall over the
// tiles when the plan says parallel: the "lower" stage turns it into an
// OpenMP loop), then m in tiles of tm rows, then the blocks with tm x tn
// accumulators of eight lanes (blocks past the last whole step of 8, 4 or
// 2 one at a time), each step prefetching the same blocks of the next
// tile's rows; each tile's accumulators are summed together at the end
// (see store_sums).
//
// Blocked (a prompt: many rows of x, each weight tile read from cache once
// per row tile): before its blocks, a tile writes every block's scale
// product x scale * W scale to a stack buffer, eight blocks per vector
// multiply, and the block loop broadcasts them from memory (a load, where
// a lane broadcast from a register is a shuffle on the vector ports the
// products need); Q4_0's 8 * dot(1, x) terms leave the block loop too:
// 8 * x's block sums times x's scale are computed once per product (a
// buffer [m, kb]), and each tile starts its accumulators at minus their
// sum weighted by the same scale products. No prefetching (the next
// tile's rows are not next in memory order). Measured on Zen 3, one core,
// Q4_0 [128,768]·W[2048,768]ᵀ against the decode form: 1.14x for the
// scale buffer; moving the corrections out then gave 1.15x (1.23x once the
// tile's sums were combined as in store_sums).
//
// Interleaved (Q4_0 prompts, N a multiple of 8): the lanes of an
// accumulator are 8 weight rows instead of 8 partial sums of one (as
// llama.cpp's AVX2 Q4_0 GEMM over its 8-row repacked blocks). Each tile of
// 8 weight rows first rewrites its nibbles into a stack buffer, 4 bytes of
// each row side by side (interleave_weights), and every 4 bytes of x are
// then one broadcast multiplied with all 8 rows: no horizontal sums, the
// i16 pairs of a block's 8 groups summed exactly before one vpmaddwd, the
// scales applied as one vector of 8 rows (emit_interleaved_tile).
// Measured on Zen 3, one process, medians of 9: stories110M Q4_0 prefill
// 128 tokens 298 -> 507 tok/s on one core, 348 -> 739 on two; stories15M
// (k = 288, until then dequantized) 3045 -> 4527 and 6381 -> 9935.
//
// Q4_0x16 products (W's rows interleaved by 16 in memory) have a builder of
// their own (RowsKernelBuilder, int8_rows_kernel.cc): the interleaved tiles' lanes-as-rows
// form for decode and prompts, reading W as it is stored (Q8_0x16 decode on
// one thread, and with AVX2 on two: two row groups per tile, two streams
// through W; AVX2's Q4_0x16 decode prefetches the block 2 KiB ahead).
// With f32 activations ("q4_0x16_f32", "q8_0x16_f32") they widen W to f32
// in registers instead (f32_rows_kernel.cc).
//
// Q8_0 prompts in plain rows (N a multiple of 16: the plan's `interleaved`)
// run the same Q8_0x16 tiles: each tile of 16 weight rows is first
// rewritten into the x16 layout on the stack (gather_tile: 16 x 16 dword
// transposes, two blocks at a time), then read by every row tile of x.
// The row-per-accumulator form spends a horizontal sum per output and a
// scale product per block and output; measured on Zen 5 (one core, about
// half speed), stories110M Q8_0 prefill 128 tokens: 576 tok/s with it, 1281
// with the weights interleaved at load time (which slows decode: x16 rows
// streamed from memory read ~20% slower than the plain one-row tiles),
// 1343 with the tiles rewritten per call. Q8_0's signed bytes: with VNNI
// read as w + 128 by vpdpbusd (a correction per block of x); on AVX2 as
// |w| times x with w's sign (vpsignb), vpmaddubsw's pair sums at most
// 2 * 128 * 127, then vpmaddwd per group (two groups' i16 sums could
// overflow). Code for Zen 3 run on that Zen 5, [128,288]·W[768,288]ᵀ (k =
// 288, stories15M): 0.95-1.04x of dequantizing W to f32, where the
// row-per-accumulator form ran 0.80-0.84x.
//
// Wide (AVX-512 VNNI + BW, a 16-lane schedule; not the interleaved
// tiles): two consecutive blocks share a 512-bit register (emit_block_pairs),
// so each vpdpbusd, conversion and multiply-add covers 64 products instead
// of 32; the accumulators are 16 lanes, folded to 8 after the pairs.
//
// Operands are read through the op's own
// indexing maps, so a product with or without its m loop, and x's halves
// for Q4_0 (subviews of one buffer), need no special cases.
//
// Runs after bufferization. The schedule plans a kernel only on hosts with
// AVX2 (VNNI where the host has it); an op this pass does not recognize
// stays a linalg.generic and becomes plain loops (slow, still correct).
#include <optional>
#include <vector>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/f32_rows_kernel.h"
#include "radix/backends/cpu/int8_rows_kernel.h"
#include "radix/backends/cpu/kernel_loops.h"
#include "radix/trace/quantized_dot_marks.h"

namespace radix {

namespace {

constexpr const char* kInt8KernelAttr = "radix.int8_kernel";
// The output starts undefined (the schedule dropped its zero fill): the
// kernel stores its sums; an op left as it is gets its fill back.
constexpr const char* kInt8OverwriteAttr = "radix.int8_overwrite";
constexpr int64_t kLanes = 8;   // i32 / f32 lanes of a 256-bit register
constexpr int64_t kBlock = kInt8Block;

using mlir::Value;

// Which operand is what, by format (trace/ops_quant.cc's input order).
struct Roles {
  int x = 0, x_hi = -1, xd = 1, w = 2, wd = 3;  // -1: absent
};

std::optional<Roles> roles_of(llvm::StringRef format) {
  if (format == quantized_dot::kQ8_0) return Roles{0, -1, 1, 2, 3};
  if (format == quantized_dot::kInt8) return Roles{0, -1, 1, 2, -1};
  if (format == quantized_dot::kQ4_0) return Roles{0, 1, 2, 3, 4};
  return std::nullopt;
}

using Plan = Int8KernelPlan;

class KernelBuilder {
 public:
  KernelBuilder(mlir::linalg::GenericOp op, const Roles& roles, const Plan& plan)
      : op_(op), roles_(roles), plan_(plan), b_(op), loc_(op.getLoc()) {}

  // Replaces the op; false (nothing created) when its shape is not the one
  // the format implies.
  bool build() {
    llvm::SmallVector<int64_t> r = op_.getStaticLoopRanges();
    if (r.size() != 3 && r.size() != 4) return false;
    has_m_ = r.size() == 4;
    const int64_t M = has_m_ ? r[0] : 1, N = r[has_m_ ? 1 : 0], KB = r[has_m_ ? 2 : 1], J = r.back();
    n_ = N;
    const bool q4 = roles_.x_hi >= 0;
    if (J != (q4 ? kBlock / 2 : kBlock) || N % plan_.tn != 0 || M % plan_.tm != 0) return false;
    const unsigned inputs = static_cast<unsigned>(op_.getNumDpsInputs());
    const int expected = roles_.wd >= 0 ? roles_.wd + 1 : roles_.w + 1;
    if (inputs != static_cast<unsigned>(expected) || op_.getNumDpsInits() != 1) return false;
    if (!op_.hasPureBufferSemantics()) return false;
    // Every operand is read along its last dim as a vector (x's and W's
    // bytes, the scales of consecutive blocks): it must be contiguous there.
    for (mlir::Value v : op_->getOperands()) {
      auto mt = llvm::dyn_cast<mlir::MemRefType>(v.getType());
      if (!mt || !mt.isLastDimUnitStride()) return false;
    }

    Value zero = idx(0);
    const int64_t interleaved_rows = plan_.wide ? 2 * kLanes : kLanes;
    if (plan_.interleaved && !(q4 && plan_.blocked && plan_.tn == interleaved_rows && output_n_last()))
      plan_.interleaved = false;
    corr_ = nullptr;
    if (q4 && plan_.blocked) corr_ = fill_corrections(M, KB, /*scaled=*/!plan_.interleaved);
    const int64_t tiles = N / plan_.tn;
    const bool parallel = plan_.parallel && tiles > 1;
    // A blocked tile's stack buffers: once per thread for parallel tiles (an
    // alloca_scope in the loop body, whose allocations canonicalize hoists
    // to the OpenMP region's start), once before a sequential loop (an
    // alloca_scope in an scf.for body is inlined by canonicalize, its
    // allocations then repeated per tile without being released: 4000 tiles
    // of stories15M's classifier overflowed the stack).
    if (plan_.blocked && !parallel) alloc_tile_buffers(KB);
    auto body = [&](mlir::OpBuilder& b, Value tile) {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
      Value n0 = mlir::arith::MulIOp::create(b_, loc_, tile, idx(plan_.tn));
      if (plan_.blocked) {
        if (parallel) {
          enter_alloca_scope(b_, loc_);
          alloc_tile_buffers(KB);
        }
        if (plan_.interleaved) interleave_weights(n0, KB);
      }
      auto rows = mlir::scf::ForOp::create(b_, loc_, zero, idx(M), idx(plan_.tm));
      b_.setInsertionPointToStart(rows.getBody());
      if (plan_.interleaved) emit_interleaved_tile(rows.getInductionVar(), n0, KB);
      else emit_tile(rows.getInductionVar(), n0, KB);
    };
    emit_tile_loop(b_, loc_, tiles, parallel, body);
    if (corr_) mlir::memref::DeallocOp::create(b_, loc_, corr_);
    op_.erase();
    return true;
  }

 private:
  // The operand's indices at loop indices (m, n, kb, j) (m dropped when the
  // op has no m loop), through its indexing map (a projection).
  llvm::SmallVector<Value> indices(int operand, Value m, Value n, Value kb, Value j) {
    llvm::SmallVector<Value> loops;
    if (has_m_) loops.push_back(m);
    loops.append({n, kb, j});
    mlir::AffineMap map = op_.getIndexingMapsArray()[static_cast<size_t>(operand)];
    llvm::SmallVector<Value> out;
    for (mlir::AffineExpr e : map.getResults())
      out.push_back(loops[llvm::cast<mlir::AffineDimExpr>(e).getPosition()]);
    return out;
  }

  Value operand(int i) { return op_->getOperand(static_cast<unsigned>(i)); }

  Value idx(int64_t v) { return mlir::arith::ConstantIndexOp::create(b_, loc_, v); }

  Value load_vector(int operand_index, int64_t lanes, Value m, Value n, Value kb, Value j0) {
    auto vt = mlir::VectorType::get({lanes}, b_.getI8Type());
    return mlir::vector::LoadOp::create(b_, loc_, vt, operand(operand_index), indices(operand_index, m, n, kb, j0));
  }

  // A vector of type t with every lane v.
  Value splat(mlir::VectorType t, mlir::TypedAttr v) { return splat_constant(b_, loc_, t, v); }

  Value i8_splat(int64_t lanes, int64_t v) {
    return splat(mlir::VectorType::get({lanes}, b_.getI8Type()), b_.getI8IntegerAttr(v));
  }

  // base, base + 1, ..., base + count - 1 (a tile's rows).
  std::vector<Value> offsets(Value base, int64_t count) {
    std::vector<Value> out{base};
    for (int64_t i = 1; i < count; ++i) out.push_back(mlir::arith::AddIOp::create(b_, loc_, base, idx(i)));
    return out;
  }

  Value concat(Value lo, Value hi) {
    llvm::SmallVector<int64_t> mask;
    for (int64_t i = 0; i < kBlock; ++i) mask.push_back(i);
    return mlir::vector::ShuffleOp::create(b_, loc_, lo, hi, mask);
  }

  Value intrinsic(const char* name, mlir::Type result, mlir::ValueRange args) {
    return mlir::LLVM::CallIntrinsicOp::create(b_, loc_, result, b_.getStringAttr(name), args).getResult(0);
  }

  // Eight i32 sums of four byte products each: unsigned `a` times signed `s`.
  Value dot(Value a, Value s) {
    auto v8i32 = mlir::VectorType::get({kLanes}, b_.getI32Type());
    if (plan_.vnni) {
      return intrinsic("llvm.x86.avx512.vpdpbusd.256", v8i32, {splat(v8i32, b_.getI32IntegerAttr(0)), a, s});
    }
    auto v16i16 = mlir::VectorType::get({2 * kLanes}, b_.getI16Type());
    Value pairs = intrinsic("llvm.x86.avx2.pmadd.ub.sw", v16i16, {a, s});
    return intrinsic("llvm.x86.avx2.pmadd.wd", v8i32, {pairs, splat(v16i16, b_.getI16IntegerAttr(1))});
  }

  // Q4_0: W's block of row n as its 32 nibbles (0..15, unsigned), low
  // nibbles first, as x's halves are concatenated. The 16 bytes are loaded
  // into both halves of a register (vbroadcasti128), the upper half's
  // shifted down by 4 (vpsrlvd: per-dword shifts, the bits a dword shift
  // moves across bytes are masked off) and the nibbles masked: three
  // instructions, where a 16-byte load, a shift, an insert and the mask were
  // four. Measured on Zen 3 (one process, medians of 21), Q4_0 decode on one
  // core: stories15M 658 -> 706 and 708 -> 757 tok/s, stories110M 79.1 ->
  // 82.1 (nine rounds); two cores 15M 1001 -> 1011.
  Value nibbles(Value n, Value kb, Value c0) {
    Value bytes = load_vector(roles_.w, kBlock / 2, c0, n, kb, c0);
    llvm::SmallVector<int64_t> twice;
    for (int64_t i = 0; i < kBlock; ++i) twice.push_back(i % (kBlock / 2));
    Value both = mlir::vector::ShuffleOp::create(b_, loc_, bytes, bytes, twice);
    auto v8i32 = mlir::VectorType::get({kLanes}, b_.getI32Type());
    auto v32i8 = mlir::VectorType::get({kBlock}, b_.getI8Type());
    llvm::SmallVector<int32_t> shift(kLanes, 0);
    for (int64_t i = kLanes / 2; i < kLanes; ++i) shift[size_t(i)] = 4;
    Value shifts = mlir::arith::ConstantOp::create(b_, loc_, mlir::DenseElementsAttr::get(v8i32, llvm::ArrayRef<int32_t>(shift)));
    Value words = mlir::vector::BitCastOp::create(b_, loc_, v8i32, both);
    Value shifted = mlir::vector::BitCastOp::create(b_, loc_, v32i8, mlir::arith::ShRUIOp::create(b_, loc_, words, shifts));
    return mlir::arith::AndIOp::create(b_, loc_, shifted, i8_splat(kBlock, 15));
  }

  // Loads `lanes` consecutive scales from kb on (x's at row m, or W's at
  // row n) as f32.
  Value load_scales(int operand_index, int64_t lanes, Value m, Value n, Value kb, Value c0) {
    mlir::Value mem = operand(operand_index);
    mlir::Type et = llvm::cast<mlir::MemRefType>(mem.getType()).getElementType();
    Value v = mlir::vector::LoadOp::create(b_, loc_, mlir::VectorType::get({lanes}, et), mem,
                                           indices(operand_index, m, n, kb, c0));
    if (!et.isF32()) v = mlir::arith::ExtFOp::create(b_, loc_, mlir::VectorType::get({lanes}, b_.getF32Type()), v);
    return v;
  }

  // The one scale at block kb (x's at row m, or W's at row n) as f32.
  Value load_scale(int operand_index, Value m, Value n, Value kb) {
    Value c0 = idx(0);
    Value v = mlir::memref::LoadOp::create(b_, loc_, operand(operand_index), indices(operand_index, m, n, kb, c0));
    if (!v.getType().isF32()) v = mlir::arith::ExtFOp::create(b_, loc_, b_.getF32Type(), v);
    return v;
  }

  // One tile: tm rows of x (from m0) times tn rows of W (from n0), the
  // blocks stepped 8 (or 4, 2) at a time so that their scales are loaded,
  // widened and multiplied as vectors (one per row), each block's then
  // broadcast from its lane; the blocks past the last whole step (stories15M's
  // 9 blocks of 288) one at a time after them.
  void emit_tile(Value m0, Value n0, int64_t KB) {
    const int64_t tm = plan_.tm, tn = plan_.tn;
    // The largest step that divides KB, else the largest one that fits.
    int64_t unroll = 1;
    for (int64_t u : {8, 4, 2})
      if (KB % u == 0) {
        unroll = u;
        break;
      }
    for (int64_t u : {8, 4, 2})
      if (unroll == 1 && KB >= u) unroll = u;
    auto v8f32 = mlir::VectorType::get({kLanes}, b_.getF32Type());
    Value zero = splat(v8f32, b_.getF32FloatAttr(0));
    const std::vector<Value> m = offsets(m0, tm), n = offsets(n0, tn);
    llvm::SmallVector<Value> acc(static_cast<size_t>(tm * tn), zero);
    const int64_t whole = KB / unroll * unroll;
    if (scale_buf_) {
      // Q4_0's corrections start the accumulators (negated, lane by lane:
      // only the lanes' sum matters).
      auto sub = [&](llvm::SmallVector<Value> sums) {
        for (size_t p = 0; p < sums.size(); ++p) {
          Value v = sums[p];
          if (llvm::cast<mlir::VectorType>(v.getType()).getNumElements() != kLanes)
            v = mlir::vector::InsertStridedSliceOp::create(b_, loc_, v, zero, llvm::ArrayRef<int64_t>{0},
                                                           llvm::ArrayRef<int64_t>{1});
          acc[p] = mlir::arith::SubFOp::create(b_, loc_, acc[p], v);
        }
      };
      sub(fill_scales(m, n, 0, whole, unroll));
      if (whole < KB) sub(fill_scales(m, n, whole, KB, 1));
    }
    if (plan_.wide && unroll >= 2) {
      // The pairs in 16-lane accumulators, then each one's halves added
      // into its 8-lane accumulator (lane by lane: only the sum matters).
      auto v16f32 = mlir::VectorType::get({2 * kLanes}, b_.getF32Type());
      llvm::SmallVector<Value> wide(acc.size(), splat(v16f32, b_.getF32FloatAttr(0)));
      wide = emit_block_pairs(m, n, whole, unroll, wide);
      for (size_t p = 0; p < acc.size(); ++p) {
        Value halves[2];
        for (int64_t h = 0; h < 2; ++h)
          halves[h] = mlir::vector::ExtractStridedSliceOp::create(b_, loc_, wide[p], llvm::ArrayRef<int64_t>{h * kLanes},
                                                                  llvm::ArrayRef<int64_t>{kLanes},
                                                                  llvm::ArrayRef<int64_t>{1});
        acc[p] = mlir::arith::AddFOp::create(b_, loc_, acc[p],
                                             mlir::arith::AddFOp::create(b_, loc_, halves[0], halves[1]));
      }
    } else {
      acc = emit_blocks(m, n, 0, whole, unroll, acc);
    }
    if (whole < KB) acc = emit_blocks(m, n, whole, KB, 1, acc);
    store_sums(m, n, acc);
  }

  // Q4_0's weights are nibble - 8: corr[m, kb] = 8 * x's scale * the sum of
  // x's bytes in block kb, so that a tile subtracts sum_kb corr * W's scale
  // once (vectorized over kb) instead of 8 * x's sums per block and pair.
  // Not `scaled`: the i32 8 * sum alone (the interleaved tiles subtract it
  // before their sums become f32).
  Value fill_corrections(int64_t M, int64_t KB, bool scaled) {
    Value c0 = idx(0);
    auto f32 = b_.getF32Type();
    mlir::Type et = scaled ? mlir::Type(f32) : mlir::Type(b_.getI32Type());
    Value buf = mlir::memref::AllocOp::create(b_, loc_, mlir::MemRefType::get({M, KB}, et), b_.getI64IntegerAttr(32));
    auto rows = mlir::scf::ForOp::create(b_, loc_, c0, idx(M), idx(1));
    mlir::OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(rows.getBody());
    Value m = rows.getInductionVar();
    auto blocks = mlir::scf::ForOp::create(b_, loc_, c0, idx(KB), idx(1));
    b_.setInsertionPointToStart(blocks.getBody());
    Value kb = blocks.getInductionVar();
    Value x = concat(load_vector(roles_.x, kBlock / 2, m, c0, kb, c0), load_vector(roles_.x_hi, kBlock / 2, m, c0, kb, c0));
    // The same 8 * dot(1, x) as decode's per-block term, summed over its lanes.
    Value v = mlir::vector::ReductionOp::create(b_, loc_, mlir::vector::CombiningKind::ADD, dot(i8_splat(kBlock, 8), x));
    if (scaled) {
      Value f = mlir::arith::SIToFPOp::create(b_, loc_, f32, v);
      v = mlir::arith::MulFOp::create(b_, loc_, f, load_scale(roles_.xd, m, c0, kb));
    }
    mlir::memref::StoreOp::create(b_, loc_, v, buf, mlir::ValueRange{m, kb});
    return buf;
  }

  // Whether the output's last index is n (its tn sums of a row contiguous).
  bool output_n_last() {
    const mlir::AffineMap out_map = op_.getIndexingMapsArray()[op_.getNumDpsInputs()];
    return out_map.getNumResults() > 0 &&
           llvm::cast<mlir::AffineDimExpr>(out_map.getResults().back()).getPosition() == (has_m_ ? 1u : 0u);
  }

  // Q4_0 prompts, one tile of 8 weight rows from n0: the rows' nibbles
  // rewritten so that W's rows are the lanes (as llama.cpp repacks Q4_0
  // into 8 interleaved rows on AVX2 hosts, here per call and tile, into a
  // stack buffer that stays in L1 / L2 while all M rows of x pass over it).
  // wbuf_[kb, g] holds the 4 bytes of group g (values 4g..4g+3 of block kb)
  // of each of the 8 rows, row r's in dword r: the blocks' 32-byte nibble
  // vectors (one per row) as an 8 x 8 dword transpose (3 x 8 shuffles).
  // sbuf_[kb] holds the 8 rows' scales as f32. Wide (16 rows, 512-bit
  // vpdpbusd): rows 8..15 of each group follow rows 0..7 (a second 8 x 8
  // transpose), 64 bytes per group.
  void interleave_weights(Value n0, int64_t KB) {
    const int64_t R = plan_.tn;  // 8 or 16 weight rows
    auto v8i32 = mlir::VectorType::get({kLanes}, b_.getI32Type());
    auto v32i8 = mlir::VectorType::get({kBlock}, b_.getI8Type());
    Value c0 = idx(0);
    auto blocks = mlir::scf::ForOp::create(b_, loc_, c0, idx(KB), idx(1));
    mlir::OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(blocks.getBody());
    Value kb = blocks.getInductionVar();
    llvm::SmallVector<Value> scales;
    const std::vector<Value> all = offsets(n0, R);
    for (int64_t half = 0; half < R / kLanes; ++half) {
      llvm::SmallVector<Value> rows;
      for (int64_t r = 0; r < kLanes; ++r) {
        Value n = all[size_t(half * kLanes + r)];
        rows.push_back(mlir::vector::BitCastOp::create(b_, loc_, v8i32, nibbles(n, kb, c0)));
        scales.push_back(load_scale(roles_.wd, c0, n, kb));
      }
      llvm::SmallVector<Value> groups = transpose_dwords(rows);
      for (int64_t grp = 0; grp < kLanes; ++grp)
        mlir::vector::StoreOp::create(b_, loc_, mlir::vector::BitCastOp::create(b_, loc_, v32i8, groups[size_t(grp)]),
                                      wbuf_, mlir::ValueRange{kb, idx(grp), idx(half * kBlock)});
    }
    Value sv = mlir::vector::FromElementsOp::create(b_, loc_, mlir::VectorType::get({R}, b_.getF32Type()), scales);
    mlir::vector::StoreOp::create(b_, loc_, sv, sbuf_, mlir::ValueRange{kb, c0});
  }

  // A blocked tile's stack buffers (see build): the interleaved weights and
  // their scales, or the scale products.
  void alloc_tile_buffers(int64_t KB) {
    scale_buf_ = wbuf_ = sbuf_ = nullptr;
    const int64_t R = plan_.tn;
    if (plan_.interleaved) {
      wbuf_ = mlir::memref::AllocaOp::create(b_, loc_, mlir::MemRefType::get({KB, kLanes, 4 * R}, b_.getI8Type()),
                                             b_.getI64IntegerAttr(64));
      sbuf_ = mlir::memref::AllocaOp::create(b_, loc_, mlir::MemRefType::get({KB, R}, b_.getF32Type()),
                                             b_.getI64IntegerAttr(64));
    } else {
      scale_buf_ = mlir::memref::AllocaOp::create(b_, loc_, mlir::MemRefType::get({plan_.tm * R, KB}, b_.getF32Type()),
                                                  b_.getI64IntegerAttr(32));
    }
  }

  // An 8 x 8 transpose of dwords: rows[r] (8 dwords) -> out[g] whose dword r
  // is rows[r]'s dword g, as 3 x 8 shuffles.
  llvm::SmallVector<Value> transpose_dwords(llvm::ArrayRef<Value> rows) {
    auto shuffle = [&](Value a, Value b, llvm::ArrayRef<int64_t> mask) {
      return mlir::vector::ShuffleOp::create(b_, loc_, a, b, mask).getResult();
    };
    // Dwords within 128-bit halves (vpunpck{l,h}dq), then qwords
    // (vpunpck{l,h}qdq), then the halves (vperm2i128).
    llvm::SmallVector<Value> t1(8), t2(8), t3(8);
    for (int p = 0; p < 4; ++p) {
      t1[size_t(2 * p)] = shuffle(rows[size_t(2 * p)], rows[size_t(2 * p + 1)], {0, 8, 1, 9, 4, 12, 5, 13});
      t1[size_t(2 * p + 1)] = shuffle(rows[size_t(2 * p)], rows[size_t(2 * p + 1)], {2, 10, 3, 11, 6, 14, 7, 15});
    }
    // t1[0] = r0g0 r1g0 r0g1 r1g1 | r0g4 r1g4 r0g5 r1g5; t1[1]: groups 2, 3 | 6, 7.
    for (int q = 0; q < 2; ++q)
      for (int h = 0; h < 2; ++h) {
        Value a = t1[size_t(4 * q + h)], b = t1[size_t(4 * q + 2 + h)];
        t2[size_t(4 * q + 2 * h)] = shuffle(a, b, {0, 1, 8, 9, 4, 5, 12, 13});
        t2[size_t(4 * q + 2 * h + 1)] = shuffle(a, b, {2, 3, 10, 11, 6, 7, 14, 15});
      }
    // t2[4q + c] (c = 0..3): rows 4q..4q+3 of group c | of group c + 4.
    for (int c = 0; c < 4; ++c) {
      t3[size_t(c)] = shuffle(t2[size_t(c)], t2[size_t(4 + c)], {0, 1, 2, 3, 8, 9, 10, 11});
      t3[size_t(c + 4)] = shuffle(t2[size_t(c)], t2[size_t(4 + c)], {4, 5, 6, 7, 12, 13, 14, 15});
    }
    return t3;
  }

  // Q4_0 prompts: tm rows of x from m0 times the 8 interleaved weight rows
  // of the tile (interleave_weights), one 8-lane f32 accumulator per row of
  // x whose lane r is W's row n0 + r: per block, each group's 4 bytes of x
  // are broadcast (a load) and multiplied with the 8 rows' bytes
  // (vpmaddubsw), the 8 groups' i16 pairs summed exactly (|nibble x byte|
  // pairs are at most 2 * 15 * 127, eight of them 30480 < 2^15), then one
  // vpmaddwd, Q4_0's 8 * sum(x) subtracted, and one multiply-add by W's 8
  // scales times x's; VNNI: vpdpbusd sums in i32. Per 256 products 9
  // multiplies (AVX2) where the row-per-accumulator form needs 16, and no
  // horizontal sums: each row of x adds its accumulator to out[m, n0..+8].
  // Wide: 16 weight rows in the lanes of 512-bit vectors (vpdpbusd.512).
  void emit_interleaved_tile(Value m0, Value n0, int64_t KB) {
    const int64_t tm = plan_.tm, R = plan_.tn;
    auto f32 = b_.getF32Type();
    auto vRf32 = mlir::VectorType::get({R}, f32);
    auto vRi32 = mlir::VectorType::get({R}, b_.getI32Type());
    auto v16i16 = mlir::VectorType::get({2 * kLanes}, b_.getI16Type());
    auto vRi8 = mlir::VectorType::get({4 * R}, b_.getI8Type());
    const char* vpdpbusd = R == kLanes ? "llvm.x86.avx512.vpdpbusd.256" : "llvm.x86.avx512.vpdpbusd.512";
    Value c0 = idx(0);
    const std::vector<Value> m = offsets(m0, tm);
    llvm::SmallVector<Value> init(static_cast<size_t>(tm), splat(vRf32, b_.getF32FloatAttr(0)));
    auto blocks = mlir::scf::ForOp::create(b_, loc_, c0, idx(KB), idx(1), init);
    {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(blocks.getBody());
      Value kb = blocks.getInductionVar();
      llvm::SmallVector<Value> acc(blocks.getRegionIterArgs().begin(), blocks.getRegionIterArgs().end());
      std::vector<Value> s(static_cast<size_t>(tm));
      for (int64_t grp = 0; grp < kLanes; ++grp) {
        Value w = mlir::vector::LoadOp::create(b_, loc_, vRi8, wbuf_, mlir::ValueRange{kb, idx(grp), c0});
        const int half = grp < kLanes / 2 ? roles_.x : roles_.x_hi;
        for (int64_t i = 0; i < tm; ++i) {
          Value bytes = load_vector(half, 4, m[size_t(i)], c0, kb, idx(4 * (grp % (kLanes / 2))));
          Value word = mlir::vector::BitCastOp::create(b_, loc_, mlir::VectorType::get({1}, b_.getI32Type()), bytes);
          Value xb = mlir::vector::BitCastOp::create(b_, loc_, vRi8,
                                                     mlir::vector::BroadcastOp::create(b_, loc_, vRi32, word));
          Value& si = s[size_t(i)];
          if (plan_.vnni) {
            si = intrinsic(vpdpbusd, vRi32, {grp ? si : splat(vRi32, b_.getI32IntegerAttr(0)), w, xb});
          } else {
            Value p = intrinsic("llvm.x86.avx2.pmadd.ub.sw", v16i16, {w, xb});
            si = grp ? mlir::arith::AddIOp::create(b_, loc_, si, p).getResult() : p;
          }
        }
      }
      Value ws = mlir::vector::LoadOp::create(b_, loc_, vRf32, sbuf_, mlir::ValueRange{kb, c0});
      Value ones = splat(v16i16, b_.getI16IntegerAttr(1));
      for (int64_t i = 0; i < tm; ++i) {
        Value sums = plan_.vnni ? s[size_t(i)] : intrinsic("llvm.x86.avx2.pmadd.wd", vRi32, {s[size_t(i)], ones});
        Value c = mlir::memref::LoadOp::create(b_, loc_, corr_, mlir::ValueRange{m[size_t(i)], kb});
        sums = mlir::arith::SubIOp::create(b_, loc_, sums, mlir::vector::BroadcastOp::create(b_, loc_, vRi32, c));
        Value f = mlir::arith::SIToFPOp::create(b_, loc_, vRf32, sums);
        Value d = load_scale(roles_.xd, m[size_t(i)], c0, kb);
        Value sc = mlir::arith::MulFOp::create(b_, loc_, ws, mlir::vector::BroadcastOp::create(b_, loc_, vRf32, d));
        acc[size_t(i)] = mlir::vector::FMAOp::create(b_, loc_, f, sc, acc[size_t(i)]);
      }
      mlir::scf::YieldOp::create(b_, loc_, acc);
    }
    Value out = op_.getDpsInitOperand(0)->get();
    const int out_index = static_cast<int>(op_.getNumDpsInputs());
    for (int64_t i = 0; i < tm; ++i) {
      llvm::SmallVector<Value> at = indices(out_index, m[size_t(i)], n0, c0, c0);
      mlir::vector::StoreOp::create(b_, loc_, accumulate(blocks.getResult(unsigned(i)), out, at), out, at);
    }
  }

  // scale_buf_[i * tn + j, kb] = x's scale at (m[i], kb) times W's at (n[j], kb), kb in [from, to).
  // With corr_, also returns per pair sum_kb corr[m[i], kb] * scale (as
  // vectors of `step` lanes); otherwise nothing.
  llvm::SmallVector<Value> fill_scales(const std::vector<Value>& m, const std::vector<Value>& n, int64_t from,
                                       int64_t to, int64_t step) {
    const int64_t tm = plan_.tm, tn = plan_.tn;
    Value c0 = idx(0);
    llvm::SmallVector<Value> init;
    auto vt = mlir::VectorType::get({step}, b_.getF32Type());
    if (corr_)
      init.assign(static_cast<size_t>(tm * tn),
                  mlir::arith::ConstantOp::create(b_, loc_, mlir::DenseElementsAttr::get(vt, b_.getF32FloatAttr(0))));
    auto loop = mlir::scf::ForOp::create(b_, loc_, idx(from), idx(to), idx(step), init);
    mlir::OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(loop.getBody());
    Value kb = loop.getInductionVar();
    llvm::SmallVector<Value> cacc(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
    std::vector<Value> ws(static_cast<size_t>(tn));
    for (int64_t j = 0; j < tn && roles_.wd >= 0; ++j) ws[size_t(j)] = load_scales(roles_.wd, step, c0, n[size_t(j)], kb, c0);
    for (int64_t i = 0; i < tm; ++i) {
      Value xs = load_scales(roles_.xd, step, m[size_t(i)], c0, kb, c0);
      Value cv = corr_ ? mlir::vector::LoadOp::create(b_, loc_, vt, corr_, mlir::ValueRange{m[size_t(i)], kb}).getResult()
                       : Value();
      for (int64_t j = 0; j < tn; ++j) {
        Value v = roles_.wd >= 0 ? mlir::arith::MulFOp::create(b_, loc_, xs, ws[size_t(j)]).getResult() : xs;
        mlir::vector::StoreOp::create(b_, loc_, v, scale_buf_, mlir::ValueRange{idx(i * tn + j), kb});
        if (corr_) {
          Value cw = roles_.wd >= 0 ? mlir::arith::MulFOp::create(b_, loc_, cv, ws[size_t(j)]).getResult() : cv;
          Value& a = cacc[size_t(i * tn + j)];
          a = mlir::arith::AddFOp::create(b_, loc_, a, cw);
        }
      }
    }
    if (!cacc.empty()) mlir::scf::YieldOp::create(b_, loc_, cacc);
    return llvm::SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
  }

  // scale[i][j]: blocks [kb0, kb0 + unroll)'s x scales at row m[i] times
  // W's at row n[j], as one vector (x's alone for int8 per channel); none
  // when the tile's scale products are precomputed (scale_buf_).
  std::vector<std::vector<Value>> block_scales(const std::vector<Value>& m, const std::vector<Value>& n, Value kb0,
                                               int64_t unroll) {
    const int64_t tm = plan_.tm, tn = plan_.tn;
    Value c0 = idx(0);
    std::vector<std::vector<Value>> scale(static_cast<size_t>(tm), std::vector<Value>(static_cast<size_t>(tn)));
    for (int64_t i = 0; i < tm && !scale_buf_; ++i) {
      Value xs = load_scales(roles_.xd, unroll, m[size_t(i)], c0, kb0, c0);
      for (int64_t j = 0; j < tn; ++j)
        scale[size_t(i)][size_t(j)] =
            roles_.wd >= 0
                ? mlir::arith::MulFOp::create(b_, loc_, xs, load_scales(roles_.wd, unroll, c0, n[size_t(j)], kb0, c0))
                      .getResult()
                : xs;
    }
    return scale;
  }

  // Blocks [from, to) in steps of `unroll`, accumulating into `init` (tm x tn
  // vectors of eight f32 lanes); returns the sums.
  llvm::SmallVector<Value> emit_blocks(const std::vector<Value>& m, const std::vector<Value>& n, int64_t from,
                                       int64_t to, int64_t unroll, llvm::ArrayRef<Value> init) {
    const int64_t tm = plan_.tm, tn = plan_.tn;
    const bool q4 = roles_.x_hi >= 0;
    auto v8f32 = mlir::VectorType::get({kLanes}, b_.getF32Type());
    Value c0 = idx(0);
    auto blocks = mlir::scf::ForOp::create(b_, loc_, idx(from), idx(to), idx(unroll), init);
    {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(blocks.getBody());
      Value kb0 = blocks.getInductionVar();
      if (!plan_.blocked) prefetch_next_rows(n, kb0, unroll);
      const std::vector<std::vector<Value>> scale = block_scales(m, n, kb0, unroll);
      llvm::SmallVector<Value> acc(blocks.getRegionIterArgs().begin(), blocks.getRegionIterArgs().end());
      for (int64_t u = 0; u < unroll; ++u) {
        Value kb = u ? mlir::arith::AddIOp::create(b_, loc_, kb0, idx(u)).getResult() : kb0;
        std::vector<Value> x(static_cast<size_t>(tm)), x8(static_cast<size_t>(tm));
        for (int64_t i = 0; i < tm; ++i) {
          if (!q4) {
            x[size_t(i)] = load_vector(roles_.x, kBlock, m[size_t(i)], c0, kb, c0);
            continue;
          }
          x[size_t(i)] = concat(load_vector(roles_.x, kBlock / 2, m[size_t(i)], c0, kb, c0),
                                load_vector(roles_.x_hi, kBlock / 2, m[size_t(i)], c0, kb, c0));
          // Q4_0's weights are nibble - 8: the dot of the nibbles (unsigned,
          // no sign trick needed) less 8 times x's sums, per lane.
          if (!corr_) x8[size_t(i)] = dot(i8_splat(kBlock, 8), x[size_t(i)]);
        }
        for (int64_t j = 0; j < tn; ++j) {
          Value w = q4 ? nibbles(n[size_t(j)], kb, c0) : load_vector(roles_.w, kBlock, c0, n[size_t(j)], kb, c0);
          Value aw = q4 ? w : mlir::math::AbsIOp::create(b_, loc_, w).getResult();
          for (int64_t i = 0; i < tm; ++i) {
            Value sums;
            if (q4) {
              sums = dot(aw, x[size_t(i)]);
              if (!corr_) sums = mlir::arith::SubIOp::create(b_, loc_, sums, x8[size_t(i)]);
            } else {
              sums = dot(aw, intrinsic("llvm.x86.avx2.psign.b", w.getType(), {x[size_t(i)], w}));
            }
            Value f = mlir::arith::SIToFPOp::create(b_, loc_, v8f32, sums);
            Value lane = scale_buf_ ? mlir::memref::LoadOp::create(b_, loc_, scale_buf_, mlir::ValueRange{idx(i * tn + j), kb}).getResult()
                                    : mlir::vector::ExtractOp::create(b_, loc_, scale[size_t(i)][size_t(j)], u).getResult();
            Value sv = mlir::vector::BroadcastOp::create(b_, loc_, v8f32, lane);
            Value& a = acc[size_t(i * tn + j)];
            a = mlir::vector::FMAOp::create(b_, loc_, f, sv, a);
          }
        }
      }
      mlir::scf::YieldOp::create(b_, loc_, acc);
    }
    return llvm::SmallVector<Value>(blocks.getResults().begin(), blocks.getResults().end());
  }

  // The wide form of emit_blocks: blocks [0, to) in steps of `unroll` (even),
  // two blocks (kb, kb + 1) per 512-bit register: x's and W's 64 bytes, one
  // vpdpbusd giving block kb's eight partial sums in lanes 0-7 and block
  // kb + 1's in lanes 8-15, one conversion, and one multiply-add by a vector
  // holding the two blocks' scale products (lanes 0-7 and 8-15: one
  // permute). Q8_0 / int8's signed weights: |w| (vpabsb) times x negated
  // where w < 0 (a compare into a mask and a masked subtract, as AVX-512 has
  // no vpsignb). Q4_0: the two blocks' 32 bytes loaded into both 256-bit
  // halves (vbroadcasti64x4, no permute), the upper half shifted by 4 and the
  // nibbles masked: 16 bytes each of block kb's low nibbles, kb + 1's low,
  // kb's high, kb + 1's high, x's halves concatenated to match (once per
  // pair for all weight rows), so i32 lanes 0-3 and 8-11 hold block kb's
  // sums. Measured on Zen 5, one core, against the two blocks' 16 bytes
  // spread over 128-bit lanes by a permute, alternated in one process:
  // [1,4096]·W[4096,4096]ᵀ (in the LLC) 1.07-1.17x, 2048 and 8192 rows
  // 1.10-1.12x, [1,1024]·W[131072,1024]ᵀ and [1,8192]·W[16384,8192]ᵀ (from
  // memory) 1.05-1.19x; 65536 rows of 4096 (from memory, at the memory's
  // rate either way) 0.97-1.02x in five runs (0.82-0.90 in three earlier
  // ones). Accumulates into `init` (tm x tn vectors of 16 f32
  // lanes); returns the sums.
  llvm::SmallVector<Value> emit_block_pairs(const std::vector<Value>& m, const std::vector<Value>& n, int64_t to,
                                            int64_t unroll, llvm::ArrayRef<Value> init) {
    const int64_t tm = plan_.tm, tn = plan_.tn;
    const bool q4 = roles_.x_hi >= 0;
    constexpr int64_t kWide = 2 * kLanes;  // f32 / i32 lanes of a 512-bit register
    auto v16f32 = mlir::VectorType::get({kWide}, b_.getF32Type());
    auto v16i32 = mlir::VectorType::get({kWide}, b_.getI32Type());
    auto v64i8 = mlir::VectorType::get({2 * kBlock}, b_.getI8Type());
    Value c0 = idx(0);
    auto zero32 = [&] { return splat(v16i32, b_.getI32IntegerAttr(0)); };
    auto dot512 = [&](Value a, Value s) { return intrinsic("llvm.x86.avx512.vpdpbusd.512", v16i32, {zero32(), a, s}); };
    // Concatenates equal-length vectors.
    auto cat = [&](Value a, Value b) {
      const int64_t len = llvm::cast<mlir::VectorType>(a.getType()).getNumElements();
      llvm::SmallVector<int64_t> mask;
      for (int64_t i = 0; i < 2 * len; ++i) mask.push_back(i);
      return mlir::vector::ShuffleOp::create(b_, loc_, a, b, mask).getResult();
    };
    auto blocks = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(to), idx(unroll), init);
    mlir::OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(blocks.getBody());
    Value kb0 = blocks.getInductionVar();
    if (!plan_.blocked) prefetch_next_rows(n, kb0, unroll);
    const std::vector<std::vector<Value>> scale = block_scales(m, n, kb0, unroll);
    // Lanes 0-7 lane u of v, lanes 8-15 lane u + 1 (Q4_0: lanes 0-3 and 8-11
    // lane u, the others u + 1).
    auto pair_lanes = [&](Value v, int64_t u) {
      llvm::SmallVector<int64_t> mask;
      for (int64_t l = 0; l < kWide; ++l) mask.push_back(q4 ? u + (l / 4) % 2 : u + l / kLanes);
      return mlir::vector::ShuffleOp::create(b_, loc_, v, v, mask).getResult();
    };
    llvm::SmallVector<int32_t> shift(kWide, 0);
    for (int64_t l = 0; l < kWide; ++l) shift[size_t(l)] = l >= kLanes ? 4 : 0;
    llvm::SmallVector<Value> acc(blocks.getRegionIterArgs().begin(), blocks.getRegionIterArgs().end());
    for (int64_t u = 0; u < unroll; u += 2) {
      Value kb = u ? mlir::arith::AddIOp::create(b_, loc_, kb0, idx(u)).getResult() : kb0;
      Value kb1 = mlir::arith::AddIOp::create(b_, loc_, kb0, idx(u + 1));
      std::vector<Value> x(static_cast<size_t>(tm)), x8(static_cast<size_t>(tm));
      for (int64_t i = 0; i < tm; ++i) {
        Value mi = m[size_t(i)];
        if (!q4) {
          x[size_t(i)] = cat(load_vector(roles_.x, kBlock, mi, c0, kb, c0), load_vector(roles_.x, kBlock, mi, c0, kb1, c0));
          continue;
        }
        auto half = [&](int role, Value k) { return load_vector(role, kBlock / 2, mi, c0, k, c0); };
        x[size_t(i)] = cat(cat(half(roles_.x, kb), half(roles_.x, kb1)), cat(half(roles_.x_hi, kb), half(roles_.x_hi, kb1)));
        if (!corr_) x8[size_t(i)] = dot512(i8_splat(2 * kBlock, 8), x[size_t(i)]);
      }
      for (int64_t j = 0; j < tn; ++j) {
        Value nj = n[size_t(j)];
        Value w, aw;
        if (q4) {
          // The two blocks' 32 bytes in both 256-bit halves (one broadcast
          // load), the upper half shifted down by 4, then the nibbles.
          Value bytes = cat(load_vector(roles_.w, kBlock / 2, c0, nj, kb, c0), load_vector(roles_.w, kBlock / 2, c0, nj, kb1, c0));
          llvm::SmallVector<int64_t> spread;
          for (int64_t l = 0; l < 2 * kBlock; ++l) spread.push_back(l % kBlock);
          Value both = mlir::vector::ShuffleOp::create(b_, loc_, bytes, bytes, spread);
          if (plan_.gfni) {
            // One affine transform of each byte's bits, its 8 x 8 bit matrix
            // per qword: bit i of the result is row 7 - i's parity with the
            // byte, rows here picking bit i (the lower half: & 15) or bit
            // i + 4 (the upper half: >> 4) for i < 4, none above. Measured
            // on Zen 5, one core, against the shift and mask:
            // [1,4096]·W[4096,4096]ᵀ 1.04-1.05x.
            constexpr uint64_t kLowNibble = 0x0102040800000000ULL, kHighNibble = 0x1020408000000000ULL;
            llvm::SmallVector<int64_t> rows(8);
            for (size_t q = 0; q < rows.size(); ++q) rows[q] = static_cast<int64_t>(q < 4 ? kLowNibble : kHighNibble);
            auto v8i64 = mlir::VectorType::get({8}, b_.getI64Type());
            Value matrix = mlir::vector::BitCastOp::create(
                b_, loc_, v64i8,
                mlir::arith::ConstantOp::create(b_, loc_, mlir::DenseElementsAttr::get(v8i64, llvm::ArrayRef<int64_t>(rows))));
            w = aw = intrinsic("llvm.x86.vgf2p8affineqb.512", v64i8,
                               {both, matrix, mlir::arith::ConstantOp::create(b_, loc_, b_.getI8IntegerAttr(0))});
          } else {
            Value shifts =
                mlir::arith::ConstantOp::create(b_, loc_, mlir::DenseElementsAttr::get(v16i32, llvm::ArrayRef<int32_t>(shift)));
            Value words = mlir::vector::BitCastOp::create(b_, loc_, v16i32, both);
            Value shifted = mlir::vector::BitCastOp::create(b_, loc_, v64i8, mlir::arith::ShRUIOp::create(b_, loc_, words, shifts));
            w = aw = mlir::arith::AndIOp::create(b_, loc_, shifted, i8_splat(2 * kBlock, 15));
          }
        } else {
          w = cat(load_vector(roles_.w, kBlock, c0, nj, kb, c0), load_vector(roles_.w, kBlock, c0, nj, kb1, c0));
          aw = mlir::math::AbsIOp::create(b_, loc_, w);
        }
        Value negative;
        if (!q4)
          negative = mlir::arith::CmpIOp::create(b_, loc_, mlir::arith::CmpIPredicate::slt, w, i8_splat(2 * kBlock, 0));
        for (int64_t i = 0; i < tm; ++i) {
          Value xi = x[size_t(i)], sums;
          if (q4) {
            sums = dot512(aw, xi);
            if (!corr_) sums = mlir::arith::SubIOp::create(b_, loc_, sums, x8[size_t(i)]);
          } else {
            Value neg = mlir::arith::SubIOp::create(b_, loc_, i8_splat(2 * kBlock, 0), xi);
            sums = dot512(aw, mlir::arith::SelectOp::create(b_, loc_, negative, neg, xi));
          }
          Value f = mlir::arith::SIToFPOp::create(b_, loc_, v16f32, sums);
          Value sv;
          if (scale_buf_) {
            Value two = mlir::vector::LoadOp::create(b_, loc_, mlir::VectorType::get({2}, b_.getF32Type()), scale_buf_,
                                                     mlir::ValueRange{idx(i * tn + j), kb});
            sv = pair_lanes(two, 0);
          } else {
            sv = pair_lanes(scale[size_t(i)][size_t(j)], u);
          }
          Value& a = acc[size_t(i * tn + j)];
          a = mlir::vector::FMAOp::create(b_, loc_, f, sv, a);
        }
      }
    }
    mlir::scf::YieldOp::create(b_, loc_, acc);
    return llvm::SmallVector<Value>(blocks.getResults().begin(), blocks.getResults().end());
  }

  // Prefetches into L2 the bytes and scales of the blocks [kb0, kb0 + unroll)
  // of the next tile's weight rows (clamped to the last row), one prefetch
  // per cache line. Why: a tile reads tn row streams at once, short ones
  // (288 bytes per row for stories15M's Q8_0), and without it the loads wait
  // on memory. Measured on Zen 3 (AVX2), one core, with and without: Q8_0
  // [1,288]·W[256000,288]ᵀ (out of cache) 6.9-7.7 -> 10.4-12.0 Gweight/s,
  // Q4_0 [1,4096]·W[32768,4096]ᵀ 10.6-11.2 -> 18.6-19.2; in-cache sizes
  // within the noise; stories15M Q8_0 decode 333-379 -> 626-670 tok/s.
  void prefetch_next_rows(const std::vector<Value>& n, Value kb0, int64_t unroll) {
    constexpr int64_t kLine = 64;
    const int64_t tn = plan_.tn;
    const int64_t block_bytes = roles_.x_hi >= 0 ? kBlock / 2 : kBlock;
    Value c0 = idx(0), last = idx(n_ - 1);
    for (int64_t j = 0; j < tn; ++j) {
      Value next = mlir::arith::MinUIOp::create(b_, loc_, mlir::arith::AddIOp::create(b_, loc_, n[size_t(j)], idx(tn)), last);
      for (int64_t off = 0; off < unroll * block_bytes; off += kLine) {
        Value kb = off ? mlir::arith::AddIOp::create(b_, loc_, kb0, idx(off / block_bytes)).getResult() : kb0;
        mlir::memref::PrefetchOp::create(b_, loc_, operand(roles_.w), indices(roles_.w, c0, next, kb, c0),
                                         /*isWrite=*/false, /*localityHint=*/2, /*isDataCache=*/true);
      }
      if (roles_.wd >= 0)
        mlir::memref::PrefetchOp::create(b_, loc_, operand(roles_.wd), indices(roles_.wd, c0, next, kb0, c0),
                                         /*isWrite=*/false, /*localityHint=*/2, /*isDataCache=*/true);
    }
  }

  // out[m, n] += the lanes' sum of each accumulator (the op accumulates into
  // its init). Up to 8 accumulators are summed together as a transpose:
  // vhaddps pairs them (twice), and the 128-bit halves' sums give lane p =
  // accumulator p's sum, 9 instructions for 8 sums where one reduction each
  // took 6; each tile row's tn sums are then one vector added to out.
  void store_sums(const std::vector<Value>& m, const std::vector<Value>& n, llvm::ArrayRef<Value> acc) {
    const int64_t tm = plan_.tm, tn = plan_.tn;
    Value c0 = idx(0);
    Value out = op_.getDpsInitOperand(0)->get();
    const int out_index = static_cast<int>(op_.getNumDpsInputs());
    const bool n_last = output_n_last();
    if (tm * tn >= 2 && tm * tn <= kLanes && n_last) {
      auto v8f32 = mlir::VectorType::get({kLanes}, b_.getF32Type());
      llvm::SmallVector<Value> v(acc.begin(), acc.end());
      Value zero = splat(v8f32, b_.getF32FloatAttr(0));
      const size_t width = v.size() <= 4 ? 4 : 8;  // up to 4: one 128-bit vector of sums
      while (v.size() < width) v.push_back(zero);
      auto hadd = [&](Value a, Value b) { return intrinsic("llvm.x86.avx.hadd.ps.256", v8f32, {a, b}); };
      Value h0 = hadd(hadd(v[0], v[1]), hadd(v[2], v[3]));
      Value h1 = width == 8 ? hadd(hadd(v[4], v[5]), hadd(v[6], v[7])) : h0;
      llvm::SmallVector<int64_t> lo_lanes = {0, 1, 2, 3, 8, 9, 10, 11}, hi_lanes = {4, 5, 6, 7, 12, 13, 14, 15};
      lo_lanes.resize(width);
      hi_lanes.resize(width);
      Value lo = mlir::vector::ShuffleOp::create(b_, loc_, h0, h1, lo_lanes);
      Value hi = mlir::vector::ShuffleOp::create(b_, loc_, h0, h1, hi_lanes);
      Value sums = mlir::arith::AddFOp::create(b_, loc_, lo, hi);  // lane p: accumulator p's sum
      for (int64_t i = 0; i < tm; ++i) {
        Value row = mlir::vector::ExtractStridedSliceOp::create(b_, loc_, sums, llvm::ArrayRef<int64_t>{i * tn},
                                                                llvm::ArrayRef<int64_t>{tn}, llvm::ArrayRef<int64_t>{1});
        llvm::SmallVector<Value> at = indices(out_index, m[size_t(i)], n[0], c0, c0);
        mlir::vector::StoreOp::create(b_, loc_, accumulate(row, out, at), out, at);
      }
      return;
    }
    for (int64_t i = 0; i < tm; ++i)
      for (int64_t j = 0; j < tn; ++j) {
        Value sum = mlir::vector::ReductionOp::create(b_, loc_, mlir::vector::CombiningKind::ADD,
                                                      acc[static_cast<size_t>(i * tn + j)]);
        llvm::SmallVector<Value> at = indices(out_index, m[size_t(i)], n[size_t(j)], c0, c0);
        mlir::memref::StoreOp::create(b_, loc_, accumulate(sum, out, at), out, at);
      }
  }

  // What the kernel stores at out[at]: its sums v (a scalar or a vector)
  // plus what out holds there, or v alone when the output starts undefined.
  Value accumulate(Value v, Value out, llvm::ArrayRef<Value> at) {
    if (plan_.overwrite) return v;
    Value old = llvm::isa<mlir::VectorType>(v.getType())
                    ? mlir::vector::LoadOp::create(b_, loc_, v.getType(), out, at).getResult()
                    : mlir::memref::LoadOp::create(b_, loc_, out, at).getResult();
    return mlir::arith::AddFOp::create(b_, loc_, old, v);
  }

  mlir::linalg::GenericOp op_;
  Roles roles_;
  Plan plan_;
  mlir::OpBuilder b_;
  mlir::Location loc_;
  bool has_m_ = true;
  int64_t n_ = 0;  // W's rows
  Value scale_buf_, corr_;
  Value wbuf_, sbuf_;  // the interleaved tile's weights and scales
};

class Int8DotKernelsPass : public mlir::PassWrapper<Int8DotKernelsPass, mlir::OperationPass<mlir::ModuleOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Int8DotKernelsPass)
  llvm::StringRef getArgument() const override { return "radix-int8-dot-kernels"; }
  llvm::StringRef getDescription() const override {
    return "Integer-activation quantized products as x86 integer dot-product loops (AVX2 / VNNI)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                    mlir::memref::MemRefDialect, mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::GenericOp> ops;
    getOperation().walk([&](mlir::linalg::GenericOp g) {
      if (g->hasAttr(kInt8KernelAttr)) ops.push_back(g);
    });
    for (mlir::linalg::GenericOp g : ops) {
      auto plan_attr = g->getAttrOfType<mlir::DenseI64ArrayAttr>(kInt8KernelAttr);
      auto format = g->getAttrOfType<mlir::StringAttr>(quantized_dot::kFormatAttr);
      const bool overwrite = g->hasAttr(kInt8OverwriteAttr);
      g->removeAttr(kInt8KernelAttr);
      g->removeAttr(kInt8OverwriteAttr);
      const llvm::StringRef f = format ? format.getValue() : llvm::StringRef();
      std::optional<Roles> roles = format ? roles_of(f) : std::nullopt;
      const bool q4_rows = f == quantized_dot::kQ4_0x16, q8_rows = f == quantized_dot::kQ8_0x16;
      const bool plain_f32 = f == quantized_dot::kQ4_0F32 || f == quantized_dot::kQ8_0F32;
      const bool f32_rows = plain_f32 || f == quantized_dot::kQ4_0x16F32 || f == quantized_dot::kQ8_0x16F32;
      bool built = false;
      if (plan_attr && plan_attr.size() == 8 && (roles || q4_rows || q8_rows || f32_rows)) {
        llvm::ArrayRef<int64_t> p = plan_attr.asArrayRef();
        const Plan plan{p[0], p[1], p[2] != 0, p[3] != 0, p[4] != 0, p[5] != 0, p[6] != 0, p[7] != 0, overwrite};
        if (f32_rows)
          built = build_f32_rows_kernel(g, F32RowsKernelPlan{.q8 = f == quantized_dot::kQ8_0x16F32 ||
                                                                   f == quantized_dot::kQ8_0F32,
                                                             .parallel = plan.parallel,
                                                             .lanes = plan.wide ? 16 : 8,
                                                             .overwrite = overwrite,
                                                             .prompt = plan.blocked,
                                                             .plain = plain_f32});
        else if (plan.tm >= 1 && plan.tn >= 1)
          built = q4_rows || q8_rows ? build_int8_rows_kernel(g, plan, q8_rows, /*gather=*/false)
                  : f == quantized_dot::kQ8_0 && plan.interleaved
                      ? build_int8_rows_kernel(g, plan, /*q8=*/true, /*gather=*/true)
                      : KernelBuilder(g, *roles, plan).build();
      }
      if (!built && overwrite) {
        // Left as a generic (plain loops, which accumulate): zeros first.
        mlir::OpBuilder b(g);
        Value out = g.getDpsInitOperand(0)->get();
        auto et = llvm::cast<mlir::MemRefType>(out.getType()).getElementType();
        Value zero = mlir::arith::ConstantOp::create(b, g.getLoc(), b.getZeroAttr(et));
        mlir::linalg::FillOp::create(b, g.getLoc(), mlir::ValueRange{zero}, mlir::ValueRange{out});
      }
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_int8_dot_kernels_pass() { return std::make_unique<Int8DotKernelsPass>(); }

}  // namespace radix
