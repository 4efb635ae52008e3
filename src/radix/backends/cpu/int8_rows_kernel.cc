// The row-group kernel of int8_rows_kernel.h (split from
// int8_dot_kernels_pass.cc, whose header comment describes the formats).

#include <tuple>
#include <vector>
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "radix/backends/cpu/kernel_loops.h"
#include "radix/backends/cpu/int8_rows_kernel.h"

namespace radix {

namespace {

using mlir::Value;
using Plan = Int8KernelPlan;
constexpr int64_t kBlock = kInt8Block;

// Q4_0x16 products (trace/ops_quant.cc: loops (m, R, i, kb, g, t), inputs
// x's halves [M, KB, 4, 4], x's scales [M, KB], W's bytes [N/16, KB, 4, 16,
// 4] and scales [N/16, KB, 16]; m absent for one row of x). W's 16 rows of
// a group are the lanes of a 512-bit accumulator (two 256-bit ones on
// AVX2): per block and group, each of the 4 byte groups g is one 64-byte
// load holding bytes 4g..4g+3 of all 16 rows, whose low nibbles (a mask)
// are elements 4g.. and high nibbles elements 16 + 4g.. of the block (VNNI
// with two chains: masked in place, 16 x the nibble, their chain's sum
// shifted down by 4 once per block; else a dword shift and the mask);
// x's matching 4 bytes are broadcast against them
// (vpdpbusd: nibbles unsigned, x signed, the low and high halves in two
// chains; AVX2: vpmaddubsw, a block's 8 i16 pair sums at most 30480, then
// one vpmaddwd). Q4_0's 8 * sum(x) is subtracted in i32 (corr, once per
// block of x), and one multiply-add by the 16 rows' scales (one f16 vector
// load) times x's scale accumulates the block. Per 512 products: 4 loads,
// 8 unpacking instructions (12 with the shifts), 8 vpdpbusd and 6 for the
// block's scaling (Zen 5, [1,4096]·W[4096,4096]ᵀ, one process: the 12
// measured 5-7% slower in the LLC, 4% out of it; prefetching the next
// group's bytes measured 8-13% slower still),
// where the row-per-accumulator kernel (KernelBuilder) spends about 80
// (its horizontal sums aside). Tiles: one row group (tn = 16) times tm rows
// of x (rows_kernel_plan: one group reads W as one forward stream), over
// threads when parallel. Prompts unpack each
// tile's nibbles once into a stack buffer (unpack_tile).
// Measured on Zen 5 (512-bit VNNI), one process, Q4_0 -> Q4_0x16:
// [1,4096]·W[4096,4096]ᵀ (in the LLC) 39.6 -> 111 Gweight/s on one core,
// 75.9 -> 210 on two; [1,4096]·W[32768,4096]ᵀ 37 -> 48 (25-27 GB/s, where a
// plain read of as many bytes reached 22-23 in the same minutes); prompts
// [128,768]·W[2048,768]ᵀ alike (167 G products/s, the per-call interleaved
// tiles above). Code for Zen 3 (AVX2, no VNNI) run on that Zen 5:
// [1,768]·W[2048,768]ᵀ 26-34 -> 64, but prompts 0.81-0.84x of the 8-row
// interleaved tiles (not found why: the inner loops are within 10
// instructions of each other).
// x16 decode rows of at least this many blocks run two row groups per tile
// with 512-bit VNNI on any thread count (see RowsKernelBuilder::emit).
constexpr int64_t kLongRowBlocks = 128;

class RowsKernelBuilder {
 public:
  // q8: a Q8_0x16 product (inputs x, x's scales, W, W's scales), else Q4_0x16.
  // gather: a plain Q8_0 prompt (x [M, KB, 32], x's scales, W [N, KB, 32],
  // W's scales [N, KB], loops (m, n, kb, j)), each tile of 16 rows rewritten
  // as Q8_0x16 first.
  RowsKernelBuilder(mlir::linalg::GenericOp op, const Plan& plan, bool q8, bool gather = false)
      : op_(op), plan_(plan), b_(op), loc_(op.getLoc()), q8_(q8 || gather), gather_(gather), xd_op_(q8_ ? 1 : 2),
        w_op_(xd_op_ + 1), ws_op_(xd_op_ + 2) {}

  bool build() {
    llvm::SmallVector<int64_t> r = op_.getStaticLoopRanges();
    if (gather_) return build_gathered(r);
    if (r.size() != 5 && r.size() != 6) return false;
    has_m_ = r.size() == 6;
    M_ = has_m_ ? r[0] : 1;
    const int64_t NR = r[has_m_ ? 1 : 0];
    KB_ = r[has_m_ ? 3 : 2];
    const int64_t m_dims = has_m_ ? 1 : 0;
    auto shape_is = [&](int i, llvm::ArrayRef<int64_t> want) {
      auto mt = llvm::dyn_cast<mlir::MemRefType>(op_->getOperand(unsigned(i)).getType());
      return mt && mt.isLastDimUnitStride() && mt.getShape() == want;
    };
    llvm::SmallVector<int64_t> xs, xds, outs;
    if (has_m_) xs = xds = outs = {M_};
    const int64_t steps = q8_ ? 8 : 4;  // 4-byte groups of a block's bytes
    xs.append({KB_, steps, 4});
    xds.push_back(KB_);
    outs.append({NR, 16});
    if (op_.getNumDpsInputs() != unsigned(ws_op_ + 1) || op_.getNumDpsInits() != 1 || !op_.hasPureBufferSemantics() ||
        r[m_dims + 1] != 16 || r[m_dims + 3] != steps || r[m_dims + 4] != 4 || plan_.tn != 16 ||
        M_ % plan_.tm != 0 || !shape_is(0, xs) || (!q8_ && !shape_is(1, xs)) || !shape_is(xd_op_, xds) ||
        !shape_is(w_op_, {NR, KB_, steps, 16, 4}) || !shape_is(ws_op_, {NR, KB_, 16}) || !shape_is(ws_op_ + 1, outs))
      return false;
    return emit(NR);
  }

 private:
  // The plain Q8_0 prompt's checks (see the constructor), then emit.
  bool build_gathered(llvm::ArrayRef<int64_t> r) {
    if (r.size() != 4 || r[3] != kBlock || !plan_.blocked || plan_.tn != 16) return false;
    has_m_ = true;
    M_ = r[0];
    KB_ = r[2];
    const int64_t N = r[1];
    auto shape_is = [&](int i, llvm::ArrayRef<int64_t> want) {
      auto mt = llvm::dyn_cast<mlir::MemRefType>(op_->getOperand(unsigned(i)).getType());
      return mt && mt.isLastDimUnitStride() && mt.getShape() == want;
    };
    auto ws = llvm::dyn_cast<mlir::MemRefType>(operand(ws_op_).getType());
    if (op_.getNumDpsInputs() != 4 || op_.getNumDpsInits() != 1 || !op_.hasPureBufferSemantics() || N % 16 != 0 ||
        M_ % plan_.tm != 0 || KB_ * 8 * 64 > kMaxUnpackedBytes || !shape_is(0, {M_, KB_, kBlock}) ||
        !shape_is(1, {M_, KB_}) || !shape_is(2, {N, KB_, kBlock}) || !ws || ws.getShape() != llvm::ArrayRef<int64_t>{N, KB_} ||
        !ws.getElementType().isF16() || !shape_is(4, {M_, N}))
      return false;
    return emit(N / 16);
  }

  // The kernel over NR groups of 16 weight rows (see build).
  bool emit(int64_t NR) {
    NR_ = NR;
    lanes_ = plan_.wide ? 16 : 8;
    // AVX2's Q8_0 products move W's signs onto x instead: no corrections.
    if (!q8_ || plan_.vnni || plan_.wide) fill_corrections();
    // Decode (one row of x): W read once per call, from memory in a model's
    // step, where a tile's block loop leaves time for more lines in flight
    // than one core's hardware prefetchers keep for one stream.
    const bool one_row = !plan_.blocked && !gather_ && M_ == 1;
    // Q8_0: each tile runs row groups r and r + NR / 2 in the same block
    // loop, two sequential streams through W at once; on one thread, and
    // with AVX2 on two. Measured on Zen 5, one core, alternated in one
    // process: [1,768]·W[2048,768]ᵀ over 64 cold copies 1.03-1.22x,
    // W[131072,768] 1.07-1.23x, in the caches (one copy) 0.98-1.02x; as Zen
    // 3 code (vpmaddubsw) 1.23-1.31x; stories110M Q8_0 decode 1.05-1.21x
    // (either generator loaded first), stories15M 1.02-1.11x. Four streams:
    // no faster (0.94-0.99x in the decode). Two threads there: 0.99-1.01x.
    // On Zen 3 (AVX2), two threads, [1,4096]·W[4096,4096]ᵀ: 1.15x over 8
    // copies, 1.09x in the LLC; stories110M Q8_0 decode 1.09-1.20x,
    // stories15M 1.15-1.24x. (Prefetching ahead as Q4_0 does instead: 0.88-0.95x of two
    // streams on Zen 3, in the LLC and from memory.)
    // With 512-bit VNNI on two threads, rows from kLongRowBlocks blocks on
    // (4096 weights: Llama-7B's shapes) take two streams too, shorter ones
    // one. Measured on Zen 5 (2026-12-07), two threads, alternated in one
    // process: from memory [1,4096]·W[4096,4096]ᵀ 1.21-1.26x,
    // [1,11008]·W[4096,11008]ᵀ 1.24-1.40x; in the LLC [1,4096]·W[2048,4096]ᵀ
    // 0.90-1.01x (median 0.97), [1,4096]·W[4096,4096]ᵀ (17 MiB) 0.83-1.36x
    // (median 1.10). stories110M's rows (768 and 2048 weights) measured
    // 0.99-1.01x in its decode and keep one.
    // Q4_0x16 with 512-bit VNNI: two streams too where W's rows are long
    // (from kLongRowBlocks blocks: 4096 weights, Llama-7B's shapes), on
    // one thread and two. Measured on Zen 5 (2026-12-07), one process
    // alternating the forms: from memory (cold copies) [1,4096]·W[4096,4096]ᵀ
    // 1.38-1.48x on one core, 1.14-1.17x on two; [1,4096]·W[11008,4096]ᵀ
    // 1.17-1.70x / 1.11x; [1,11008]·W[4096,11008]ᵀ 1.14-1.22x; in the LLC
    // (one copy) 0.98-1.04x. Shorter rows gain less ([1,2048]·W[4096,2048]ᵀ
    // 1.06-1.09x, [1,768]·W[2048,768]ᵀ 0.97-1.06x; stories110M's Q4_0
    // decode 0.91-1.02x) and keep one (four streams: 1.25-1.66x from memory,
    // 0.97x in the LLC).
    const bool long_rows = KB_ >= kLongRowBlocks;
    const bool two_streams = q8_ ? !plan_.parallel || lanes_ == 8 || long_rows : lanes_ == 16 && long_rows;
    streams_ = one_row && NR % 2 == 0 && two_streams ? 2 : 1;
    // Q4_0 with AVX2: one stream, each block prefetching the block
    // kPrefetchBlocks ahead of it in W (see prefetch_ahead). Two streams
    // there keep 4 accumulators, 4 pair sums, both nibble masks' constants
    // and x's broadcasts in 16 registers and spill. Measured on Zen 3, one
    // process alternating the forms, [1,4096]·W[4096,4096]ᵀ and
    // [1,768]·W[2048,768]ᵀ: over 8 / 64 cold copies 1.19-1.39x of one
    // stream without prefetches (two streams: 1.30-1.34x), in the caches
    // 0.98-0.99x (two streams 0.87-0.88x; 0.94-0.97x when each block's
    // (group, block) was divided out of a flat index, hence the flat views);
    // blocks 4 / 16 / 32 ahead 1.21 / 1.18 / 1.20x from memory (8:
    // 1.22-1.33x, 12: 1.33-1.39x), half the lines 0.47-0.62x (the hardware
    // prefetcher loses the stream); stories110M Q4_0 decode 1.28-1.32x on
    // one thread, 1.13-1.20x on two, stories15M (in the LLC) 1.03x. Zen 5
    // (16 lanes) keeps its measured form: prefetching the next group there
    // was 8-13% slower, two streams 0.95-1.09x for stories110M's short rows
    // (long rows take two, above).
    prefetch_ahead_ = one_row && !q8_ && lanes_ == 8;
    if (prefetch_ahead_) {
      w_flat_ = flat_view(b_, loc_, operand(w_op_));
      ws_flat_ = flat_view(b_, loc_, operand(ws_op_));
      prefetch_ahead_ = w_flat_ && ws_flat_;
    }
    const int64_t tiles = NR / streams_;  // streams_ row groups each
    const bool parallel = plan_.parallel && tiles > 1;
    // Prompts: each tile's nibbles unpacked once into a stack buffer that all
    // rows of x then read (see unpack_tile); one buffer per thread.
    const bool unpack = !q8_ && plan_.blocked && KB_ * 8 * 64 <= kMaxUnpackedBytes;
    unpacked_ = nullptr;
    if ((unpack || gather_) && !parallel) alloc_unpacked();
    auto body = [&](mlir::OpBuilder& b, Value r0) {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
      if (unpack || gather_) {
        if (parallel) {
          enter_alloca_scope(b_, loc_);
          alloc_unpacked();
        }
        if (gather_)
          gather_tile(r0);
        else
          unpack_tile(r0);
      }
      // AVX2 prompts: the two 8-row halves of a group one after the other
      // (x's broadcasts, the same loads for both halves, were otherwise kept
      // for the second half and spilled from AVX2's 16 registers).
      const int64_t halves = 16 / lanes_, passes = plan_.blocked ? halves : 1;
      for (int64_t h = 0; h < passes; ++h) {
        mlir::OpBuilder::InsertionGuard pass(b_);
        auto rows = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(M_), idx(plan_.tm));
        b_.setInsertionPointToStart(rows.getBody());
        llvm::SmallVector<Value> groups{r0};
        for (int64_t j = 1; j < streams_; ++j) groups.push_back(mlir::arith::AddIOp::create(b_, loc_, r0, idx(j * tiles)));
        emit_tile(rows.getInductionVar(), groups, h * (halves / passes), halves / passes);
      }
    };
    emit_tile_loop(b_, loc_, tiles, parallel, body);
    if (corr_) mlir::memref::DeallocOp::create(b_, loc_, corr_);
    op_.erase();
    // The gathered tiles' 16 x 16 transposes as shuffles (two-source
    // unpacks and lane permutes; the default lowering moves element by element).
    if (!transposes_.empty()) {
      mlir::RewritePatternSet patterns(b_.getContext());
      mlir::vector::populateVectorTransposeLoweringPatterns(patterns, mlir::vector::VectorTransposeLowering::Shuffle16x16);
      if (mlir::failed(mlir::applyOpPatternsGreedily(transposes_, std::move(patterns)))) return false;
    }
    return true;
  }

  Value idx(int64_t v) { return mlir::arith::ConstantIndexOp::create(b_, loc_, v); }
  Value operand(int i) { return op_->getOperand(static_cast<unsigned>(i)); }
  Value intrinsic(const char* name, mlir::Type result, mlir::ValueRange args) {
    return mlir::LLVM::CallIntrinsicOp::create(b_, loc_, result, b_.getStringAttr(name), args).getResult(0);
  }
  Value splat(mlir::VectorType t, mlir::TypedAttr v) { return splat_constant(b_, loc_, t, v); }
  // Indices of an operand of x (m first where the op has it).
  llvm::SmallVector<Value> at_m(Value m, llvm::ArrayRef<Value> rest) { return row_indices(has_m_, m, rest); }
  // x's 4 bytes g of half `half` (0: elements 0..15 of the block, 1: 16..31) at (m, kb).
  Value x_word(int half, Value m, Value kb, int64_t g) {
    return mlir::vector::LoadOp::create(b_, loc_, mlir::VectorType::get({4}, b_.getI8Type()), operand(half),
                                        gather_ ? at_m(m, {kb, idx(4 * g)}) : at_m(m, {kb, idx(g), idx(0)}));
  }

  // corr_[m, kb] = -8 (Q4_0: W is nibble - 8) or -128 (Q8_0: W is read as
  // w + 128) times the sum of x's 32 bytes in block kb (i32). Negated: it
  // starts a block's integer sums (VNNI: the first vpdpbusd's accumulator),
  // instead of a subtraction and an add per block and row after them.
  void fill_corrections() {
    auto i32 = b_.getI32Type();
    corr_ = mlir::memref::AllocOp::create(b_, loc_, mlir::MemRefType::get({M_, KB_}, i32), b_.getI64IntegerAttr(32));
    mlir::OpBuilder::InsertionGuard g(b_);
    auto rows = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(M_), idx(1));
    b_.setInsertionPointToStart(rows.getBody());
    auto blocks = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(KB_), idx(1));
    b_.setInsertionPointToStart(blocks.getBody());
    Value m = rows.getInductionVar(), kb = blocks.getInductionVar();
    auto v4i32 = mlir::VectorType::get({4}, i32);
    Value sum = splat(v4i32, b_.getI32IntegerAttr(0));
    for (int half = 0; half < (q8_ ? 1 : 2); ++half)
      for (int64_t grp = 0; grp < (q8_ ? 8 : 4); ++grp)
        sum = mlir::arith::AddIOp::create(b_, loc_, sum, mlir::arith::ExtSIOp::create(b_, loc_, v4i32, x_word(half, m, kb, grp)));
    sum = mlir::arith::MulIOp::create(b_, loc_, sum, splat(v4i32, b_.getI32IntegerAttr(q8_ ? -128 : -8)));
    Value total = mlir::vector::ReductionOp::create(b_, loc_, mlir::vector::CombiningKind::ADD, sum);
    mlir::memref::StoreOp::create(b_, loc_, total, corr_, mlir::ValueRange{m, kb});
  }

  // Q4_0x16 bytes (a vector of i8) as their low and high nibbles, each in a
  // byte of its own: a mask, and a dword shift by 4 then the mask (the bits
  // the shift moves across bytes are masked off).
  std::pair<Value, Value> split_nibbles(Value bytes) {
    auto vt = llvm::cast<mlir::VectorType>(bytes.getType());
    auto words_t = mlir::VectorType::get({vt.getNumElements() / 4}, b_.getI32Type());
    Value mask = splat(vt, b_.getI8IntegerAttr(15)), four = splat(words_t, b_.getI32IntegerAttr(4));
    Value words = mlir::vector::BitCastOp::create(b_, loc_, words_t, bytes);
    Value shifted = mlir::vector::BitCastOp::create(b_, loc_, vt, mlir::arith::ShRUIOp::create(b_, loc_, words, four));
    return {mlir::arith::AndIOp::create(b_, loc_, bytes, mask), mlir::arith::AndIOp::create(b_, loc_, shifted, mask)};
  }

  // A prompt tile's unpacked nibbles: unpacked_[kb, c, 0..63] holds byte
  // group c's low nibbles (c < 4) or group c - 4's high ones, 16 rows x 4.
  // Gathered Q8_0 tiles: group c's bytes, 16 rows x 4, and their scales
  // in gathered_scales_[kb, 0..15].
  void alloc_unpacked() {
    unpacked_ = mlir::memref::AllocaOp::create(b_, loc_, mlir::MemRefType::get({KB_, 8, 64}, b_.getI8Type()),
                                               b_.getI64IntegerAttr(64));
    if (gather_)
      gathered_scales_ = mlir::memref::AllocaOp::create(b_, loc_, mlir::MemRefType::get({KB_, 16}, b_.getF16Type()),
                                                        b_.getI64IntegerAttr(32));
  }

  // Rows 16 r0 .. 16 r0 + 15 of a plain Q8_0 W rewritten into unpacked_ in
  // the Q8_0x16 layout, once per tile: blocks kb and kb + 1 of the 16 rows
  // are a 16 x 16 matrix of dwords (one 64-byte row each), whose transpose's
  // row c is group c % 8 of block kb + c / 8 for all 16 rows. An odd last
  // block goes alone (the upper half zero, its 8 rows stored).
  void gather_tile(Value r0) {
    auto v32i8 = mlir::VectorType::get({32}, b_.getI8Type()), v64i8 = mlir::VectorType::get({64}, b_.getI8Type());
    auto v16f32 = mlir::VectorType::get({16}, b_.getF32Type());
    auto m16x16 = mlir::VectorType::get({16, 16}, b_.getF32Type());
    Value row0 = mlir::arith::MulIOp::create(b_, loc_, r0, idx(16));
    std::vector<Value> rows(16);
    for (int64_t i = 0; i < 16; ++i) rows[size_t(i)] = i ? mlir::arith::AddIOp::create(b_, loc_, row0, idx(i)).getResult() : row0;
    llvm::SmallVector<int64_t> concat(64);
    for (int64_t j = 0; j < 64; ++j) concat[size_t(j)] = j;
    auto pair = [&](Value kb, bool two) {
      Value m = splat(m16x16, b_.getF32FloatAttr(0));
      Value zero = splat(v32i8, b_.getI8IntegerAttr(0)), c0 = idx(0);
      Value kb1 = two ? mlir::arith::AddIOp::create(b_, loc_, kb, idx(1)).getResult() : Value();
      for (int64_t i = 0; i < 16; ++i) {
        Value n = rows[size_t(i)];
        Value lo = mlir::vector::LoadOp::create(b_, loc_, v32i8, operand(w_op_), mlir::ValueRange{n, kb, c0});
        Value hi = two ? mlir::vector::LoadOp::create(b_, loc_, v32i8, operand(w_op_), mlir::ValueRange{n, kb1, c0}).getResult() : zero;
        Value both = mlir::vector::ShuffleOp::create(b_, loc_, lo, hi, concat);
        m = mlir::vector::InsertOp::create(b_, loc_, mlir::vector::BitCastOp::create(b_, loc_, v16f32, both), m, i);
        for (Value k : two ? std::vector<Value>{kb, kb1} : std::vector<Value>{kb}) {
          Value s = mlir::memref::LoadOp::create(b_, loc_, operand(ws_op_), mlir::ValueRange{n, k});
          mlir::memref::StoreOp::create(b_, loc_, s, gathered_scales_, mlir::ValueRange{k, idx(i)});
        }
      }
      auto t = mlir::vector::TransposeOp::create(b_, loc_, m, llvm::ArrayRef<int64_t>{1, 0});
      transposes_.push_back(t);
      for (int64_t c = 0; c < (two ? 16 : 8); ++c) {
        Value bytes = mlir::vector::BitCastOp::create(b_, loc_, v64i8, mlir::vector::ExtractOp::create(b_, loc_, t, c));
        mlir::vector::StoreOp::create(b_, loc_, bytes, unpacked_, mlir::ValueRange{c < 8 ? kb : kb1, idx(c % 8), c0});
      }
    };
    if (KB_ >= 2) {
      auto blocks = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(KB_ / 2 * 2), idx(2));
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(blocks.getBody());
      pair(blocks.getInductionVar(), true);
    }
    if (KB_ % 2) pair(idx(KB_ - 1), false);
  }

  // The 16 rows of group r0 unpacked into unpacked_, once per tile: the M
  // rows of x then load them where each row tile would otherwise unpack
  // them again (3 instructions per 64 bytes, on the ports the products need).
  void unpack_tile(Value r0) {
    auto v64i8 = mlir::VectorType::get({64}, b_.getI8Type());
    auto blocks = mlir::scf::ForOp::create(b_, loc_, idx(0), idx(KB_), idx(1));
    mlir::OpBuilder::InsertionGuard g(b_);
    b_.setInsertionPointToStart(blocks.getBody());
    Value kb = blocks.getInductionVar(), c0 = idx(0);
    for (int64_t grp = 0; grp < 4; ++grp) {
      Value bytes = mlir::vector::LoadOp::create(b_, loc_, v64i8, operand(w_op_), llvm::SmallVector<Value>{r0, kb, idx(grp), c0, c0});
      auto [lo, hi] = split_nibbles(bytes);
      mlir::vector::StoreOp::create(b_, loc_, lo, unpacked_, mlir::ValueRange{kb, idx(grp), c0});
      mlir::vector::StoreOp::create(b_, loc_, hi, unpacked_, mlir::ValueRange{kb, idx(4 + grp), c0});
    }
  }

  // Prefetches into L2 the block kPrefetchBlocks after block kb of row
  // group r0 in W's memory order (past the group's last block: the next
  // group's first ones; clamped to W's last block): each of its byte
  // groups (one 64-byte line each) and its scales, through the flat views
  // w_flat_ and ws_flat_ (one add and a min per block, no division).
  void prefetch_ahead(Value r0, Value kb) {
    const int64_t block_bytes = (q8_ ? 8 : 4) * 64;
    Value blk = mlir::arith::AddIOp::create(b_, loc_, mlir::arith::MulIOp::create(b_, loc_, r0, idx(KB_)),
                                            mlir::arith::AddIOp::create(b_, loc_, kb, idx(kPrefetchBlocks)));
    blk = mlir::arith::MinUIOp::create(b_, loc_, blk, idx(NR_ * KB_ - 1));
    Value byte = mlir::arith::MulIOp::create(b_, loc_, blk, idx(block_bytes));
    for (int64_t off = 0; off < block_bytes; off += 64)
      mlir::memref::PrefetchOp::create(b_, loc_, w_flat_, off ? mlir::arith::AddIOp::create(b_, loc_, byte, idx(off)).getResult() : byte,
                                       /*isWrite=*/false, /*localityHint=*/2, /*isDataCache=*/true);
    mlir::memref::PrefetchOp::create(b_, loc_, ws_flat_, mlir::arith::MulIOp::create(b_, loc_, blk, idx(16)).getResult(),
                                     /*isWrite=*/false, /*localityHint=*/2, /*isDataCache=*/true);
  }

  // The sum of accumulator a's chains (pairwise).
  Value sum_chains(const std::vector<std::vector<Value>>& chains, size_t a) {
    std::vector<Value> v;
    for (const auto& c : chains) v.push_back(c[a]);
    while (v.size() > 1) {
      std::vector<Value> next;
      for (size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(mlir::arith::AddIOp::create(b_, loc_, v[i], v[i + 1]));
      if (v.size() % 2) next.push_back(v.back());
      v = std::move(next);
    }
    return v[0];
  }

  // tm rows of x from m0 times each row group of `groups`: its rows
  // [L h0, L (h0 + H)) (H halves of L lanes).
  void emit_tile(Value m0, llvm::ArrayRef<Value> groups, int64_t h0, int64_t H) {
    const int64_t tm = plan_.tm, L = lanes_;
    // Columns of accumulators: (group, half), c = g * H + h.
    const int64_t C = int64_t(groups.size()) * H;
    auto group_of = [&](int64_t c) { return groups[size_t(c / H)]; };
    mlir::Type f32 = b_.getF32Type(), i32 = b_.getI32Type();
    auto vLf32 = mlir::VectorType::get({L}, f32);
    auto vLi32 = mlir::VectorType::get({L}, i32);
    auto vLf16 = mlir::VectorType::get({L}, b_.getF16Type());
    auto vBi8 = mlir::VectorType::get({4 * L}, b_.getI8Type());
    auto v16i16 = mlir::VectorType::get({16}, b_.getI16Type());
    const bool vnni = plan_.vnni || plan_.wide;
    // VNNI: the low and high nibbles' products in chains of their own while
    // the tile has fewer than 8 accumulators (vpdpbusd's latency), else one
    // chain per accumulator (registers).
    const bool two_chains = tm * H < 8;
    // Q8_0 with VNNI and at most 3 accumulators (decode: one row of x): its
    // 8 vpdpbusd per block in four chains, not two. Why: two chains of four
    // bounded the block by vpdpbusd's latency. Measured on Zen 5 (512-bit
    // VNNI), one core, Q8_0x16 mat-vecs: [1,768]·W[2048,768]ᵀ from memory
    // 28-31 -> 40-44 GB/s, [1,4096]·W[4096,4096]ᵀ (in the LLC) 51-57 ->
    // 58-67, [1,288]·W[32000,288]ᵀ 68-70 -> 91; stories110M Q8_0 decode
    // held as Q8_0x16 159-166 -> 223-232 tok/s. Eight chains: no faster.
    const int64_t q8_chains = tm * H < 4 ? 4 : two_chains ? 2 : 1;
    // Q4_0 read straight from W with VNNI's two chains: the high nibbles
    // stay in place, as 16 x nibble (one mask, no shift), and hi_sum holds
    // 16 x their sums, divided by 16 at the block's end.
    const bool hi_times_16 = !q8_ && !unpacked_ && vnni && two_chains;
    const char* vpdpbusd = L == 16 ? "llvm.x86.avx512.vpdpbusd.512" : "llvm.x86.avx512.vpdpbusd.256";
    Value c0 = idx(0);
    std::vector<Value> m{m0};
    for (int64_t i = 1; i < tm; ++i) m.push_back(mlir::arith::AddIOp::create(b_, loc_, m0, idx(i)));
    // acc[i * C + c]: row m[i] of x times rows 16 r + L h .. + L of column
    // c's group r and half h.
    auto at = [&](int64_t i, int64_t c) { return size_t(i * C + c); };
    llvm::SmallVector<Value> init(size_t(tm * C), splat(vLf32, b_.getF32FloatAttr(0)));
    auto blocks = mlir::scf::ForOp::create(b_, loc_, c0, idx(KB_), idx(1), init);
    {
      mlir::OpBuilder::InsertionGuard g(b_);
      b_.setInsertionPointToStart(blocks.getBody());
      Value kb = blocks.getInductionVar();
      llvm::SmallVector<Value> acc(blocks.getRegionIterArgs().begin(), blocks.getRegionIterArgs().end());
      // Integer sums: VNNI up to two chains for Q4_0 (low and high nibbles
      // in lo_sum, hi_sum) and up to four for Q8_0 (byte group g in
      // q8_sum[g % q8_chains]), AVX2 one of i16 pairs (lo_sum).
      std::vector<Value> lo_sum(acc.size()), hi_sum(acc.size());
      std::vector<std::vector<Value>> q8_sum(size_t(q8_chains), std::vector<Value>(acc.size()));
      const int64_t steps = q8_ ? 8 : 4;
      if (prefetch_ahead_)
        for (Value r0 : groups) prefetch_ahead(r0, kb);
      // Row i's correction, broadcast: the start of its first chain.
      std::vector<Value> corr(static_cast<size_t>(tm));
      for (int64_t i = 0; corr_ && i < tm; ++i)
        corr[size_t(i)] = mlir::vector::BroadcastOp::create(
            b_, loc_, vLi32, mlir::memref::LoadOp::create(b_, loc_, corr_, llvm::SmallVector<Value>{m[size_t(i)], kb}));
      for (int64_t grp = 0; grp < steps; ++grp) {
        std::vector<Value> xl(static_cast<size_t>(tm)), xh(static_cast<size_t>(tm));
        for (int64_t i = 0; i < tm; ++i) {
          auto bcast = [&](int half) {
            Value word = mlir::vector::BitCastOp::create(b_, loc_, mlir::VectorType::get({1}, i32), x_word(half, m[size_t(i)], kb, grp));
            return mlir::vector::BitCastOp::create(b_, loc_, vBi8, mlir::vector::BroadcastOp::create(b_, loc_, vLi32, word)).getResult();
          };
          xl[size_t(i)] = bcast(0);
          if (!q8_) xh[size_t(i)] = bcast(1);
        }
        for (int64_t c = 0; c < C; ++c) {
          const int64_t h = c % H;
          Value r0 = group_of(c);
          Value lo, hi;
          if (q8_) {
            Value bytes = gather_ ? mlir::vector::LoadOp::create(b_, loc_, vBi8, unpacked_,
                                                                 mlir::ValueRange{kb, idx(grp), idx((h0 + h) * 4 * L)})
                                  : mlir::vector::LoadOp::create(b_, loc_, vBi8, operand(w_op_),
                                                                 llvm::SmallVector<Value>{r0, kb, idx(grp), idx((h0 + h) * L), c0});
            if (vnni) {
              // Signed bytes read as w + 128 (unsigned, as vpdpbusd's first
              // operand must be): the sums gain 128 * sum(x), in corr_.
              lo = mlir::arith::XOrIOp::create(b_, loc_, bytes, splat(vBi8, b_.getI8IntegerAttr(-128)));
            } else {
              // AVX2: |w| (unsigned) times x with w's sign, vpmaddubsw's
              // pair sums at most 2 * 128 * 127 (no saturation).
              lo = mlir::math::AbsIOp::create(b_, loc_, bytes);
              hi = bytes;
            }
          } else if (unpacked_) {
            lo = mlir::vector::LoadOp::create(b_, loc_, vBi8, unpacked_, mlir::ValueRange{kb, idx(grp), idx((h0 + h) * 4 * L)});
            hi = mlir::vector::LoadOp::create(b_, loc_, vBi8, unpacked_, mlir::ValueRange{kb, idx(4 + grp), idx((h0 + h) * 4 * L)});
          } else if (hi_times_16) {
            Value bytes = mlir::vector::LoadOp::create(b_, loc_, vBi8, operand(w_op_),
                                                       llvm::SmallVector<Value>{r0, kb, idx(grp), idx((h0 + h) * L), c0});
            lo = mlir::arith::AndIOp::create(b_, loc_, bytes, splat(vBi8, b_.getI8IntegerAttr(0x0F)));
            hi = mlir::arith::AndIOp::create(b_, loc_, bytes, splat(vBi8, b_.getI8IntegerAttr(int8_t(0xF0))));
          } else {
            std::tie(lo, hi) = split_nibbles(mlir::vector::LoadOp::create(
                b_, loc_, vBi8, operand(w_op_), llvm::SmallVector<Value>{r0, kb, idx(grp), idx((h0 + h) * L), c0}));
          }
          for (int64_t i = 0; i < tm; ++i) {
            const size_t a = at(i, c);
            if (q8_ && !vnni) {
              Value xs = intrinsic("llvm.x86.avx2.psign.b", vBi8, {xl[size_t(i)], hi});
              Value p = intrinsic("llvm.x86.avx2.pmadd.wd", vLi32,
                                  {intrinsic("llvm.x86.avx2.pmadd.ub.sw", v16i16, {lo, xs}), splat(v16i16, b_.getI16IntegerAttr(1))});
              lo_sum[a] = grp ? mlir::arith::AddIOp::create(b_, loc_, lo_sum[a], p).getResult() : p;
            } else if (q8_) {
              // Group grp in chain grp % q8_chains.
              std::vector<Value>& chain = q8_sum[size_t(grp % q8_chains)];
              const bool first = grp < q8_chains;
              Value acc_in = !first      ? chain[a]
                             : grp == 0 ? corr[size_t(i)]  // the chain holding the correction
                                        : splat(vLi32, b_.getI32IntegerAttr(0));
              chain[a] = intrinsic(vpdpbusd, vLi32, {acc_in, lo, xl[size_t(i)]});
            } else if (vnni) {
              lo_sum[a] = intrinsic(vpdpbusd, vLi32, {grp ? lo_sum[a] : corr[size_t(i)], lo, xl[size_t(i)]});
              if (two_chains)
                hi_sum[a] = intrinsic(vpdpbusd, vLi32,
                                      {grp ? hi_sum[a] : splat(vLi32, b_.getI32IntegerAttr(0)), hi, xh[size_t(i)]});
              else
                lo_sum[a] = intrinsic(vpdpbusd, vLi32, {lo_sum[a], hi, xh[size_t(i)]});
            } else {
              Value p = mlir::arith::AddIOp::create(b_, loc_, intrinsic("llvm.x86.avx2.pmadd.ub.sw", v16i16, {lo, xl[size_t(i)]}),
                                                    intrinsic("llvm.x86.avx2.pmadd.ub.sw", v16i16, {hi, xh[size_t(i)]}));
              lo_sum[a] = grp ? mlir::arith::AddIOp::create(b_, loc_, lo_sum[a], p).getResult() : p;
            }
          }
        }
      }
      Value ones = splat(v16i16, b_.getI16IntegerAttr(1));
      for (int64_t c = 0; c < C; ++c) {
        const int64_t h = c % H;
        Value r0 = group_of(c);
        Value half_scales =
            gather_ ? mlir::vector::LoadOp::create(b_, loc_, vLf16, gathered_scales_, mlir::ValueRange{kb, idx((h0 + h) * L)})
                    : mlir::vector::LoadOp::create(b_, loc_, vLf16, operand(ws_op_),
                                                   llvm::SmallVector<Value>{r0, kb, idx((h0 + h) * L)});
        Value ws = mlir::arith::ExtFOp::create(b_, loc_, vLf32, half_scales);
        for (int64_t i = 0; i < tm; ++i) {
          const size_t a = at(i, c);
          // VNNI: the correction started the first chain; AVX2: added here.
          Value hi_sum_a = hi_times_16 ? mlir::arith::ShRSIOp::create(b_, loc_, hi_sum[a], splat(vLi32, b_.getI32IntegerAttr(4))).getResult()
                                       : hi_sum[a];
          Value sums = q8_ && !vnni ? lo_sum[a]  // no correction: w's sign applied to x
                       : q8_ ? sum_chains(q8_sum, a)
                       : vnni && two_chains ? mlir::arith::AddIOp::create(b_, loc_, lo_sum[a], hi_sum_a).getResult()
                       : vnni ? lo_sum[a]
                              : mlir::arith::AddIOp::create(
                                    b_, loc_, intrinsic("llvm.x86.avx2.pmadd.wd", vLi32, {lo_sum[a], ones}),
                                    corr[size_t(i)])
                                    .getResult();
          Value f = mlir::arith::SIToFPOp::create(b_, loc_, vLf32, sums);
          Value d = mlir::memref::LoadOp::create(b_, loc_, operand(xd_op_), at_m(m[size_t(i)], {kb}));
          Value sc = mlir::arith::MulFOp::create(b_, loc_, ws, mlir::vector::BroadcastOp::create(b_, loc_, vLf32, d));
          acc[a] = mlir::vector::FMAOp::create(b_, loc_, f, sc, acc[a]);
        }
      }
      mlir::scf::YieldOp::create(b_, loc_, acc);
    }
    Value out = op_.getDpsInitOperand(0)->get();
    for (int64_t i = 0; i < tm; ++i)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t h = c % H;
        Value r0 = group_of(c);
        llvm::SmallVector<Value> where =
            gather_ ? llvm::SmallVector<Value>{m[size_t(i)], mlir::arith::AddIOp::create(
                                                                 b_, loc_, mlir::arith::MulIOp::create(b_, loc_, r0, idx(16)),
                                                                 idx((h0 + h) * L))}
                    : at_m(m[size_t(i)], {r0, idx((h0 + h) * L)});
        Value v = blocks.getResult(unsigned(at(i, c)));
        if (!plan_.overwrite)
          v = mlir::arith::AddFOp::create(b_, loc_, mlir::vector::LoadOp::create(b_, loc_, vLf32, out, where), v);
        mlir::vector::StoreOp::create(b_, loc_, v, out, where);
      }
  }

  mlir::linalg::GenericOp op_;
  Plan plan_;
  mlir::OpBuilder b_;
  mlir::Location loc_;
  bool has_m_ = true;
  int64_t M_ = 1, KB_ = 0, lanes_ = 8, NR_ = 0;
  int64_t streams_ = 1;  // row groups per tile, NR / streams_ apart (see emit)
  bool prefetch_ahead_ = false;  // see emit and prefetch_ahead
  Value corr_, unpacked_, gathered_scales_;
  Value w_flat_, ws_flat_;  // W and its scales as one dimension (prefetch_ahead)
  bool q8_, gather_;
  llvm::SmallVector<mlir::Operation*> transposes_;  // gather_tile's, lowered in build
  int xd_op_, w_op_, ws_op_;  // operand indices: x's scales, W, W's scales
  // The unpacked tile's stack bytes at most (KB * 512: k up to 16384).
  static constexpr int64_t kMaxUnpackedBytes = 256 * 1024;
  // Q4_0 decode with AVX2: how many blocks (256 bytes each) ahead of the
  // block loop prefetch_ahead reads (see emit).
  static constexpr int64_t kPrefetchBlocks = 8;
};

}  // namespace

bool build_int8_rows_kernel(mlir::linalg::GenericOp op, const Int8KernelPlan& plan, bool q8, bool gather) {
  return RowsKernelBuilder(op, plan, q8, gather).build();
}

}  // namespace radix
