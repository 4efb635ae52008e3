#include "radix/backends/cpu/matmul_schedule.h"

#include <algorithm>

#include "llvm/Support/MathExtras.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/matmul_blocks.h"
#include "radix/trace/quantized_dot_marks.h"

namespace radix::cpu_schedule {


bool b_transposed(mlir::linalg::LinalgOp op) {
  if (!llvm::isa<mlir::linalg::MatmulOp, mlir::linalg::BatchMatmulOp>(op.getOperation())) return false;
  llvm::SmallVector<mlir::AffineMap> maps = op.getIndexingMapsArray();
  const unsigned n = op.getNumLoops(), o = n - 3;
  auto is = [&](mlir::AffineMap m, std::initializer_list<unsigned> dims) {
    if (m.getNumResults() != o + dims.size()) return false;
    unsigned r = 0;
    for (unsigned b = 0; b < o; ++b)
      if (m.getResult(r++) != mlir::getAffineDimExpr(b, m.getContext())) return false;
    for (unsigned d : dims)
      if (m.getResult(r++) != mlir::getAffineDimExpr(o + d, m.getContext())) return false;
    return true;
  };
  return maps.size() == 3 && is(maps[0], {0, 2}) && is(maps[1], {1, 2}) && is(maps[2], {0, 1});
}

mlir::linalg::MatmulOp plain_matmul(mlir::Operation* op) {
  auto mm = llvm::dyn_cast<mlir::linalg::MatmulOp>(op);
  if (!mm || (mm.hasUserDefinedMaps() && !b_transposed(mm)) || !all_static(mm)) return {};
  mlir::Type et = llvm::cast<mlir::ShapedType>(mm->getResult(0).getType()).getElementType();
  if (!llvm::isa<mlir::Float32Type, mlir::Float64Type>(et)) return {};
  return mm;
}

int64_t block_divisor(int64_t dim, int64_t step, int64_t max) {
  for (int64_t d = std::min(dim, max) / step * step; d >= step; d -= step)
    if (dim % d == 0) return d;
  return 0;
}

int64_t wide_tile_rows(int64_t rows) {
  for (int64_t m = rows / kWideRegM * kWideRegM; m >= 4 * kWideRegM; m -= kWideRegM)
    if ((rows - m) % 4 == 0) return m;
  return 0;
}

bool all_f32(mlir::Operation* op) {
  return llvm::all_of(op->getOperands(), [](mlir::Value v) {
    return llvm::cast<mlir::ShapedType>(v.getType()).getElementType().isF32();
  });
}

mlir::Value filled(mlir::OpBuilder& b, mlir::Location loc, mlir::Value value, llvm::ArrayRef<int64_t> shape) {
  mlir::Value empty = mlir::tensor::EmptyOp::create(b, loc, shape, value.getType());
  return mlir::linalg::FillOp::create(b, loc, mlir::ValueRange{value}, mlir::ValueRange{empty}).getResult(0);
}

std::optional<PackBlocks> pack_blocks(int64_t M, int64_t N, int64_t K, const VectorIsa& isa, int threads) {
  auto pick = [](int64_t dim, std::initializer_list<int64_t> cands) -> int64_t {
    for (int64_t c : cands)
      if (dim % c == 0) return c;
    return 0;
  };
  const bool wide = isa.registers >= 32;
  const int64_t panel = panel_width(N, isa);
  PackBlocks b{pick(M, wide ? kBlockMAvx512 : kBlockMAvx2), N % kBlockN == 0 ? kBlockN : 0,
               pick(K, wide ? kBlockKAvx512 : kBlockKAvx2)};
  // Sizes no standard block divides (Llama widths such as 288) take the
  // largest one of their tile (a register tile for M, a panel for N, kRegK
  // for K) no larger than the standard block.
  if (!b.m) b.m = block_divisor(M, packed_reg_m(isa), wide ? *kBlockMAvx512.begin() : *kBlockMAvx2.begin());
  if (!b.n) b.n = block_divisor(N, panel, kBlockN);
  if (!b.k) b.k = block_divisor(K, kRegK, wide ? *kBlockKAvx512.begin() : *kBlockKAvx2.begin());
  if (!b.m || !b.n || !b.k || b.n % panel != 0 || b.m % packed_reg_m(isa) != 0 || b.k % kRegK != 0) return std::nullopt;
  // AVX2, several row blocks: longer K blocks, narrower column blocks (see
  // kLongBlockKAvx2).
  const bool avx2 = isa.registers == 16 && isa.f32_lanes == 8;
  if (avx2 && b.m < M && N >= kNarrowBlockNMinColsAvx2 && N % kNarrowBlockNAvx2 == 0 &&
      kNarrowBlockNAvx2 % panel == 0) {
    b.n = kNarrowBlockNAvx2;
    if (K >= kLongBlockKAvx2 && K <= kWholeBlockKAvx2 && K % kRegK == 0) b.k = K;
    else if (K % kLongBlockKAvx2 == 0) b.k = kLongBlockKAvx2;
  }
  // Threads, all rows in one block: narrower N blocks (whole panels, at
  // least two) instead, so that each thread packs the panels of B it reads
  // inside its own block (emit_packed_matmul's fused pack) rather than
  // all threads waiting on a separate parallel packing region first.
  // Measured on Zen 5 (two threads at about half speed), 256^3: 175 -> 200
  // GFLOP/s, 0.90 -> 0.92-0.99x oneDNN in `radix bench` runs. Four forall
  // tiles per thread rather than two (see kOneRowBlockTilesPerThread).
  while (threads > 1 && b.m == M && (N / b.n) < kOneRowBlockTilesPerThread * threads) {
    const int64_t next = block_divisor(N, panel, b.n - panel);
    if (next < 2 * panel) break;
    b.n = next;
  }
  // Threads: smaller M blocks (each still dividing M into whole register
  // tiles: halving 200 gave 50, which no 8-row tile divides, and the op was
  // left unvectorized on AVX-512) until each thread has two blocks.
  while (threads > 1 && b.m > 64 && (M / b.m) * (N / b.n) < 2 * threads) {
    const int64_t next = block_divisor(M, packed_reg_m(isa), b.m - packed_reg_m(isa));
    if (next < kMinThreadBlockM) break;
    b.m = next;
  }
  // AVX-512, K up to kWholeBlockKMaxAvx512: all of K in one block, in
  // column blocks narrow enough for B's slice (see kMaxWholeBlockKBBytes).
  if (wide && K > b.k && K <= kWholeBlockKMaxAvx512 && K % kRegK == 0) {
    auto slice_bytes = [&](int64_t cols) { return cols * K * int64_t{sizeof(float)}; };
    int64_t n = b.n;
    while (n > panel && slice_bytes(n) > kMaxWholeBlockKBBytes) n = block_divisor(N, panel, n - panel);
    if (n > 0 && slice_bytes(n) <= kMaxWholeBlockKBBytes) {
      b.n = n;
      b.k = K;
    }
  }
  // AVX-512, several row blocks and several K blocks: blocks of
  // kManyRowsBlockMAvx512 rows.
  if (wide && M > *kBlockMAvx512.begin() && M % kManyRowsBlockMAvx512 == 0 && b.k < K)
    b.m = kManyRowsBlockMAvx512;
  return b;
}

bool use_packed_schedule(mlir::linalg::MatmulOp mm, const VectorIsa& isa) {
  if (mm->hasAttr(kBInPlaceMark)) return false;
  llvm::SmallVector<int64_t> r = llvm::cast<mlir::linalg::LinalgOp>(mm.getOperation()).getStaticLoopRanges();
  const int64_t M = r[0], N = r[1], K = r[2];
  // Weights read as [n, k] with many rows (a prompt) are packed from a smaller
  // size on: the alternative there, dot products per output, re-reads every
  // weight row M / 4 times with a horizontal sum per output.
  const int64_t min_volume = b_transposed(mm) && M >= kPackedMinRowsTransposedB ? kPackMinVolumeTransposedB : kPackMinVolume;
  return M * N * K >= min_volume && pack_blocks(M, N, K, isa, 1).has_value() &&
         llvm::cast<mlir::ShapedType>(mm->getResult(0).getType()).getElementType().isF32();
}

// B [K, N] of at most this many bytes (an L2 of Zen 5's 1 MiB) is read in
// place by AVX-512's small-block register tiles instead of packed: packing
// copies all of B on every call, and its panels are no faster to read while
// B sits in L2. Measured on Zen 5, alternated in one process against the
// packed form (one thread / two): 256^3 1.02x / 0.98x, 512^3 1.01x / 1.10x,
// 512x256x256 - / 1.17x, 1024x512x512 1.00x / 1.12x, 2048x512x512 - /
// 1.07x, 256x512x512 - / 0.99x (two threads take it from 256 rows each),
// 1024 and 2048 x256x256 1.00 / 0.99x, but 3072 and 4096 x256x256 0.98 /
// 0.82x and 4096x512x512 0.92x on one thread (up to 1024 rows a thread);
// 384^3 and 768^3 1.03x / 1.17x and 1.01x / 1.05x (other tiles: not
// taken), 1024^3 (B 4 MiB) 0.85x. AVX2 code (for Zen 3, on that host)
// 0.83-0.91x at 256^3 and 512^3: AVX2 keeps packing.
constexpr int64_t kBInPlaceMaxBytes = int64_t{1} << 20;
constexpr int64_t kBInPlaceMinRowsPerThread = 256, kBInPlaceMaxRowsPerThread = 1024;

int read_small_b_in_place(mlir::ModuleOp module, const VectorIsa& isa, int threads) {
  if (isa.registers < 32 || isa.f32_lanes != 16) return 0;
  int marked = 0;
  module.walk([&](mlir::linalg::MatmulOp op) {
    mlir::linalg::MatmulOp mm = plain_matmul(op.getOperation());
    if (!mm || b_transposed(op) || !use_packed_schedule(mm, isa) || !all_f32(op)) return;
    llvm::SmallVector<int64_t> r = llvm::cast<mlir::linalg::LinalgOp>(op.getOperation()).getStaticLoopRanges();
    const int64_t M = r[0], N = r[1], K = r[2];
    const int op_threads = in_thread_region(op.getOperation()) ? 1 : threads;
    const std::optional<std::pair<int64_t, int64_t>> tile = register_tile(M, N, isa);
    if (K * N * 4 > kBInPlaceMaxBytes || M < kBInPlaceMinRowsPerThread * op_threads ||
        M > kBInPlaceMaxRowsPerThread * op_threads || !tile ||
        !uses_small_blocks(M, N, K, tile->first, tile->second))
      return;
    op->setAttr(kBInPlaceMark, mlir::UnitAttr::get(op.getContext()));
    ++marked;
  });
  return marked;
}

bool feeds_only_packed_matmuls(mlir::linalg::FillOp fill, const VectorIsa& isa) {
  if (fill->use_empty()) return false;
  for (mlir::Operation* user : fill->getUsers()) {
    auto mm = plain_matmul(user);
    if (!mm || !use_packed_schedule(mm, isa) || mm.getDpsInitOperand(0)->get() != fill->getResult(0)) return false;
  }
  return true;
}

std::optional<std::pair<int64_t, int64_t>> register_tile(int64_t M, int64_t N, const VectorIsa& isa) {
  const int64_t lanes = isa.f32_lanes;
  const int64_t tn = largest_divisor(N, {2 * lanes, lanes, lanes / 2, 4});
  if (N % tn != 0 || tn < 4) return std::nullopt;
  const int64_t vectors_per_row = (tn + lanes - 1) / lanes;
  const int64_t max_acc = max_accumulators(isa);
  int64_t tm = 1;
  for (int64_t c : {8, 6, 4, 3, 2, 1})
    if (M % c == 0 && c * vectors_per_row <= max_acc) {
      tm = c;
      break;
    }
  return std::make_pair(tm, tn);
}

bool uses_small_blocks(int64_t M, int64_t N, int64_t K, int64_t tm, int64_t tn) {
  return M % kSmallBlockM == 0 && N % kSmallBlockN == 0 && K % kSmallBlockK == 0 && M * N * K >= kPackMinVolume &&
         kSmallBlockM % tm == 0 && kSmallBlockN % tn == 0;
}

// Packs B/C into panels (see the knobs above), tiles, and vectorizes.
// `widened`: the kWidenedMark value of A's producer, a bf16 / f16 -> f32
// widening fused into each part's K blocks (empty: none).
static void emit_packed_matmul(std::ostringstream& body, const std::string& id, const VectorIsa& isa, int threads,
                        bool transposed_b, bool f32_b, const PackBlocks& blk, int64_t rows, int64_t cols,
                        int64_t depth, const std::string& widened) {
  const int64_t panel = panel_width(cols, isa);
  const int64_t reg_m = packed_reg_m(isa);
  const std::string p = id + "p";
  // linalg.matmul (m, n, k) -> generic (m, n/panel, k, panel) on B [K, N/panel, panel], C [M, N/panel, panel].
  body << "    %" << p << " = transform.structured.pack %" << id << " packed_sizes = [0, " << panel
       << ", 0] : (!transform.any_op) -> (!transform.op<\"linalg.generic\">)\n"
       << "    %" << p << "b = transform.get_producer_of_operand %" << p
       << "[1] : (!transform.op<\"linalg.generic\">) -> (!transform.op<\"linalg.pack\">)\n";
  // The packed op and B's pack: B [N, K] packs straight to [N/panel, K,
  // panel]; B [K, N] is transposed to it, panels outermost, each contiguous.
  std::string g = p, bpack = p + "b";
  if (!transposed_b) {
    g = p + "g";
    bpack = p + "bt";
    body << "    %" << g << ", %" << bpack << ", %" << p << "u0 = transform.structured.pack_transpose %" << p
         << "b with_compute_op(%" << p
         << ") outer_perm = [1, 0] : (!transform.op<\"linalg.pack\">, !transform.op<\"linalg.generic\">) -> "
            "(!transform.op<\"linalg.generic\">, !transform.op<\"linalg.pack\">, !transform.any_op)\n";
  }
  body << "    %" << p << "c = transform.get_producer_of_operand %" << g
       << "[2] : (!transform.op<\"linalg.generic\">) -> (!transform.op<\"linalg.pack\">)\n"
       << "    %" << p << "u = transform.get_consumers_of_result %" << g
       << "[0] : (!transform.op<\"linalg.generic\">) -> (!transform.op<\"linalg.unpack\">)\n"
       << "    %" << p << "a = transform.cast %" << g << " : !transform.op<\"linalg.generic\"> to !transform.any_op\n";
  // One block of rows (a prompt times weights): each output block packs its
  // own panels of B right before its K loop, so they are read back from
  // cache instead of memory; with several row blocks that would pack B once
  // per block. Measured one core, [128,4096]·W[11008,4096]ᵀ 87-90 -> 96-100
  // GFLOP/s, [128,768]·W[32000,768]ᵀ 87-92 -> 99-100, Llama-110M shapes
  // 1-7% (Xeon, AVX-512).
  const bool fuse_b_pack = blk.m == rows;
  struct Part {
    std::string handle, id;
    int64_t bm, reg_m, rows;
  };
  // Several row blocks: column blocks outermost (on threads, each its own
  // columns), so the packed B of one column block (K x blk.n, 1 MiB at
  // 4096^3 on AVX2) is read from memory once and from the last-level cache
  // by the row blocks after the first. Row blocks outermost read all of B
  // from memory once per row block, and the first register row of each K
  // block waited on it: on AVX2, whose 96-row blocks reuse a K block's B 16
  // times (AVX-512's 256-row blocks: 32 times), 4096^3 ran at 0.89x
  // OpenBLAS's Haswell kernel. Measured on Zen 5 (code for Zen 3, one /
  // two threads, against that kernel in the same processes): 4096^3 0.89
  // -> 0.96x / 0.87-0.89 -> 0.93-0.97x, 2048^3 0.91 -> 0.99x; AVX-512
  // code alike either way (1024^3 - 4096^3, one and two threads).
  // The column loop is made once, around all parts (the row split below
  // happens inside it), and B's packing copy is fused into it: each column
  // block packs its panels right before its row blocks read them, from
  // cache, on the thread that reads them, with no separate parallel packing
  // region and barrier first. Measured on Zen 3, alternated in one process
  // against packing all of B first: 4096^3 1.01-1.02x on one and on two
  // threads, 512^3 - 2048^3 within the host's spread (0.99-1.02x).
  const int64_t col_blocks = cols / blk.n;
  const bool col_outer = !fuse_b_pack && (threads == 1 || col_blocks % threads == 0);
  std::string whole = p + "a", col_loop;
  if (col_outer) {
    whole = p + "cb";
    if (threads > 1) {
      emit_forall(body, p + "a", whole, {0, blk.n / panel, 0, 0});
      col_loop = whole + "_fa";
    } else {
      emit_tile(body, p + "a", whole, {0, blk.n / panel, 0, 0});
      col_loop = whole + "_l0";
    }
  }
  const bool pack_fused = fuse_b_pack || col_outer;  // B packed inside the output-block loops
  std::vector<Part> parts = {{whole, id, blk.m, reg_m, rows}};
  // AVX2: 6-row tiles over the whole blocks of kWideBlockM rows (see
  // kWideRegM), the rest (a multiple of 4 rows) in 4-row tiles.
  // The largest block that fits, unless it leaves the threads fewer than
  // two blocks each.
  int64_t bm6 = 0;
  for (int64_t c : kWideBlockM) {
    if (rows < c) continue;
    bm6 = c;
    if (threads < 2 || (rows / c) * (cols / blk.n) >= 2 * threads) break;
  }
  const int64_t main_rows = bm6 ? rows / bm6 * bm6 : 0, rest = rows - main_rows;
  if (isa.registers < 32 && !fuse_b_pack && main_rows > 0 && rest % reg_m == 0) {
    parts = {{whole, id, bm6, kWideRegM, rows}};
    if (rest > 0) {
      emit_split(body, whole, p + "sp", main_rows, 0, p + "s0", p + "s1");
      int64_t rest_bm = reg_m;
      for (int64_t c = std::min(rest, blk.m) / reg_m * reg_m; c > reg_m; c -= reg_m)
        if (rest % c == 0) {
          rest_bm = c;
          break;
        }
      parts = {{p + "s0", id, bm6, kWideRegM, main_rows}, {p + "s1", id + "q", rest_bm, reg_m, rest}};
    }
  }
  // A part's forall tile in panels: the block's, halved while its output
  // blocks leave the threads fewer than two each or unevenly loaded (a
  // 16-row rest part of one block ran on one thread after the parallel
  // part; 5 blocks on 2 threads ran 3 + 2).
  auto thread_panels = [&](int64_t part_rows, int64_t bm) {
    int64_t tile = blk.n / panel;
    int64_t blocks = (part_rows + bm - 1) / bm * (cols / blk.n);
    const int64_t per_thread = fuse_b_pack ? kOneRowBlockTilesPerThread : 2;
    while (tile % 2 == 0 && (blocks < per_thread * threads || (blocks % threads != 0 && blocks < 8 * threads))) {
      tile /= 2;
      blocks *= 2;
    }
    return tile;
  };
  for (const Part& part : parts) {
    const std::string& t = part.id;
    // The output blocks are independent: with threads they are the forall's
    // iterations (K stays inside, so each sum adds in the same order).
    std::string block_loop;  // the innermost loop of the output blocks
    if (col_outer) {
      emit_tile(body, part.handle, t + "b", {part.bm, 0, 0, 0});
      block_loop = t + "b_l0";
    } else if (threads > 1) {
      emit_forall(body, part.handle, t + "b", {part.bm, thread_panels(part.rows, part.bm), 0, 0});
      block_loop = t + "b_fa";
    } else {
      block_loop = t + "b_l1";
      emit_tile(body, part.handle, t + "b", {part.bm, blk.n / panel, 0, 0});
    }
    emit_tile(body, t + "b", t + "k", {0, 0, blk.k, 0});
    if (!widened.empty()) {
      // The widening of A's block, computed inside its K loop (into a
      // [block rows, K block] f32 tile, L2-sized): fused into the output
      // block loop (which slices A) and from there into the K loop (whose
      // slices of that slice the register tiles read). Only one part reads
      // it (widened_into_packed_a); the whole-W op then has no uses left,
      // and the canonicalization at the script's end erases it.
      // With a column loop around the parts (col_outer), first into it.
      const std::string w = t + "w";
      body << "    %" << w << "m = transform.structured.match ops{[\"linalg.generic\"]} attributes{" << kWidenedMark
           << " = " << widened << " : i64} in %root : (!transform.any_op) -> !transform.any_op\n";
      std::string producer = w + "m";
      if (col_outer) {
        producer = w + "c";
        body << "    %" << producer << ", %" << producer << "l = transform.structured.fuse_into_containing_op %" << w
             << "m into %" << col_loop << " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
      }
      body << "    %" << w << "b, %" << w << "bl = transform.structured.fuse_into_containing_op %" << producer << " into %"
           << block_loop << " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n"
           << "    %" << w << "f, %" << w << "l = transform.structured.fuse_into_containing_op %" << w << "b into %" << t
           << "k_l0 : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
      emit_tile(body, w + "f", w + "t", {1, largest_divisor(blk.k, {2 * isa.f32_lanes, isa.f32_lanes, 4})});
      body << "    transform.structured.vectorize %" << w << "t : !transform.any_op\n";
    }
    emit_tile(body, t + "k", t + "r", {part.reg_m, 1, 0, 0});
    body << "    transform.annotate %" << t << "r_l1 \"" << kAccTileLoopMark << "\" : !transform.any_op\n";
    // AVX-512: each tile's K loop fetches the next row tile's rows of A
    // (radix-prefetch-next-tile); measured on AVX2 code it did not pay.
    if (isa.registers >= 32)
      body << "    transform.annotate %" << t << "r_l1 \"" << kPrefetchARowsMark << "\" : !transform.any_op\n";
    emit_tile(body, t + "r", t + "s", {0, 0, kRegK, 0});
    // Drop the unit panel dim inside the register loop: the tile is a plain
    // (reg_m x kRegK) * (kRegK x panel) matmul again, vectorized to vector.contract.
    body << "    %" << t << "sl = transform.get_parent_op %" << t
         << "s {op_name = \"scf.for\"} : (!transform.any_op) -> !transform.any_op\n"
         << "    transform.apply_patterns to %" << t << "sl {\n"
         << "      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices\n"
         << "    } : !transform.any_op\n"
         << "    %" << t << "m = transform.structured.specialize %" << t
         << "s : (!transform.any_op) -> !transform.any_op\n"
         << "    transform.structured.vectorize %" << t << "m {create_named_contraction} : !transform.any_op\n";
  }
  body
       // The packs become pad + expand_shape + transpose, the unpack transpose + collapse + copy.
       << "    %" << p << "x0, %" << p << "x1, %" << p << "x2 = transform.structured.lower_pack %" << bpack
       << " : (!transform.op<\"linalg.pack\">) -> (!transform.op<\"tensor.pad\">, "
          "!transform.op<\"tensor.expand_shape\">, !transform.op<\"linalg.transpose\">)\n"
       // B's packing copy, vectorized (a p-wide panel row per vector when B is
       // [K, N]; a p x 8 transpose when it is [N, K]) and split over threads
       // by panel: otherwise a scalar copy of all of B, on one core, per call.
       << "    %" << p << "xc = transform.cast %" << p
       << "x2 : !transform.op<\"linalg.transpose\"> to !transform.any_op\n";
  const std::vector<int64_t> by_panel = {1, 0, 0};
  std::string copy = p + "xc";
  if (pack_fused) {
    copy = p + "xf";
    body << "    %" << copy << ", %" << copy << "l = transform.structured.fuse_into_containing_op %" << p
         << "xc into %" << (col_outer ? col_loop : id + (threads > 1 ? "b_fa" : "b_l1"))
         << " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
  }
  // f32 B [N, K] on 16-lane ISAs: 16 x 16 blocks, one full-width load per
  // weight row and one 16 x 16 in-register transpose (shuffle_16x16, on
  // this loop only: 64 unpack / shuffle ops); a 32 x 8 block
  // became partial loads, blends and permutes with spills. Measured on Zen 5
  // (one thread), [128,768]·W[2048,768]ᵀ against oneDNN in the same runs:
  // 0.87-0.89 -> 0.90-0.95x.
  // The copy covers all of K, which need not be a multiple of its step
  // (K = 100: a partial step failed to vectorize and the whole module fell
  // back to scalar loops): the largest step dividing K (K is a multiple of
  // kRegK).
  const int64_t copy_k = largest_divisor(depth, {kPackCopyK, kRegK});
  const std::vector<int64_t> copy_tile =
      transposed_b && f32_b && isa.f32_lanes == kPackTransposeBlock && depth % kPackTransposeBlock == 0
          ? std::vector<int64_t>{1, kPackTransposeBlock, kPackTransposeBlock}
          : std::vector<int64_t>{1, copy_k, 0};
  emit_tile(body, forall_if(body, copy, threads > 1 && !pack_fused ? by_panel : std::vector<int64_t>{}), p + "xt",
            copy_tile);
  body << "    transform.structured.vectorize %" << p << "xt : !transform.any_op\n";
  if (copy_tile.back() != 0)  // only this loop's transposes: others are lowered later, some by Radix's passes
    body << "    transform.apply_patterns to %" << p << "xt_l0 {\n"
         << "      transform.apply_patterns.vector.transfer_permutation_patterns\n"
         << "      transform.apply_patterns.vector.lower_transpose lowering_strategy = \"shuffle_16x16\"\n"
         << "    } : !transform.any_op\n";
  body
       << "    %" << p << "y0, %" << p << "y1, %" << p << "y2 = transform.structured.lower_pack %" << p
       << "c : (!transform.op<\"linalg.pack\">) -> (!transform.op<\"tensor.pad\">, "
          "!transform.op<\"tensor.expand_shape\">, !transform.op<\"linalg.transpose\">)\n"
       << "    %" << p << "z0, %" << p << "z1, %" << p << "z2, %" << p << "z3 = transform.structured.lower_unpack %" << p
       << "u : (!transform.op<\"linalg.unpack\">) -> (!transform.op<\"tensor.empty\">, "
          "!transform.op<\"linalg.transpose\">, !transform.op<\"tensor.collapse_shape\">, "
          "!transform.op<\"tensor.extract_slice\">)\n";
}

// ---- Contractions with B read as [n, k] (not packed) --------------------------
// Each output is a dot product of two contiguous rows (x's and the weight's),
// so the reduction runs along memory: tm x tn outputs at a time, K split into
// vector-wide partial sums (tile_reduction_using_for: tm * tn accumulators,
// each step loads tm x-vectors and tn weight vectors, one per row stream),
// combined once at the end. This is the decode mat-vec's schedule: it reads
// the weights once, front to back, tn rows in parallel.
constexpr int64_t kDotRows = 4;  // weight rows per register tile (tn)
// A single row times short weight rows (at most this many bytes) on AVX2
// hosts: one weight row per tile, one 64-byte line of it per step where up
// to four vectors hold it (bf16 / f16 rows on AVX2 take four: with two,
// each step's prefetch of the next row (radix-prefetch-next-tile) covered
// half a line, two prefetch instructions per line, and two accumulators'
// FMA chains bounded the step; code for Zen 3 run on the Zen 5 host,
// stories110M bf16 decode, the two forms alternated in one shell: one core
// 95-100 -> 115-120 tok/s, two 130-140 -> 149-157). Four short row
// streams side by side read memory at 0.7-0.8 of one long stream on Zen 3
// (the rows are contiguous, so one row at a time is a plain front-to-back
// read). Measured there (AVX2), decode tok/s, 4 rows / 1 row per tile, one
// core: stories15M f32 124-135 / 143-167, bf16 168-217 / 248-306, and
// stories110M bf16 (1.5 KiB rows) 34-39 / 38-43; two threads 15M f32
// 185-253 / 225-287, bf16 304-416 / 403-452, 110M bf16 55-60 / 70-73. Longer
// f32 rows are not read one per tile (110M f32, 3 KiB rows: 28-29 / 24-25
// tok/s; they take 8 per tile, below). AVX-512 (32
// registers) reads rows up to 3 KiB one per tile (two vectors per step):
// measured on Zen 5 (a shared core at about half speed), `radix bench
// --filter "f32 decode"` alternated twice, 4 rows / 1 row per tile against
// llama.cpp in the same run: stories15M (1152-byte rows) 0.65-0.74 /
// 1.12-1.23x on one core, 0.90-0.97 / 1.20-1.31x on two; stories110M (3 KiB)
// 0.96 / 1.04-1.16x, 1.00 / 1.03-1.08x. Longer rows keep 4 there: the 4096²
// mat-vec's 16 KiB rows read 19-22 GB/s one per tile against 25 with 4
// (with prefetches of the next rows, 0.88 of a plain read on a Xeon).
// AVX-512 reads longer rows (one row of x) 8 per tile, each step's
// prefetches then covering the next 8 rows (radix-prefetch-next-tile):
// measured on Zen 5, one core, [1,4096]·W[4096,4096]ᵀ in C with the same
// loads and prefetches, fractions of a plain read of W in the same process:
// 4 rows 0.87-0.91, 8 rows 0.93-1.01 (16 rows 0.6, 2 rows 0.7).
// AVX2 reads longer f32 rows 8 per tile too (8 accumulators, one vector per
// row and step), without the next-tile prefetches: on Zen 3 they slowed
// these tiles (two prefetches per line and row, as many as the FMAs). Measured
// on a Zen 3 core (2026-12-06), the generated code alternated in one
// process against cblas_sgemv: [1,4096]·W[4096,4096]ᵀ 1.21-1.24x (one and two
// threads; one thread 1.02-1.04 -> 1.24-1.29x sgemv), [1,2048]·W[1024,2048]ᵀ in the LLC
// 1.27x, [1,768]·W[2048,768]ᵀ over 32 copies 1.11x and in the LLC 0.99x;
// stories110M f32 decode 1.07-1.13x on one core, 0.97-1.08x on two; 15M
// 1.00-1.02x. 8 rows with the prefetches ran in the LLC at 0.60-0.86x, 4
// rows without them over the 32 copies at 0.99x. bf16 rows keep 4 and the
// prefetches (stories110M bf16 0.96-0.98x on two cores with this form). One
// row per tile for stories110M's 3 KiB f32 rows, faster in code for Zen 3
// run on Zen 5, measured 0.84-0.92x on Zen 3 itself, and 4 rows of 16
// floats per step (one prefetch per line) 0.91-0.94x.
// AVX2's short f32 rows (one per tile) prefetch the next rows only when the
// executable runs on several threads. Measured on a Zen 3 core (2026-12-06, 08:10 UTC),
// stories15M f32 decode alternated in one process, medians of 10-20 rounds:
// one thread without / with them 1.05-1.11x (300 / 287, 320 / 289 tok/s);
// two threads 0.89-0.99x (05:18-08:18 UTC session). bf16's short rows (576 bytes)
// keep them on one thread: 0.89x without.
constexpr int64_t kDotRowsWide = 8;
constexpr int64_t kShortRowBytes = 1536;
constexpr int64_t kShortRowBytesWide = 3072;  // 32-register ISAs (AVX-512)

std::optional<DotTiles> dot_tiles(mlir::linalg::LinalgOp op, const VectorIsa& isa, int threads) {
  mlir::Type et = llvm::cast<mlir::ShapedType>(op->getResult(0).getType()).getElementType();
  if (!llvm::isa<mlir::Float32Type, mlir::Float64Type>(et) || touches_bool(op)) return std::nullopt;
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  const size_t o = r.size() - 3;  // loops (batch,) m, n, k
  const int64_t M = r[o], N = r[o + 1], K = r[o + 2];
  const int64_t lanes = et.isF64() ? isa.f32_lanes / 2 : isa.f32_lanes;
  int64_t v = largest_divisor(K, {lanes, lanes / 2, 4});
  if (K % v != 0 || v < 4) return std::nullopt;
  int64_t tn = largest_divisor(N, {kDotRows, 2, 1});
  NextTilePrefetch prefetch = NextTilePrefetch::kOn;
  auto weights = llvm::cast<mlir::ShapedType>(op.getDpsInputOperand(1)->get().getType());
  const int64_t row_bytes = K * static_cast<int64_t>(weights.getElementTypeBitWidth()) / 8;
  const bool avx2_f32 = isa.f32_lanes == 8 && weights.getElementType().isF32();
  if (M == 1 && row_bytes <= (isa.registers <= 16 ? kShortRowBytes : kShortRowBytesWide)) {
    tn = 1;
    // AVX2's short f32 rows on one thread skip the next-row prefetches (faster
    // on one Zen 3 core, slower on two; bf16 rows slower without them).
    if (avx2_f32 && threads == 1) prefetch = NextTilePrefetch::kOff;
    const int64_t line = 64 * 8 / static_cast<int64_t>(weights.getElementTypeBitWidth());
    v = largest_divisor(K, {std::clamp(line, 2 * lanes, 4 * lanes), 2 * lanes, lanes, lanes / 2, 4});
  } else if (M == 1 && isa.registers >= 32) {
    tn = largest_divisor(N, {kDotRowsWide, kDotRows, 2, 1});
  } else if (M == 1 && avx2_f32) {
    tn = largest_divisor(N, {kDotRowsWide, kDotRows, 2, 1});
    prefetch = NextTilePrefetch::kOff;
  }
  const int64_t max_acc = isa.registers / 2;  // the rest hold the loaded rows
  int64_t tm = 1;
  for (int64_t c : {4, 2})
    if (M % c == 0 && c * tn <= max_acc) {
      tm = c;
      break;
    }
  return DotTiles{tm, tn, v, prefetch};
}

void emit_dot_reduction(std::ostringstream& body, const std::string& in, const std::string& id,
                        const std::vector<int64_t>& split, NextTilePrefetch prefetch) {
  body << "    %" << id << "pf, %" << id << "ps, %" << id << "pc, %" << id
       << "pl = transform.structured.tile_reduction_using_for %" << in << " by tile_sizes = " << tile_list(split)
       << " : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)\n"
       << "    transform.structured.vectorize %" << id << "pf : !transform.any_op\n"
       << "    transform.structured.vectorize %" << id << "ps : !transform.any_op\n"
       << "    transform.structured.vectorize %" << id << "pc : !transform.any_op\n"
       // The split op vectorizes to mulf + addf: fused into FMAs after the
       // script (fuse_marked_multiply_adds), only in this loop.
       << "    transform.annotate %" << id << "pl \"" << kFmaMark << "\" : !transform.any_op\n";
  // Its weight reads prefetch the next rows (radix-prefetch-next-tile).
  if (prefetch == NextTilePrefetch::kOn)
    body << "    transform.annotate %" << id << "pl \"" << kStreamLoopMark << "\" : !transform.any_op\n";
}

static bool emit_dot_products(std::ostringstream& body, mlir::linalg::LinalgOp op, const std::string& id,
                       const VectorIsa& isa, int threads, const std::function<void()>& match, ScheduleSummary& sum) {
  const std::optional<DotTiles> dt = dot_tiles(op, isa, threads);
  if (!dt) return false;
  const auto [tm, tn, v, prefetch] = *dt;
  const size_t n = op.getNumLoops(), o = n - 3;
  match();
  std::vector<int64_t> granules(n, 1);
  granules[o] = tm;
  granules[o + 1] = tn;
  const std::vector<int64_t> par = parallel_tiles(op, threads, min_dot_work(op.getStaticLoopRanges()[o]), granules);
  const std::string cur = forall_if(body, id, par);
  if (!par.empty()) ++sum.parallel;
  std::vector<int64_t> tiles(n, 1);
  tiles[o] = tm;
  tiles[o + 1] = tn;
  tiles[o + 2] = 0;
  emit_tile(body, cur, id + "r", tiles);
  std::vector<int64_t> split(n, 0);
  split.back() = v;
  emit_dot_reduction(body, id + "r", id, split, prefetch);
  // Batched with a few rows per batch (decode attention's q·kᵀ, one head
  // per batch): each key row read once, so the next head's keys are fetched
  // too. (Prompts read each key row again for every tile of queries.)
  if (o > 0 && op.getStaticLoopRanges()[o] <= kDotMaxStreamingRows)
    body << "    transform.annotate %" << id << "pl \"" << kBatchStreamLoopMark << "\" : !transform.any_op\n";
  ++sum.matmuls;
  return true;
}

// A quantized contraction (trace/ops_quant.cc): loops (m, n, reductions...),
// or (n, reductions...) once a single row's unit m is folded away. The same
// register tiles as emit_dot_products: tm x tn outputs, the reductions split
// into vector-wide partial sums over the innermost loop (a Q8_0 / Q4_0 block
// or a run of K), so each step widens tn weight vectors in registers and
// FMAs them into tm * tn accumulators; the partial sums are combined once.
// Recognized by its structure, not only by its mark: the fuse stage's
// unit-dim folding rebuilds the op (a decode step's single row) without it.
bool is_quantized_dot(mlir::linalg::LinalgOp op) {
  if (op->hasAttr(quantized_dot::kAttr)) return true;
  if (!llvm::isa<mlir::linalg::GenericOp>(op.getOperation()) || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0 || !all_static(op))
    return false;
  if (!llvm::cast<mlir::ShapedType>(op->getResult(0).getType()).getElementType().isF32()) return false;
  llvm::SmallVector<mlir::utils::IteratorType> it = op.getIteratorTypesArray();
  const size_t par = it.size() - op.getNumReductionLoops();
  for (size_t d = 0; d < it.size(); ++d)
    if ((d < par) != (it[d] == mlir::utils::IteratorType::parallel)) return false;  // reductions trail
  // f32 activations times i8 weights widened in the body (a sum of a widened
  // i8 tensor alone is a plain reduction).
  bool int8_input = false, f32_input = false, widens = false;
  for (mlir::OpOperand* in : op.getDpsInputOperands())
    if (auto st = llvm::dyn_cast<mlir::ShapedType>(in->get().getType())) {
      int8_input |= st.getElementType().isInteger(8);
      f32_input |= st.getElementType().isF32();
    }
  op->walk([&](mlir::arith::SIToFPOp) { widens = true; });
  return int8_input && f32_input && widens;
}

bool emit_quantized_dot(std::ostringstream& body, mlir::linalg::LinalgOp op, const std::string& id,
                        const VectorIsa& isa, int threads, const std::function<void()>& match, ScheduleSummary& sum) {
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  const size_t n = r.size(), par_loops = n - op.getNumReductionLoops();
  if (par_loops < 1 || par_loops > 2 || n < par_loops + 1) return false;
  const int64_t K = r.back(), N = r[par_loops - 1], M = par_loops == 2 ? r[0] : 1;
  const int64_t lanes = isa.f32_lanes;
  const int64_t v = largest_divisor(K, {2 * lanes, lanes, 8, 4});
  if (K % v != 0 || v < 4) return false;
  // Byte weights (int8, Q8_0) take one weight row per tile, as their
  // integer kernels do (see int8_kernel_plan): 4 row streams side by side
  // read W from memory at half the rate. Measured on Zen 5, one core, f32
  // activations, Q8_0 [1,768]·W[2048,768]ᵀ cycling through 50 MB: 4 rows
  // 8.0 GB/s, 2 rows 9.0, 1 row 18.3; in the LLC ([1,4096]·W[4096,4096]ᵀ)
  // 19.1 / 19.4 / 19.3; int8 per channel from memory 18-20 -> 24 GB/s, in
  // the LLC 32 -> 28 (decode weights are mostly read from memory). Q4_0
  // (its nibbles' unpacking the bound) alike either way: 9.2-9.5 and 10.2.
  bool nibbles = false;
  op->walk([&](mlir::arith::ShRUIOp) { nibbles = true; });
  const int64_t tn = nibbles ? largest_divisor(N, {kDotRows, 2, 1}) : 1;
  const int64_t regs = (v + lanes - 1) / lanes;  // vector registers per accumulator
  int64_t tm = 1;
  for (int64_t c : {4, 2})
    if (par_loops == 2 && M % c == 0 && c * tn * regs <= isa.registers / 2) {
      tm = c;
      break;
    }
  match();
  std::vector<int64_t> tiles(n, 0), split(n, 1), granules(n, 1);
  tiles[par_loops - 1] = granules[par_loops - 1] = tn;
  if (par_loops == 2) tiles[0] = granules[0] = tm;
  for (size_t d = 0; d < par_loops; ++d) split[d] = 0;
  split.back() = v;
  const std::vector<int64_t> par = parallel_tiles(op, threads, min_dot_work(M), granules);
  const std::string cur = forall_if(body, id, par);
  if (!par.empty()) ++sum.parallel;
  emit_tile(body, cur, id + "r", tiles);
  emit_dot_reduction(body, id + "r", id, split);
  ++sum.matmuls;
  return true;
}

// An integer-activation quantized product (trace/ops_quant.cc marks it
// quantized_dot::kFormatAttr with its format) is left to the radix-int8-dot-kernels pass
// (after bufferization) on hosts with AVX2: its 32-byte blocks are integer
// dot products there (vpmaddubsw + vpmaddwd, or VNNI's vpdpbusd), which the
// vectorizer would widen to i32 lane by lane instead. The plan it gets:
// [tm, tn, parallel, vnni, blocked, interleaved, wide, gfni] — tn weight rows x tm activation rows
// of 8-lane accumulators (within 3/4 of AVX2's 16 registers), the
// weight-row tiles split over the threads when the product is large enough
// (the dot-product threshold), vpdpbusd where the host has AVX-512 VNNI
// with 256-bit vectors (VL) or AVX-VNNI, and `blocked` for more than
// kInt8BlockedMinRows activation rows (a prompt: see the pass), and
// `interleaved` for Q4_0 prompts with N a multiple of 8 (and Q8_0 ones
// with N a multiple of 16), `wide` for
// 512-bit vpdpbusd (AVX-512 VNNI + BW, a 16-lane schedule), `gfni` with
// wide where the host has GFNI (Q4_0's nibbles by vgf2p8affineqb).
//
// Byte weights (int8, Q8_0) take one weight row per tile: tiles of 4 rows,
// 4 row streams read side by side, fell to a third of the read rate once the
// weights no longer fit the cache, which is where a decode step's weights
// are (a model larger than the LLC). Measured on Zen 3 (AVX2), [1,k]·W[n,k]ᵀ,
// Gweight/s with 1 / 4 rows per tile: Q8_0 65536x768 (out of cache) 10.1 /
// 5.2, 24576x2048 10.9 / 6.9, 32768x4096 11.9 / 9.5, two threads 65536x768
// 18.4 / 8.3; int8 65536x768 9.6 / 5.4; in cache (2048x768) 17.1 / 24.6, the
// price. Q4_0 (half the bytes, bound by its nibble unpacking) keeps 4 rows:
// out of cache 14.8-16.3 / 12.7-16.3, in cache 13.8 / 17.1.
constexpr int64_t kInt8BlockedMinRows = 16;
constexpr int64_t kInt8InterleavedMaxK = 32768;
constexpr int64_t kF32PromptMinRows = 3;  // see int8_kernel_plan
// Decode rows times x16 weights with int8 activations split over threads
// from this many multiply-adds (the f32 mat-vecs' min_dot_work is 32K): the
// integer kernels run ~130 Gweight/s per core from the LLC, so a product of
// stories15M's layers (83K-221K weights, 1-2 us on one core) took less time
// than the fork / join it was split by (~2 us), and on two threads that
// model's Q4_0 decode ran slower than on one. Measured on Zen 5, a random
// stories15M, 64 decode steps (best of 20 rounds), two threads, the two
// thresholds in alternated processes: Q4_0 182-198 -> 141-144 us per token
// (one thread: 151-165), Q8_0 213-224 -> 204-214. stories110M's products
// (590K and up) stay split.
constexpr int64_t kInt8DecodeMinParallelWork = int64_t{1} << 19;
// Without 512-bit VNNI (AVX2's vpmaddubsw, ~60 Gweight/s per core from
// Zen 3's LLC) the same products take twice as long, and split from 64K
// multiply-adds (stories15M's layers all split: the merged q / k / v and
// gate / up products, wo, w2). Measured on Zen 3, a random stories15M, 64
// decode steps, two threads, alternated in one process against 2^19:
// Q4_0 1.03-1.11x, Q8_0 1.09-1.37x; from 2^17 (the 221K products alone)
// Q4_0 0.94-1.07x, Q8_0 1.09-1.11x.
constexpr int64_t kInt8DecodeMinParallelWorkAvx2 = int64_t{1} << 16;

// Q4_0x16 (16 weight rows interleaved in W's bytes: loops (m, R, i, kb, g,
// t), see the pass): tiles of one row group (16 weight rows, the lanes of
// an accumulator of 16 lanes, or 2 of 8) times tm rows of x. One group: the
// tile then reads W as one forward stream (a row group's blocks are
// contiguous, the next tile's follow), which the hardware prefetchers
// follow; 4 groups side by side (4 streams 16 * k / 2 bytes apart) read
// more per loop but streamed far slower once W came from memory, which is
// where a decode step's weights are. Measured on Zen 5, one core, Q4_0x16
// [1,768]·W[2048,768]ᵀ and [1,768]·W[32000,768]ᵀ cycling through 250 MB of
// copies (out of cache): G = 1 19-24 GB/s, G = 4 11.5-14 (plain Q4_0 11-14);
// stories110M Q4_0 decode 1.44x with G = 1; in the LLC ([1,4096]·W[4096,4096]ᵀ)
// G = 1 and 4 alike (113 / 105 Gweight/s). Software prefetching of the
// blocks 2-16 ahead measured within the noise. Code for Zen 3 (AVX2) run
// on Zen 5, [1,768]·W[2048,768]ᵀ: G = 1 64, G = 2 53.
// Prompts: 4 rows of x per group (the weights then come from L1 for every
// row tile; 2 groups x 4 rows, 4 x 2 and 4 x 4 measured 0.90-1.0x).
// Same plan fields as int8_kernel_plan, tn = 16, interleaved set.
//
// Q8_0x16's bytes are signed: vpdpbusd reads them offset by 128, AVX2's
// vpmaddubsw as |w| times x with w's sign (see the pass).
//
// Threads: from min_dot_work(M) multiply-adds, or for the integer kernels'
// decode rows (`format` with int8 activations) from kInt8DecodeMinParallelWork.
std::optional<std::vector<int64_t>> rows_kernel_plan(llvm::ArrayRef<int64_t> r, int threads, const Int8Target& host,
                                                     llvm::StringRef format) {
  if (r.size() != 5 && r.size() != 6) return std::nullopt;
  const bool has_m = r.size() == 6;
  const int64_t M = has_m ? r[0] : 1, NR = r[has_m ? 1 : 0], K = r[has_m ? 3 : 2] * 32, N = NR * 16;
  const bool blocked = M > kInt8BlockedMinRows;
  const bool wide = host.vnni512;
  const int64_t tm = blocked ? largest_divisor(M, {4, 3, 2, 1}) : 1;
  const bool int8_activations = format == quantized_dot::kQ4_0x16 || format == quantized_dot::kQ8_0x16;
  const int64_t min_work =
      !int8_activations || M > kDotMaxStreamingRows ? min_dot_work(M)
      : wide                                        ? kInt8DecodeMinParallelWork
                                                    : kInt8DecodeMinParallelWorkAvx2;
  const bool parallel = threads > 1 && NR >= threads && M * N * K >= min_work;
  return std::vector<int64_t>{tm, 16, parallel ? 1 : 0, host.vnni ? 1 : 0, blocked ? 1 : 0, 1, wide ? 1 : 0, 0};
}

std::optional<std::vector<int64_t>> int8_kernel_plan(mlir::linalg::LinalgOp op, int threads,
                                                    const Int8Target& host) {
  if (!host.avx2 || !op->hasAttr(quantized_dot::kFormatAttr) || !all_static(op)) return std::nullopt;
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  auto format = op->getAttrOfType<mlir::StringAttr>(quantized_dot::kFormatAttr);
  const llvm::StringRef f = format ? format.getValue() : llvm::StringRef();
  if (f == quantized_dot::kQ4_0x16 || f == quantized_dot::kQ8_0x16) return rows_kernel_plan(r, threads, host, f);
  if (f == quantized_dot::kQ4_0x16F32 || f == quantized_dot::kQ8_0x16F32) {
    // f32 activations (f32_rows_kernel.cc): one row group per tile; `wide`
    // is 16 f32 lanes, `blocked` a prompt (W dequantized on the stack once
    // per group, then tiles of x's rows) from kF32PromptMinRows rows on.
    // Measured on Zen 5, one core, [m,768]·W[2048,768]ᵀ GFLOP/s, rows of x
    // one after the other / the prompt form: m = 2 44-50 / 38-47, 3 39-49 /
    // 55-59, 4 44-50 / 61, 8 44-50 / 86, 16 44-49 / 93-96 (Zen 3's code
    // there alike from m = 3: 39-50 / 55-59).
    std::optional<std::vector<int64_t>> plan = rows_kernel_plan(r, threads, host, f);
    if (plan) {
      (*plan)[4] = r.size() == 6 && r[0] >= kF32PromptMinRows ? 1 : 0;
      (*plan)[6] = host.avx512 ? 1 : 0;
    }
    return plan;
  }
  if (f == quantized_dot::kQ4_0F32 || f == quantized_dot::kQ8_0F32) {
    // Plain rows times f32 activations, 16 rows at a time: the x16 forms'
    // prompt kernel, each group dequantized from its plain rows.
    std::optional<std::vector<int64_t>> plan = rows_kernel_plan(r, threads, host, f);
    if (!plan || r.size() != 6) return std::nullopt;
    (*plan)[4] = 1;
    (*plan)[6] = host.avx512 ? 1 : 0;
    return plan;
  }
  if (r.size() != 3 && r.size() != 4) return std::nullopt;
  const bool has_m = r.size() == 4;
  const int64_t M = has_m ? r[0] : 1, N = r[has_m ? 1 : 0], K = r[has_m ? 2 : 1] * 32;
  const bool byte_weights = format && f != quantized_dot::kQ4_0;
  int64_t tn = byte_weights ? 1 : largest_divisor(N, {kDotRows, 2, 1});
  int64_t tm = 1;
  for (int64_t c : {3, 2})
    if (M % c == 0 && c * tn <= 12 - c) {
      tm = c;
      break;
    }
  // A prompt: the weights are read from cache once per row tile, so byte
  // weights take several rows too; tm x tn = 8 accumulators, tm first
  // (4 x 2 and 2 x 4 measured alike).
  const bool blocked = M > kInt8BlockedMinRows;
  if (blocked) {
    tm = largest_divisor(M, {4, 3, 2});
    tn = 1;
    for (int64_t c = 8 / tm; c > 1 && tn == 1; --c)
      if (N % c == 0) tn = c;
  }
  // Q4_0 prompts with whole tiles of 8 weight rows: W's rows in the
  // accumulators' lanes (see the pass), 4 rows of x per tile (tm 2 and 8
  // measured 0.95x and 0.86x of 4 on stories110M Q4_0 prefill, Zen 3). The
  // tile's rewritten rows live on each thread's stack: 8 bytes per element
  // of k, so k is capped (32768: 256 KiB).
  // Q8_0 prompts with whole groups of 16 weight rows likewise: the Q8_0x16
  // tiles over each group rewritten on the stack (see the pass; 512 bytes
  // per block, the cap of Q4_0's 16-row tiles), 16 rows on every ISA.
  const bool q8_groups = blocked && f == quantized_dot::kQ8_0 && N % 16 == 0 && K <= kInt8InterleavedMaxK / 2;
  const bool interleaved = q8_groups || (blocked && !byte_weights && N % 8 == 0 && K <= kInt8InterleavedMaxK);
  // 512-bit vpdpbusd: two blocks per instruction, or 16 interleaved weight
  // rows (N a multiple of 16; twice the stack per element of k, so half
  // the cap), else the 8-row interleaved tiles stay 256-bit.
  const bool wide = host.vnni512 && (!interleaved || (N % 16 == 0 && K <= kInt8InterleavedMaxK / 2));
  if (interleaved) {
    tm = largest_divisor(M, {4, 3, 2, 1});
    tn = wide || q8_groups ? 16 : 8;
  }
  const bool parallel = threads > 1 && N / tn >= threads && M * N * K >= min_dot_work(M);
  return std::vector<int64_t>{tm,         tn, parallel ? 1 : 0, host.vnni ? 1 : 0, blocked ? 1 : 0, interleaved ? 1 : 0,
                              wide ? 1 : 0, wide && host.gfni ? 1 : 0};
}

// f32 activations times bf16 weights [n, k] on AVX-512 BF16 targets: the
// radix-bf16-dot-kernels pass (after bufferization) rounds x to bf16 once
// and runs vdpbf16ps dot products, 32 products per instruction where the
// packed and dot-product schedules widen W to f32 for 16. Tiles of tm rows
// of x by tn rows of W, tm * tn <= 16 accumulators (of 32 zmm registers),
// each a power of two (their sums are combined as a shuffle tree); weight-row
// tiles split over the threads like the other dot products.
std::optional<std::vector<int64_t>> bf16_kernel_plan(mlir::linalg::LinalgOp op, int threads, const Int8Target& host) {
  if (!host.bf16 || !llvm::isa<mlir::linalg::MatmulOp>(op.getOperation()) || !all_static(op) || !b_transposed(op))
    return std::nullopt;
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) return std::nullopt;
  auto et = [&](unsigned i) { return llvm::cast<mlir::ShapedType>(op->getOperand(i).getType()).getElementType(); };
  if (!et(0).isF32() || !et(1).isBF16() || !et(2).isF32()) return std::nullopt;
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  const int64_t M = r[0], N = r[1], K = r[2];
  if (K % 32 != 0) return std::nullopt;
  // Rows in tiles of 4 (the kernel takes the last M % 4 one at a time: a
  // prompt of 129 tokens ran in one-row tiles, each weight row read once
  // per row of x).
  const int64_t tm = M >= 4 ? 4 : largest_divisor(M, {2, 1});
  // One row of x (decode): one weight row per tile, W read front to back as
  // one stream. Measured on Zen 5, one core (a shared one: FMA at about half
  // its full rate), [1,768]·W[n,768]ᵀ bf16, GB/s of W with tiles of 8 / 1
  // rows: n = 2048 in cache 82 / 95, out of cache (cycling through 300 MB of
  // copies) 12 / 26, n = 32000 out of cache 12 / 23; [1,4096]·W[4096,4096]ᵀ
  // (in the LLC) 36 / 34; stories110M bf16 decode 49 -> 93 tok/s, stories15M
  // 360 -> 1100 (2, 4 and 8 rows measured alike).
  const int64_t tn = M == 1 ? 1 : tm == 4 ? largest_divisor(N, {4, 2, 1}) : largest_divisor(N, {8, 4, 2, 1});
  const bool parallel = threads > 1 && N / tn >= threads && M * N * K >= min_dot_work(M);
  return std::vector<int64_t>{tm, tn, parallel ? 1 : 0};
}

void int8_outputs_without_fills(mlir::ModuleOp module, int threads, const Int8Target& host) {
  llvm::SmallVector<mlir::linalg::LinalgOp> ops;
  module.walk([&](mlir::linalg::LinalgOp op) {
    if (op->hasAttr(quantized_dot::kFormatAttr) && op.getNumDpsInits() == 1 && int8_kernel_plan(op, threads, host)) ops.push_back(op);
  });
  for (mlir::linalg::LinalgOp op : ops) {
    mlir::OpOperand* init = op.getDpsInitOperand(0);
    auto fill = init->get().getDefiningOp<mlir::linalg::FillOp>();
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(init->get().getType());
    if (!fill || !type || !type.hasStaticShape() || !mlir::matchPattern(fill.getInputs()[0], mlir::m_AnyZeroFloat()))
      continue;
    mlir::OpBuilder b(op);
    init->set(mlir::tensor::EmptyOp::create(b, op.getLoc(), type.getShape(), type.getElementType()));
    op->setAttr(kInt8OverwriteAttr, b.getUnitAttr());
    if (fill->use_empty()) fill->erase();
  }
}

// ---- Register tiles starting from zeros --------------------------------------
// A register-tiled product's zero fill is fused into its tiles: each tile
// fills its own slice of C right before its K loop, so the accumulators
// start as zeros in registers (the fill's write folds into them) and C is
// written once. Filled first as a whole, C was written, read back and
// written again: attention scores over 301 tokens, 12 heads (a 4.3 MB C,
// past L2), spent a quarter of their time on it.

namespace {
struct BatchTiles {
  int64_t tm, tn;
  std::vector<int64_t> par;  // the threads' forall tiles (empty: one thread)
  int64_t rows6;             // rows in 6-row tiles before 4-row ones (0: one tile height)
};

// A batch_matmul with B [.., k, n]: one batch at a time through the same
// register tiles as a matmul (the unit batch dim of the vector.contract is
// cast away before lowering); none if it has none.
std::optional<BatchTiles> batch_register_tiles(mlir::linalg::LinalgOp op, const VectorIsa& isa, int threads) {
  if (b_transposed(op)) return std::nullopt;
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  mlir::Type et = llvm::cast<mlir::ShapedType>(op->getResult(0).getType()).getElementType();
  auto tile = register_tile(ranges[1], ranges[2], isa);
  if (!llvm::isa<mlir::Float32Type, mlir::Float64Type>(et) || op.hasUserDefinedMaps() || !tile) return std::nullopt;
  auto [tm, tn] = *tile;
  // A few rows per batch (decode attention's probabilities times V):
  // the whole row of B per tile while the accumulators fit, so each V row
  // is read once, front to back. With the register tile's 2 vectors, a
  // 64-wide head's V rows were read in two passes of half rows, two FMA
  // chains each. Measured on Zen 5, one core, stories110M Q4_0 decode at
  // positions 900-964 (f32 KV cache): 148-157 -> 173-191 tok/s.
  // Rows of a power of two vectors only: others were legalized into
  // shuffles and spills. Zen 5, one core, p[12,1,300]·v[12,300,d], whole
  // rows / the register tile's: d = 96 (6 vectors) 25.8 / 15.4 us, 160 91 /
  // 28, 192 130 / 30, 48 12.0 / 9.8, 80 17 / 20; stories15M's heads,
  // p[6,1,256]·v[6,256,48], 5.9-6.4 / 5.5-5.7 (AVX2 code, 6 vectors of 8:
  // 11-11.6 / 5.6-5.7).
  const int64_t row_vectors = ranges[2] / isa.f32_lanes;
  if (ranges[1] <= kDotMaxStreamingRows && ranges[2] % isa.f32_lanes == 0 &&
      tm * row_vectors <= max_accumulators(isa) && llvm::isPowerOf2_64(uint64_t(row_vectors)))
    tn = ranges[2];
  // min_dot_work as for a matmul: a few rows per batch (decode attention's
  // probabilities times V) stream B.
  std::vector<int64_t> par = parallel_tiles(op, threads, min_dot_work(ranges[1]), {1, tm, tn, 1});
  // 16 registers, rows no 6 divides (4-row tiles, 8 accumulators): on one
  // thread, 6-row tiles (12 accumulators) over the most rows they can take
  // and 4-row tiles over the rest (128 = 120 + 8), as the packed matmul's
  // parts. Measured on Zen 5 with code for Zen 3, one thread, attention
  // scores q[12,128,64]·k[12,128,64]ᵀ (k transposed first): 88-93 -> 99
  // GFLOP/s, 0.89 -> 0.96x oneDNN held to AVX2 (0.99 -> 1.05x OpenBLAS's
  // Haswell kernel). With threads the op stays one parallel loop.
  const bool wide_rows =
      par.empty() && isa.registers < 32 && tm == 4 && tn == 2 * isa.f32_lanes && ranges[1] > kDotMaxStreamingRows;
  return BatchTiles{tm, tn, std::move(par), wide_rows ? wide_tile_rows(ranges[1]) : 0};
}

// Tiles `id` (forall tiles `par` first, if any) into register tiles of
// `sizes` (K untiled) with its fill fused (fuses_fill_into_tiles), then
// the K loop in steps of one.
void emit_register_tiles(std::ostringstream& body, const std::string& id, const std::vector<int64_t>& par,
                         const std::vector<int64_t>& sizes, bool fuse_fill) {
  std::vector<int64_t> k(sizes.size(), 0);
  k.back() = 1;
  if (!fuse_fill) {
    emit_tile(body, forall_if(body, id, par), id + "r", sizes);
    emit_tile(body, id + "r", id + "s", k);
    return;
  }
  body << "    %" << id << "fi = transform.get_producer_of_operand %" << id
       << "[2] : (!transform.any_op) -> !transform.any_op\n";
  std::string cur = id;
  if (!par.empty()) {
    cur = forall_if(body, id, par);
    body << "    %" << id << "fi2, %" << id << "fa2 = transform.structured.fuse_into_containing_op %" << id
         << "fi into %" << cur << "_fa : (!transform.any_op, !transform.any_op) -> (!transform.any_op, "
            "!transform.any_op)\n";
  }
  int loops = 0;
  for (int64_t s : sizes) loops += s != 0;
  body << "    %" << id << "r";
  for (int i = 0; i < loops; ++i) body << ", %" << id << "r_l" << i;
  body << " = transform.structured.fuse %" << cur << " tile_sizes " << tile_list(sizes)
       << " : (!transform.any_op) -> (!transform.any_op";
  for (int i = 0; i < loops; ++i) body << ", !transform.any_op";
  body << ")\n"
       << "    %" << id << "rf = transform.structured.match ops{[\"linalg.fill\"]} in %" << id << "r_l" << loops - 1
       << " : (!transform.any_op) -> !transform.any_op\n"
       << "    transform.structured.vectorize %" << id << "rf : !transform.any_op\n";
  emit_tile(body, id + "r", id + "s", k);
}
}  // namespace

bool fuses_fill_into_tiles(mlir::linalg::FillOp fill, const VectorIsa& isa, int threads) {
  if (!fill->hasOneUse()) return false;
  auto op = llvm::dyn_cast<mlir::linalg::LinalgOp>(*fill->getUsers().begin());
  if (!op || op.getNumDpsInits() != 1 || op.getDpsInitOperand(0)->get() != fill->getResult(0) || !all_static(op))
    return false;
  if (llvm::isa<mlir::linalg::BatchMatmulOp>(op.getOperation())) {
    const std::optional<BatchTiles> t = batch_register_tiles(op, isa, threads);
    return t && t->rows6 == 0;
  }
  // A matmul's register tiles (emit_contraction), not in cache blocks.
  mlir::linalg::MatmulOp mm = plain_matmul(op.getOperation());
  if (!mm || b_transposed(op) || use_packed_schedule(mm, isa)) return false;
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  const std::optional<std::pair<int64_t, int64_t>> tile = register_tile(r[0], r[1], isa);
  return tile && !uses_small_blocks(r[0], r[1], r[2], tile->first, tile->second);
}

bool emit_contraction(std::ostringstream& body, mlir::linalg::LinalgOp op, const std::string& id,
                      const VectorIsa& isa, int threads, const std::function<void()>& match, ScheduleSummary& sum) {
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::isa<mlir::linalg::MatmulOp>(op.getOperation())) {
    auto mm = plain_matmul(op.getOperation());
    if (!mm) {
      ++sum.skipped;
      return true;
    }
    const bool bt = b_transposed(op);
    if (use_packed_schedule(mm, isa)) {
      match();
      const bool f32_b =
          llvm::cast<mlir::ShapedType>(mm.getDpsInputOperand(1)->get().getType()).getElementType().isF32();
      std::string widened;
      if (mlir::Operation* a = mm.getDpsInputOperand(0)->get().getDefiningOp(); a && widened_into_packed_a(a, isa))
        widened = std::to_string(llvm::cast<mlir::IntegerAttr>(a->getAttr(kWidenedMark)).getInt());
      emit_packed_matmul(body, id, isa, threads, bt, f32_b, *pack_blocks(ranges[0], ranges[1], ranges[2], isa, threads), ranges[0],
                         ranges[1], ranges[2], widened);
      ++sum.matmuls;
      ++sum.packed;
      if (threads > 1) ++sum.parallel;
      return true;
    }
    const int64_t M = ranges[0], N = ranges[1], K = ranges[2];
    if (bt) {
      if (!emit_dot_products(body, op, id, isa, threads, match, sum)) ++sum.skipped;
      return true;
    }
    auto tile = register_tile(M, N, isa);
    if (!tile) {
      ++sum.skipped;
      return true;
    }
    auto [tm, tn] = *tile;
    match();
    std::string cur = id;
    if (uses_small_blocks(M, N, K, tm, tn)) {
      if (threads > 1) {
        emit_forall(body, cur, id + "b", {kSmallBlockM, kSmallBlockN, 0});
        ++sum.parallel;
      } else {
        emit_tile(body, cur, id + "b", {kSmallBlockM, kSmallBlockN, 0});
      }
      emit_tile(body, id + "b", id + "k", {0, 0, kSmallBlockK});
      cur = id + "k";
      emit_tile(body, cur, id + "r", {tm, tn, 0});
      emit_tile(body, id + "r", id + "s", {0, 0, 1});
    } else {
      // min_dot_work: a few rows (a decode mat-vec with W stored [K, N])
      // stream B as dot-product tiles stream their weights.
      const std::vector<int64_t> par = parallel_tiles(op, threads, min_dot_work(M), {tm, tn, 1});
      if (!par.empty()) ++sum.parallel;
      // A few rows on one thread (129³'s 129th row, a decode step with B
      // stored [K, N]): 8 or 4 vectors of columns per tile where N and the
      // accumulators allow, not the register tile's two: one row's two FMA
      // chains left the FMA units three quarters idle. (Powers of two: a
      // 6-vector row, vector<96xf32>, was legalized into shuffles and
      // spills, 30x slower. At most half the registers as accumulators:
      // AVX2's 3 x 4 vectors, 12 of 16, ran 129³'s 3 rest rows 1.5% slower
      // than 3 x 2.) Measured on Zen 5, one core, one process alternating
      // the two: [1,129]·[129,128] 1.08-1.12x, [1,512]·[512,256] 1.44-1.56x,
      // [2,1000]·[1000,128] 1.9x, [3,300]·[300,64] 1.31x, 129³ 1.01x (two
      // threads 1.01x; the products split over threads keep their tiles);
      // AVX2 code (znver3) 1.38-1.42x, 1.6-1.7x, 1.0x and 129³ 1.0-1.02x.
      if (par.empty() && M <= kDotMaxStreamingRows)
        for (int64_t vectors : {8, 4}) {
          const int64_t w = vectors * isa.f32_lanes;
          if (w > tn && N % w == 0 && tm * vectors <= isa.registers / 2) {
            tn = w;
            break;
          }
        }
      auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>();
      emit_register_tiles(body, id, par, {tm, tn, 0}, fill && fuses_fill_into_tiles(fill, isa, threads));
    }
    body << "    transform.structured.vectorize %" << id << "s {create_named_contraction} : !transform.any_op\n";
    ++sum.matmuls;
    return true;
  }

  if (llvm::isa<mlir::linalg::BatchMatmulOp>(op.getOperation()) && b_transposed(op)) {
    if (!emit_dot_products(body, op, id, isa, threads, match, sum)) ++sum.skipped;
    return true;
  }
  if (llvm::isa<mlir::linalg::BatchMatmulOp>(op.getOperation())) {
    const std::optional<BatchTiles> bt = batch_register_tiles(op, isa, threads);
    if (!bt) {
      ++sum.skipped;
      return true;
    }
    const auto& [tm, tn, par, rows6] = *bt;
    match();
    if (!par.empty()) ++sum.parallel;
    if (rows6 > 0) {
      emit_split(body, id, id + "sp", rows6, 1, id + "p0", id + "p1");
      for (auto [part, rows] : {std::pair<std::string, int64_t>{id + "p0", kWideRegM}, {id + "p1", 4}}) {
        emit_tile(body, part, part + "r", {1, rows, tn, 0});
        emit_tile(body, part + "r", part + "s", {0, 0, 0, 1});
        body << "    transform.structured.vectorize %" << part << "s {create_named_contraction} : !transform.any_op\n";
      }
      ++sum.matmuls;
      return true;
    }
    auto fill = op.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>();
    emit_register_tiles(body, id, par, {1, tm, tn, 0}, fill && fuses_fill_into_tiles(fill, isa, threads));
    // A few rows per batch (decode attention's probabilities times V, one
    // head per batch) read each B row once: its reads prefetch the next
    // batch's.
    if (ranges[1] <= kDotMaxStreamingRows)
      body << "    transform.annotate %" << id << "s_l0 \"" << kBatchStreamLoopMark << "\" : !transform.any_op\n";
    body << "    transform.structured.vectorize %" << id << "s {create_named_contraction} : !transform.any_op\n";
    ++sum.matmuls;
    return true;
  }

  return false;
}

}  // namespace radix::cpu_schedule
