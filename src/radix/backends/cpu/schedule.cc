#include "radix/backends/cpu/schedule.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <utility>

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/TargetParser/Host.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "radix/trace/diagnostic_collector.h"

namespace radix {

namespace {
constexpr const char* kMark = "radix.sid";
// On loops whose vector multiply-adds become vector.fma (see emit_dot_products).
constexpr const char* kFmaMark = "radix.fma";
constexpr const char* kStreamMark = "radix.stream_loop";
// Set by trace/ops_quant.cc on its contractions.
constexpr const char* kQuantizedDotAttr = "radix.quantized_dot";

// ---- Tuning knobs -----------------------------------------------------------
// Measured on AMD EPYC (Zen 3, AVX2, 1 thread), 1024^3 f32: see bench/README.md.

// Large matmuls (M*N*K >= kPackMinVolume): B (and C) are packed into
// column panels of kPanelVectors vectors (16 f32 on AVX2, 32 on AVX-512),
// laid out [N / panel][K][panel], so the register tile streams B contiguously
// (unpacked, every K step of a 1024-wide B row is a new 4 KiB page and L1 set).
// Loop nest over the packed op (m, n-panel, k, n-in-panel):
//   block-M x kBlockN output blocks, K blocks (L2) — see pack_blocks,
//   register tiles of reg_m rows x 1 panel, K steps of kRegK (one vector.contract
//   of reg_m x panel x kRegK, lowered to FMAs as outer products).
// Block sizes are the largest of each list that divides the dim. AVX-512
// hosts (1-2 MiB of L2 per core) take larger blocks: measured on a Xeon
// (family 6 model 207), one thread, 1024^3 / 4096^3: 64x256x256 129 / 101
// GFLOP/s, 128x256x512 138 / 117, 256x256x512 142 / 138, 512x256x512
// 110 / 141, 256x512x512 106 / 122. AVX2 keeps the Zen 3 tuning (512 KiB L2).
constexpr int64_t kPackMinVolume = int64_t{1} << 24;
constexpr int64_t kPackMinVolumeTransposedB = int64_t{1} << 20, kPackedMinRowsTransposedB = 16;
constexpr int64_t kPanelVectors = 2;
constexpr int64_t kBlockN = 256;
constexpr std::initializer_list<int64_t> kBlockMAvx512 = {256, 128, 64}, kBlockKAvx512 = {512, 256};
constexpr std::initializer_list<int64_t> kBlockMAvx2 = {64}, kBlockKAvx2 = {256};
constexpr int64_t kRegK = 4;
constexpr int64_t kPackCopyK = 8;  // K rows per vectorized step of B's packing copy
// Register tile rows: accumulators = reg_m * kPanelVectors must leave room for
// the B vectors and the A broadcast: 4 x 2 = 8 of 16 ymm, 8 x 2 = 16 of 32 zmm.
int64_t packed_reg_m(const VectorIsa& isa) { return isa.registers >= 32 ? 8 : 4; }
// AVX2 (16 registers) runs the rows it can in tiles of 6 x 2 vectors, 12
// accumulators: 8 left two FMAs' latency (4 cycles on Zen 3, 2 issued per
// cycle) with no slack, and a 6-row tile loads 2 B vectors per 6
// broadcasts instead of per 4. Block-M must then be a multiple of 6 (96, or
// 48 to give threads enough blocks): the packed op is split at the last
// whole block, the rows after it run in the 4-row tiles. Measured on Zen 3,
// one core against OpenBLAS, 1024^3 0.82 -> 0.89, 512^3 0.90 -> 0.99,
// x[128,768]·W[2048,768]ᵀ 0.89 -> 0.92 (two cores 0.82 -> 0.98).
constexpr int64_t kWideRegM = 6;
constexpr std::initializer_list<int64_t> kWideBlockM = {96, 48};  // largest first

// Other matmuls: register tiles tm x tn (tn up to 2 vectors), K steps of 1,
// with at most kMaxAccumulatorShare of the registers holding accumulators.
constexpr double kMaxAccumulatorShare = 0.75;
constexpr int64_t kSmallBlockM = 64, kSmallBlockN = 256, kSmallBlockK = 256;  // used if volume >= kPackMinVolume

// Elementwise ops and fills: innermost dim tiled by 16 f32 (one zmm, two ymm).
constexpr std::initializer_list<int64_t> kElementwiseWidths = {16, 8, 4};
// -----------------------------------------------------------------------------

int64_t largest_divisor(int64_t n, std::initializer_list<int64_t> candidates) {
  for (int64_t c : candidates)
    if (c > 0 && n % c == 0) return c;
  return 1;
}

// Radix keeps bools one byte per element (LLVM's scalar i1 layout), but a
// vector<N x i1> is stored as N packed bits: ops touching bools stay scalar.
bool touches_bool(mlir::linalg::LinalgOp op) {
  for (mlir::Value v : op->getOperands()) {
    mlir::Type t = v.getType();
    if (auto st = llvm::dyn_cast<mlir::ShapedType>(t)) t = st.getElementType();
    if (t.isInteger(1)) return true;
  }
  return false;
}

// linalg's vectorizer needs every indexing map to be a projected permutation
// and no tensor.extract in the body (without gather support). Others — a
// reverse's (n-1-d) map, a gather — stay plain loops rather than failing the
// whole schedule.
bool vectorizable_generic(mlir::linalg::LinalgOp op) {
  for (mlir::AffineMap m : op.getIndexingMapsArray())
    if (!m.isProjectedPermutation(/*allowZeroInResults=*/true)) return false;
  bool extracts = false;
  op->walk([&](mlir::Operation* inner) { extracts |= inner->getName().getStringRef() == "tensor.extract"; });
  return !extracts;
}

bool all_static(mlir::linalg::LinalgOp op) {
  for (mlir::Value v : op->getOperands())
    if (auto st = llvm::dyn_cast<mlir::ShapedType>(v.getType()))
      if (!st.hasStaticShape()) return false;
  return true;
}

std::string tile_list(const std::vector<int64_t>& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.size(); ++i) s += (i ? ", " : "") + std::to_string(t[i]);
  return s + "]";
}

// Emits `tile_using_for` with `n_loops` loop results and returns the new op handle.
void emit_tile(std::ostringstream& os, const std::string& in, const std::string& out,
               const std::vector<int64_t>& sizes) {
  int loops = 0;
  for (int64_t s : sizes) loops += s != 0;
  os << "    %" << out;
  for (int i = 0; i < loops; ++i) os << ", %" << out << "_l" << i;
  os << " = transform.structured.tile_using_for %" << in << " tile_sizes " << tile_list(sizes)
     << " : (!transform.any_op) -> (!transform.any_op";
  for (int i = 0; i < loops; ++i) os << ", !transform.any_op";
  os << ")\n";
}

// Emits `tile_using_forall` (the tiles become the iterations of an
// scf.forall, run on the executable's threads) and names the tiled op `out`.
void emit_forall(std::ostringstream& os, const std::string& in, const std::string& out,
                 const std::vector<int64_t>& sizes) {
  os << "    %" << out << ", %" << out << "_fa = transform.structured.tile_using_forall %" << in << " tile_sizes "
     << tile_list(sizes) << " : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
}

// With `par` non-empty, tiles `id` into an scf.forall of those tile sizes
// first; returns the handle the next tiling level applies to.
std::string forall_if(std::ostringstream& os, const std::string& id, const std::vector<int64_t>& par,
                      const std::string& suffix = "f") {
  if (par.empty()) return id;
  emit_forall(os, id, id + suffix, par);
  return id + suffix;
}

// ---- Threads ----------------------------------------------------------------
// An op is split over threads when it has at least this much work (loop
// iterations: elements for elementwise ops, M*N*K for matmuls): an OpenMP
// fork/join costs ~1-3 us, and below this the op runs in about that time.
constexpr int64_t kParallelMinWork = int64_t{1} << 16;
constexpr int64_t kParallelMinMatmulWork = int64_t{1} << 18;
// Dot-product tiles (weights read as [n, k] rows, the decode mat-vecs) are
// bound by reading the weights, not by FMAs: from 32K multiply-adds (128 KiB
// of f32 weights, several microseconds of reading) another core's bandwidth
// pays for the fork/join (stories15M's [1,288]·W[768,288]ᵀ has 221K).
// Only for a few rows (decode); with more rows the tiles reuse each weight
// row from cache and are bound by FMAs again.
constexpr int64_t kParallelMinDotWork = int64_t{1} << 15, kDotMaxStreamingRows = 4;
int64_t min_dot_work(int64_t rows) { return rows <= kDotMaxStreamingRows ? kParallelMinDotWork : kParallelMinMatmulWork; }

// The tile size that splits a loop of `range` iterations into c >= threads
// equal chunks, each a multiple of `granule` (so the inner tiles still divide
// it); c a multiple of `threads` if one fits, so no thread idles at the end.
// 0 when single-threaded or no such split exists.
int64_t parallel_chunk(int64_t range, int threads, int64_t granule) {
  if (threads <= 1 || range < threads) return 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t c = threads; c <= range && c <= 64 * int64_t{threads}; ++c) {
      if (pass == 0 && c % threads != 0) continue;
      if (range % c == 0 && (range / c) % granule == 0) return range / c;
    }
  return 0;
}

// Forall tile sizes for `op` splitting its first parallel loop that divides
// (granules[d] per loop), or empty when the op stays single-threaded.
std::vector<int64_t> parallel_tiles(mlir::linalg::LinalgOp op, int threads, int64_t min_work,
                                    const std::vector<int64_t>& granules) {
  if (threads <= 1) return {};
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  int64_t work = 1;
  for (int64_t x : r) work *= x;
  if (work < min_work) return {};
  llvm::SmallVector<mlir::utils::IteratorType> iters = op.getIteratorTypesArray();
  for (size_t d = 0; d < r.size(); ++d) {
    if (iters[d] != mlir::utils::IteratorType::parallel) continue;
    const int64_t chunk = parallel_chunk(r[d], threads, d < granules.size() ? granules[d] : 1);
    if (chunk > 0) {
      std::vector<int64_t> sizes(r.size(), 0);
      sizes[d] = chunk;
      return sizes;
    }
  }
  return {};
}

// Tiles the innermost loop by `v` lanes and every other loop by 1, then
// vectorizes: elementwise ops, fills and reductions over outer axes.
void emit_lane_tiles(std::ostringstream& os, const std::string& id, size_t n_loops, int64_t v,
                     const std::vector<int64_t>& par = {}) {
  std::vector<int64_t> sizes(n_loops, 1);
  sizes.back() = v;
  emit_tile(os, forall_if(os, id, par), id + "t", sizes);
  os << "    transform.structured.vectorize %" << id << "t : !transform.any_op\n";
}

// A contraction (matmul / batch_matmul) whose B is read as [.., n, k]:
// maps A(.., m, k), B(.., n, k), C(.., m, n) (trace/ops_dot.cc emits it for
// weights stored [out, in] and for q · kᵀ).
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

// A static f32/f64 linalg.matmul with the default maps or B transposed, or null.
mlir::linalg::MatmulOp plain_matmul(mlir::Operation* op) {
  auto mm = llvm::dyn_cast<mlir::linalg::MatmulOp>(op);
  if (!mm || (mm.hasUserDefinedMaps() && !b_transposed(mm)) || !all_static(mm)) return {};
  mlir::Type et = llvm::cast<mlir::ShapedType>(mm->getResult(0).getType()).getElementType();
  if (!llvm::isa<mlir::Float32Type, mlir::Float64Type>(et)) return {};
  return mm;
}

struct PackBlocks {
  int64_t m = 0, n = 0, k = 0;
};

// The packed schedule's blocks for an M x N x K matmul, or none when no
// block size divides a dim. With threads, M blocks shrink (to 64) until
// there are at least two output blocks per thread.
std::optional<PackBlocks> pack_blocks(int64_t M, int64_t N, int64_t K, const VectorIsa& isa, int threads) {
  auto pick = [](int64_t dim, std::initializer_list<int64_t> cands) -> int64_t {
    for (int64_t c : cands)
      if (dim % c == 0) return c;
    return 0;
  };
  const bool wide = isa.registers >= 32;
  const int64_t panel = kPanelVectors * isa.f32_lanes;
  PackBlocks b{pick(M, wide ? kBlockMAvx512 : kBlockMAvx2), N % kBlockN == 0 ? kBlockN : 0,
               pick(K, wide ? kBlockKAvx512 : kBlockKAvx2)};
  // Sizes no standard block divides (Llama widths such as 288): the largest
  // divisor of the dim that is a multiple of its tile (a register tile for
  // M, a panel for N, kRegK for K) and no larger than the standard block.
  auto divisor = [](int64_t dim, int64_t step, int64_t max) -> int64_t {
    for (int64_t d = std::min(dim, max) / step * step; d >= step; d -= step)
      if (dim % d == 0) return d;
    return 0;
  };
  if (!b.m) b.m = divisor(M, packed_reg_m(isa), wide ? *kBlockMAvx512.begin() : *kBlockMAvx2.begin());
  if (!b.n) b.n = divisor(N, panel, kBlockN);
  if (!b.k) b.k = divisor(K, kRegK, wide ? *kBlockKAvx512.begin() : *kBlockKAvx2.begin());
  if (!b.m || !b.n || !b.k || b.n % panel != 0 || b.m % packed_reg_m(isa) != 0 || b.k % kRegK != 0) return std::nullopt;
  while (threads > 1 && b.m > 64 && (M / b.m) * (N / b.n) < 2 * threads) b.m /= 2;
  return b;
}

// The packed schedule applies: large enough, and every tile divides its dim.
bool use_packed_schedule(mlir::linalg::MatmulOp mm, const VectorIsa& isa) {
  llvm::SmallVector<int64_t> r = llvm::cast<mlir::linalg::LinalgOp>(mm.getOperation()).getStaticLoopRanges();
  const int64_t M = r[0], N = r[1], K = r[2];
  // Weights read as [n, k] with many rows (a prompt) are packed from a smaller
  // size on: the alternative there, dot products per output, re-reads every
  // weight row M / 4 times with a horizontal sum per output.
  const int64_t min_volume = b_transposed(mm) && M >= kPackedMinRowsTransposedB ? kPackMinVolumeTransposedB : kPackMinVolume;
  return M * N * K >= min_volume && pack_blocks(M, N, K, isa, 1).has_value() &&
         llvm::cast<mlir::ShapedType>(mm->getResult(0).getType()).getElementType().isF32();
}

// A fill whose every user is a matmul given the packed schedule: left alone,
// it folds into the fill of the packed accumulator.
bool feeds_only_packed_matmuls(mlir::linalg::FillOp fill, const VectorIsa& isa) {
  if (fill->use_empty()) return false;
  for (mlir::Operation* user : fill->getUsers()) {
    auto mm = plain_matmul(user);
    if (!mm || !use_packed_schedule(mm, isa) || mm.getDpsInitOperand(0)->get() != fill->getResult(0)) return false;
  }
  return true;
}

// Register tile (tm rows x tn columns) of an M x N matmul output: tn up to two
// vectors and dividing N, tm dividing M with at most kMaxAccumulatorShare of
// the registers as accumulators. None when N has no divisor of 4 or more.
std::optional<std::pair<int64_t, int64_t>> register_tile(int64_t M, int64_t N, const VectorIsa& isa) {
  const int64_t lanes = isa.f32_lanes;
  const int64_t tn = largest_divisor(N, {2 * lanes, lanes, lanes / 2, 4});
  if (N % tn != 0 || tn < 4) return std::nullopt;
  const int64_t vectors_per_row = (tn + lanes - 1) / lanes;
  const auto max_acc = static_cast<int64_t>(kMaxAccumulatorShare * static_cast<double>(isa.registers));
  int64_t tm = 1;
  for (int64_t c : {8, 6, 4, 3, 2, 1})
    if (M % c == 0 && c * vectors_per_row <= max_acc) {
      tm = c;
      break;
    }
  return std::make_pair(tm, tn);
}

// Register-tiled matmuls large enough for it run in kSmallBlock* cache blocks
// (K blocked outside the register tiles).
bool uses_small_blocks(int64_t M, int64_t N, int64_t K, int64_t tm, int64_t tn) {
  return M % kSmallBlockM == 0 && N % kSmallBlockN == 0 && K % kSmallBlockK == 0 && M * N * K >= kPackMinVolume &&
         kSmallBlockM % tm == 0 && kSmallBlockN % tn == 0;
}

// Packs B/C into panels (see the knobs above), tiles, and vectorizes.
void emit_packed_matmul(std::ostringstream& body, const std::string& id, const VectorIsa& isa, int threads,
                        bool transposed_b, const PackBlocks& blk, int64_t rows, int64_t cols) {
  const int64_t panel = kPanelVectors * isa.f32_lanes;
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
    int64_t bm, reg_m;
  };
  std::vector<Part> parts = {{p + "a", id, blk.m, reg_m}};
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
    parts = {{p + "a", id, bm6, kWideRegM}};
    if (rest > 0) {
      body << "    %" << p << "sp = transform.structured.split %" << p << "a after " << main_rows
           << " {dimension = 0} : !transform.any_op\n"
           << "    %" << p << "s0, %" << p << "s1 = transform.split_handle %" << p
           << "sp : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
      int64_t rest_bm = reg_m;
      for (int64_t c = std::min(rest, blk.m) / reg_m * reg_m; c > reg_m; c -= reg_m)
        if (rest % c == 0) {
          rest_bm = c;
          break;
        }
      parts = {{p + "s0", id, bm6, kWideRegM}, {p + "s1", id + "q", rest_bm, reg_m}};
    }
  }
  for (const Part& part : parts) {
    const std::string& t = part.id;
    // The output blocks are independent: with threads they are the forall's
    // iterations (K stays inside, so each sum adds in the same order).
    if (threads > 1)
      emit_forall(body, part.handle, t + "b", {part.bm, blk.n / panel, 0, 0});
    else
      emit_tile(body, part.handle, t + "b", {part.bm, blk.n / panel, 0, 0});
    emit_tile(body, t + "b", t + "k", {0, 0, blk.k, 0});
    emit_tile(body, t + "k", t + "r", {part.reg_m, 1, 0, 0});
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
  if (fuse_b_pack) {
    copy = p + "xf";
    body << "    %" << copy << ", %" << copy << "l = transform.structured.fuse_into_containing_op %" << p
         << "xc into %" << id << (threads > 1 ? "b_fa" : "b_l1")
         << " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
  }
  emit_tile(body, forall_if(body, copy, threads > 1 && !fuse_b_pack ? by_panel : std::vector<int64_t>{}), p + "xt",
            {1, kPackCopyK, 0});
  body << "    transform.structured.vectorize %" << p << "xt : !transform.any_op\n"
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
// hosts: one weight row per tile, two vectors per step. Four short row
// streams side by side read memory at 0.7-0.8 of one long stream on Zen 3
// (the rows are contiguous, so one row at a time is a plain front-to-back
// read). Measured there (AVX2), decode tok/s, 4 rows / 1 row per tile, one
// core: stories15M f32 124-135 / 143-167, bf16 168-217 / 248-306, and
// stories110M bf16 (1.5 KiB rows) 34-39 / 38-43; two threads 15M f32
// 185-253 / 225-287, bf16 304-416 / 403-452, 110M bf16 55-60 / 70-73. Longer
// f32 rows keep 4 (110M f32, 3 KiB rows: 28-29 / 24-25 tok/s); AVX-512 hosts
// keep 4 (measured on a Xeon, where 4 rows with prefetches read at 0.88 of
// a plain read).
constexpr int64_t kShortRowBytes = 1536;

struct DotTiles {
  int64_t tm, tn, v;  // outputs per register tile (rows x weight rows), K lanes per step
};
std::optional<DotTiles> dot_tiles(mlir::linalg::LinalgOp op, const VectorIsa& isa) {
  mlir::Type et = llvm::cast<mlir::ShapedType>(op->getResult(0).getType()).getElementType();
  if (!llvm::isa<mlir::Float32Type, mlir::Float64Type>(et) || touches_bool(op)) return std::nullopt;
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  const size_t o = r.size() - 3;  // loops (batch,) m, n, k
  const int64_t M = r[o], N = r[o + 1], K = r[o + 2];
  const int64_t lanes = et.isF64() ? isa.f32_lanes / 2 : isa.f32_lanes;
  int64_t v = largest_divisor(K, {lanes, lanes / 2, 4});
  if (K % v != 0 || v < 4) return std::nullopt;
  int64_t tn = largest_divisor(N, {kDotRows, 2, 1});
  auto weights = llvm::cast<mlir::ShapedType>(op.getDpsInputOperand(1)->get().getType());
  const int64_t row_bytes = K * static_cast<int64_t>(weights.getElementTypeBitWidth()) / 8;
  if (M == 1 && isa.registers <= 16 && row_bytes <= kShortRowBytes) {
    tn = 1;
    v = largest_divisor(K, {2 * lanes, lanes, lanes / 2, 4});
  }
  const int64_t max_acc = isa.registers / 2;  // the rest hold the loaded rows
  int64_t tm = 1;
  for (int64_t c : {4, 2})
    if (M % c == 0 && c * tn <= max_acc) {
      tm = c;
      break;
    }
  return DotTiles{tm, tn, v};
}

// The K split of a dot-product tile `in` (tile_reduction_using_for: partial
// sums in vectors), vectorized; the split's multiply-adds fused into FMAs.
// `split`: the reduction loops' step (0 for the parallel loops).
void emit_dot_reduction(std::ostringstream& body, const std::string& in, const std::string& id,
                        const std::vector<int64_t>& split) {
  body << "    %" << id << "pf, %" << id << "ps, %" << id << "pc, %" << id
       << "pl = transform.structured.tile_reduction_using_for %" << in << " by tile_sizes = " << tile_list(split)
       << " : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)\n"
       << "    transform.structured.vectorize %" << id << "pf : !transform.any_op\n"
       << "    transform.structured.vectorize %" << id << "ps : !transform.any_op\n"
       << "    transform.structured.vectorize %" << id << "pc : !transform.any_op\n"
       // The split op vectorizes to mulf + addf: fused into FMAs after the
       // script (fuse_marked_multiply_adds), only in this loop.
       << "    transform.annotate %" << id << "pl \"" << kFmaMark << "\" : !transform.any_op\n"
       // Its weight reads prefetch the next rows (radix-prefetch-next-tile).
       << "    transform.annotate %" << id << "pl \"" << kStreamMark << "\" : !transform.any_op\n";
}

template <class Match>
bool emit_dot_products(std::ostringstream& body, mlir::linalg::LinalgOp op, const std::string& id,
                       const VectorIsa& isa, int threads, Match&& match, ScheduleSummary& sum) {
  const std::optional<DotTiles> dt = dot_tiles(op, isa);
  if (!dt) return false;
  const auto [tm, tn, v] = *dt;
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
  emit_dot_reduction(body, id + "r", id, split);
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
  if (op->hasAttr(kQuantizedDotAttr)) return true;
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

template <class Match>
bool emit_quantized_dot(std::ostringstream& body, mlir::linalg::LinalgOp op, const std::string& id,
                        const VectorIsa& isa, int threads, Match&& match, ScheduleSummary& sum) {
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  const size_t n = r.size(), par_loops = n - op.getNumReductionLoops();
  if (par_loops < 1 || par_loops > 2 || n < par_loops + 1) return false;
  const int64_t K = r.back(), N = r[par_loops - 1], M = par_loops == 2 ? r[0] : 1;
  const int64_t lanes = isa.f32_lanes;
  const int64_t v = largest_divisor(K, {2 * lanes, lanes, 8, 4});
  if (K % v != 0 || v < 4) return false;
  const int64_t tn = largest_divisor(N, {kDotRows, 2, 1});
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
// kInt8DotAttr with its format) is left to the radix-int8-dot-kernels pass
// (after bufferization) on hosts with AVX2: its 32-byte blocks are integer
// dot products there (vpmaddubsw + vpmaddwd, or VNNI's vpdpbusd), which the
// vectorizer would widen to i32 lane by lane instead. The plan it gets:
// [tm, tn, parallel, vnni, blocked] — tn weight rows x tm activation rows
// of 8-lane accumulators (within 3/4 of AVX2's 16 registers), the
// weight-row tiles split over the threads when the product is large enough
// (the dot-product threshold), vpdpbusd where the host has AVX-512 VNNI
// with 256-bit vectors (VL) or AVX-VNNI, and `blocked` for more than
// kInt8BlockedMinRows activation rows (a prompt: see the pass).
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
constexpr const char* kInt8DotAttr = "radix.int8_dot";
constexpr const char* kInt8KernelAttr = "radix.int8_kernel";
constexpr int64_t kInt8BlockedMinRows = 16;

std::optional<std::vector<int64_t>> int8_kernel_plan(mlir::linalg::LinalgOp op, int threads,
                                                    const Int8Target& host) {
  if (!host.avx2 || !op->hasAttr(kInt8DotAttr) || !all_static(op)) return std::nullopt;
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  if (r.size() != 3 && r.size() != 4) return std::nullopt;
  const bool has_m = r.size() == 4;
  const int64_t M = has_m ? r[0] : 1, N = r[has_m ? 1 : 0], K = r[has_m ? 2 : 1] * 32;
  auto format = op->getAttrOfType<mlir::StringAttr>(kInt8DotAttr);
  const bool byte_weights = format && format.getValue() != "q4_0";
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
  const bool parallel = threads > 1 && N / tn >= threads && M * N * K >= min_dot_work(M);
  return std::vector<int64_t>{tm, tn, parallel ? 1 : 0, host.vnni ? 1 : 0, blocked ? 1 : 0};
}

// ---- Convolutions (trace/ops_conv.cc) ---------------------------------------
// A static f32/f64 linalg.conv_2d_nhwc_hwcf (every conv2d / conv1d is traced
// to one) is tiled to a register tile of tw output columns x tf output
// channels (one output row, one batch), its reductions to steps of one kh,
// one kw and kConvChannelStep input channels, decomposed into a 1-D
// convolution (transform.structured.decompose needs unit oh / kh) and
// vectorized: each step is tw broadcasts x tf-wide FMAs per input channel,
// the accumulators hoisted out of the reduction loops, as in the matmul
// register tiles. (Channels-first conv_2d_nchw_fchw would vectorize too, but
// the vectorizer transposes every tile to channels-last and back.)
constexpr int64_t kConvChannelStep = 4;
struct ConvTiles {
  std::vector<int64_t> parallel, reduction;
};

std::optional<ConvTiles> conv_tiles(mlir::linalg::LinalgOp op, const VectorIsa& isa) {
  if (!llvm::isa<mlir::linalg::Conv2DNhwcHwcfOp>(op.getOperation())) return std::nullopt;
  mlir::Type et = llvm::cast<mlir::ShapedType>(op->getResult(0).getType()).getElementType();
  if (!llvm::isa<mlir::Float32Type, mlir::Float64Type>(et)) return std::nullopt;
  // Loops (n, oh, ow, f, kh, kw, c).
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  const int64_t OW = r[2], F = r[3], Cin = r[6];
  // Tiles always divide their dims (so the tile is static and vectorizes).
  // Each reduction step loads tw input scalars (broadcast) and tf / lanes
  // kernel vectors for tw * tf / lanes FMAs: pick tf (a divisor of F, up to
  // four vectors) and tw (a divisor of OW, up to 8) with the most useful FMAs
  // per load, the accumulators within kMaxAccumulatorShare of the registers.
  const int64_t lanes = isa.f32_lanes;
  const auto max_acc = static_cast<int64_t>(kMaxAccumulatorShare * static_cast<double>(isa.registers));
  int64_t tw = 1, tf = 1;
  double best = -1;
  for (int64_t f = std::min<int64_t>(F, 4 * lanes); f >= 1; --f) {
    if (F % f != 0) continue;
    const int64_t vectors = (f + lanes - 1) / lanes;
    for (int64_t w = 8; w >= 1; --w) {
      if (OW % w != 0 || w * vectors > max_acc) continue;
      const double score = static_cast<double>(w * f) / static_cast<double>(lanes * (w + vectors));
      if (score > best + 1e-9) {
        best = score;
        tw = w;
        tf = f;
      }
    }
  }
  ConvTiles t;
  t.parallel = {1, 1, tw, tf, 0, 0, 0};
  t.reduction = {0, 0, 0, 0, 1, 1, Cin % kConvChannelStep == 0 ? kConvChannelStep : 1};
  return t;
}

// linalg.pooling_nhwc_max / min / sum (reduce_window over H and W of NHWC;
// trace/ops_conv.cc), loops (n, oh, ow, c, kh, kw): the same path as a
// convolution, with tiles of tw output columns x tc channels (a divisor of C
// up to two vectors) and one window tap per step.
std::optional<ConvTiles> pool_tiles(mlir::linalg::LinalgOp op, const VectorIsa& isa) {
  if (!llvm::isa<mlir::linalg::PoolingNhwcMaxOp, mlir::linalg::PoolingNhwcMinOp, mlir::linalg::PoolingNhwcSumOp>(
          op.getOperation()))
    return std::nullopt;
  mlir::Type et = llvm::cast<mlir::ShapedType>(op->getResult(0).getType()).getElementType();
  if (!llvm::isa<mlir::Float32Type, mlir::Float64Type>(et)) return std::nullopt;
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  const int64_t OW = r[2], C = r[3], lanes = isa.f32_lanes;
  int64_t tc = 1;
  for (int64_t c = std::min<int64_t>(C, 2 * lanes); c >= 1; --c)
    if (C % c == 0) {
      tc = c;
      break;
    }
  const int64_t vectors = (tc + lanes - 1) / lanes;
  const auto max_acc = static_cast<int64_t>(kMaxAccumulatorShare * static_cast<double>(isa.registers));
  int64_t tw = 1;
  for (int64_t w = 8; w >= 1; --w)
    if (OW % w == 0 && w * vectors <= max_acc) {
      tw = w;
      break;
    }
  return ConvTiles{{1, 1, tw, tc, 0, 0}, {0, 0, 0, 0, 1, 1}};
}

void emit_conv(std::ostringstream& body, const std::string& id, const ConvTiles& t,
               const std::vector<int64_t>& par) {
  emit_tile(body, forall_if(body, id, par), id + "r", t.parallel);
  emit_tile(body, id + "r", id + "s", t.reduction);
  body << "    %" << id << "d = transform.structured.decompose %" << id
       << "s : (!transform.any_op) -> !transform.any_op\n"
       << "    transform.structured.vectorize %" << id << "d : !transform.any_op\n";
}

// ---- Row fusion (softmax, RMSNorm, LayerNorm, ...) ---------------------------
// A reduction along the rows' last axis whose result is broadcast back over
// the row (max / sum / mean, then x - max, x / sum, x * rsqrt(...)) would
// otherwise be one full pass over memory per op, with a full-size temporary
// between them. Such a group — an elementwise root, and every row reduction
// and elementwise op it depends on that nothing outside the group uses — is
// tiled one row at a time (the rows an scf.forall over the threads), every
// member fused into that loop (fuse_into_containing_op), duplicates merged
// (apply_cse on the loop only), and each member vectorized along the row. A
// row is read from memory once and written once; the rest stays in cache.
constexpr int64_t kRowAccumulators = 4;
struct RowGroup {
  mlir::linalg::LinalgOp root;
  std::vector<mlir::linalg::LinalgOp> members;  // producers, consumers before their producers
  int64_t lanes = 0;                            // vector width along the row
};

bool same_ranges(mlir::linalg::LinalgOp a, mlir::linalg::LinalgOp b) {
  return a.getStaticLoopRanges() == b.getStaticLoopRanges();
}

bool float_generic(mlir::linalg::LinalgOp op) {
  if (!llvm::isa<mlir::linalg::GenericOp>(op.getOperation()) || !all_static(op) || touches_bool(op) ||
      is_quantized_dot(op) ||
      !vectorizable_generic(op) || op.getNumDpsInits() != 1)
    return false;
  mlir::Type et = llvm::cast<mlir::ShapedType>(op->getResult(0).getType()).getElementType();
  return llvm::isa<mlir::Float32Type, mlir::Float64Type>(et);
}

// Loops (rows..., c): every loop parallel, or all but the last (a reduction
// along the row into one value per row).
bool is_row_reduction(mlir::linalg::LinalgOp op) {
  if (!float_generic(op) || op.getNumLoops() < 2 || op.getNumReductionLoops() != 1) return false;
  llvm::SmallVector<mlir::utils::IteratorType> it = op.getIteratorTypesArray();
  return it.back() == mlir::utils::IteratorType::reduction;
}
bool is_row_elementwise(mlir::linalg::LinalgOp op) {
  return float_generic(op) && op.getNumLoops() >= 2 && op.getNumReductionLoops() == 0;
}
// An elementwise op on one value per row of `root` (1 / sum, rsqrt(mean + eps)).
bool is_row_scalar_op(mlir::linalg::LinalgOp op, mlir::linalg::LinalgOp root) {
  if (!float_generic(op) || op.getNumReductionLoops() != 0) return false;
  llvm::SmallVector<int64_t> r = root.getStaticLoopRanges();
  r.pop_back();
  return !r.empty() && op.getStaticLoopRanges() == r;
}

// The groups of a function, each rooted at the last op of its chain.
std::vector<RowGroup> find_row_groups(mlir::func::FuncOp fn) {
  std::vector<mlir::linalg::LinalgOp> ops;
  fn.walk([&](mlir::linalg::LinalgOp op) { ops.push_back(op); });
  llvm::DenseMap<mlir::Operation*, size_t> position;
  for (size_t i = 0; i < ops.size(); ++i) position[ops[i].getOperation()] = i;
  llvm::DenseSet<mlir::Operation*> taken;
  std::vector<RowGroup> groups;
  for (size_t r = ops.size(); r-- > 0;) {
    mlir::linalg::LinalgOp root = ops[r];
    if (taken.contains(root.getOperation()) || !is_row_elementwise(root)) continue;
    // Candidates: every row op (same loops) the root reaches through inputs,
    // and the fills that initialize the candidate reductions.
    llvm::SetVector<mlir::Operation*> cand;
    std::vector<mlir::linalg::LinalgOp> work = {root};
    while (!work.empty()) {
      mlir::linalg::LinalgOp op = work.back();
      work.pop_back();
      for (mlir::OpOperand& in : op->getOpOperands()) {
        auto p = in.get().getDefiningOp<mlir::linalg::LinalgOp>();
        if (!p || p == root || cand.contains(p.getOperation()) || taken.contains(p.getOperation())) continue;
        const bool init = op.isDpsInit(&in);
        if (init ? (llvm::isa<mlir::linalg::FillOp>(p.getOperation()) && is_row_reduction(op))
                 : (((is_row_reduction(p) || is_row_elementwise(p)) && same_ranges(p, root)) ||
                    is_row_scalar_op(p, root))) {
          cand.insert(p.getOperation());
          if (!init) work.push_back(p);
        }
      }
    }
    // Drop candidates used outside the group until none is.
    for (bool changed = true; changed;) {
      changed = false;
      for (mlir::Operation* c : llvm::to_vector(cand))
        for (mlir::Operation* user : c->getUsers())
          if (user != root.getOperation() && !cand.contains(user)) {
            cand.remove(c);
            changed = true;
            break;
          }
    }
    bool has_reduction = false;
    for (mlir::Operation* c : cand) has_reduction |= is_row_reduction(llvm::cast<mlir::linalg::LinalgOp>(c));
    const int64_t row = root.getStaticLoopRanges().back();
    const int64_t lanes = largest_divisor(row, kElementwiseWidths);
    if (!has_reduction || lanes < 4 || row < 2 * lanes) continue;
    RowGroup g{root, {}, lanes};
    for (mlir::Operation* c : cand) g.members.push_back(llvm::cast<mlir::linalg::LinalgOp>(c));
    std::sort(g.members.begin(), g.members.end(), [&](mlir::linalg::LinalgOp a, mlir::linalg::LinalgOp b) {
      return position[a.getOperation()] > position[b.getOperation()];
    });
    taken.insert(root.getOperation());
    for (auto m : g.members) taken.insert(m.getOperation());
    groups.push_back(std::move(g));
  }
  return groups;
}

// ---- Elementwise consumers fused into matmul tiles ---------------------------
// A matmul whose only user is an elementwise op over its output (bias,
// activation, residual add) is scheduled from the consumer: the consumer is
// tiled by the matmul's register tiles (tm x tn), the matmul (and its zero
// fill) fused into that loop, so each tile's sums get the consumer applied
// while in registers and the matmul's output never makes a separate trip
// through memory. Register-tiled and dot-product matmuls (not the packed or
// cache-blocked ones, whose K loop sits outside the register tiles).
struct FusedMatmul {
  mlir::linalg::LinalgOp mm;
  mlir::linalg::FillOp fill;  // its zero init, when only it uses it
  int64_t v = 0;              // > 0: dot-product tiles, K split by v; 0: register tiles
};
struct ConsumerFusion {
  mlir::linalg::LinalgOp consumer;
  std::vector<FusedMatmul> matmuls;  // every matmul it takes over (SwiGLU's gate and up)
  int64_t tm = 0, tn = 0;
};

// `op` as a matmul an elementwise consumer can take over, or none.
std::optional<ConsumerFusion> consumer_fusion(mlir::linalg::LinalgOp op, const VectorIsa& isa) {
  auto mm = plain_matmul(op.getOperation());
  if (!mm || use_packed_schedule(mm, isa) || !mm->getResult(0).hasOneUse()) return std::nullopt;
  if (!llvm::isa<mlir::func::FuncOp>(op->getParentOp())) return std::nullopt;  // (a loop around it would be taken for the tiles')
  auto e = llvm::dyn_cast<mlir::linalg::GenericOp>(*mm->getResult(0).getUsers().begin());
  if (!e) return std::nullopt;
  auto el = llvm::cast<mlir::linalg::LinalgOp>(e.getOperation());
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  const int64_t M = r[0], N = r[1], K = r[2];
  if (!float_generic(el) || el.getNumReductionLoops() != 0 || el.getStaticLoopRanges() != llvm::SmallVector<int64_t>{M, N})
    return std::nullopt;
  if (llvm::cast<mlir::ShapedType>(e->getResult(0).getType()).getElementType() !=
      llvm::cast<mlir::ShapedType>(mm->getResult(0).getType()).getElementType())
    return std::nullopt;
  for (mlir::OpOperand& use : e->getOpOperands())  // the matmul's output read in place, one element per element
    if (use.get() == mm->getResult(0) && !el.getMatchingIndexingMap(&use).isIdentity()) return std::nullopt;
  if (!el.getIndexingMapMatchingResult(llvm::cast<mlir::OpResult>(e->getResult(0))).isIdentity()) return std::nullopt;
  ConsumerFusion f;
  f.consumer = el;
  FusedMatmul m;
  m.mm = op;
  if (b_transposed(op)) {
    const std::optional<DotTiles> dt = dot_tiles(op, isa);
    if (!dt) return std::nullopt;
    f.tm = dt->tm, f.tn = dt->tn, m.v = dt->v;
  } else {
    auto tile = register_tile(M, N, isa);
    if (!tile || uses_small_blocks(M, N, K, tile->first, tile->second)) return std::nullopt;
    f.tm = tile->first, f.tn = tile->second;
  }
  if (f.tm == M && f.tn == N) return std::nullopt;  // one tile: no loop to fuse into
  if (auto fill = mm.getDpsInitOperand(0)->get().getDefiningOp<mlir::linalg::FillOp>(); fill && fill->hasOneUse())
    m.fill = fill;
  f.matmuls.push_back(m);
  return f;
}

// The consumer (handle `consumer`) tiled by (tm, tn), its matmuls (handles
// `mms`) and their fills (`fills`, "" for none) fused into the tile loop.
void emit_consumer_fused_matmuls(std::ostringstream& body, const ConsumerFusion& f, const std::string& consumer,
                                 const std::vector<std::string>& mms, const std::vector<std::string>& fills,
                                 bool parallel) {
  const std::string t = consumer + "t";
  std::string loop;
  if (parallel) {  // the register tiles are the forall's iterations
    emit_forall(body, consumer, t, {f.tm, f.tn});
    loop = t + "_fa";
  } else {
    // The innermost loop there is: a dim the tile covers whole gets none.
    emit_tile(body, consumer, t, {f.tm, f.tn});
    loop = t + "_in";
    body << "    %" << loop << " = transform.get_parent_op %" << t
         << " {op_name = \"scf.for\"} : (!transform.any_op) -> !transform.any_op\n";
  }
  for (size_t i = 0; i < mms.size(); ++i) {
    const std::string& mm = mms[i];
    const std::string fused = mm + "u";
    body << "    %" << fused << ", %" << fused << "l = transform.structured.fuse_into_containing_op %" << mm
         << " into %" << loop << " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
    if (!fills[i].empty()) {
      body << "    %" << fills[i] << "u, %" << fills[i] << "ul = transform.structured.fuse_into_containing_op %"
           << fills[i] << " into %" << loop
           << " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n"
           << "    transform.structured.vectorize %" << fills[i] << "u : !transform.any_op\n";
    }
    if (f.matmuls[i].v > 0) {
      emit_dot_reduction(body, fused, mm, {0, 0, f.matmuls[i].v});
    } else {
      emit_tile(body, fused, mm + "s", {0, 0, 1});
      body << "    transform.structured.vectorize %" << mm << "s {create_named_contraction} : !transform.any_op\n";
    }
  }
  body << "    transform.structured.vectorize %" << t << " : !transform.any_op\n";
}

// `ids[i]` is the match handle of `g.members[i]`, `root_id` the root's.
void emit_row_group(std::ostringstream& body, RowGroup g, const std::string& root_id,
                    const std::vector<std::string>& ids, const std::vector<int64_t>& sids, int64_t root_sid,
                    bool parallel) {
  const size_t n = g.root.getNumLoops();
  std::vector<int64_t> rows(n, 1);
  rows.back() = 0;
  // The rows: an scf.forall over the threads when the group is large enough,
  // else plain loops (the innermost row loop holds the fused members).
  std::string loop;
  if (parallel) {
    emit_forall(body, root_id, root_id + "g", rows);
    loop = root_id + "g_fa";
  } else {
    emit_tile(body, root_id, root_id + "g", rows);
    loop = root_id + "g_l" + std::to_string(n - 2);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string next = root_id + "gl" + std::to_string(i);
    body << "    %" << ids[i] << "u, %" << next << " = transform.structured.fuse_into_containing_op %" << ids[i]
         << " into %" << loop << " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
    loop = next;
  }
  // A producer used by two members was fused once per use: merge the copies.
  // Then each member's slice of a full-size tensor.empty becomes a one-row
  // tensor.empty in the loop: a row buffer, not a full-size temporary.
  body << "    transform.apply_cse to %" << loop << " : !transform.any_op\n"
       << "    transform.apply_patterns to %" << loop << " {\n"
       << "      transform.apply_patterns.tensor.fold_tensor_empty\n"
       << "    } : !transform.any_op\n";
  auto rematch = [&](const std::string& name, const char* opname, int64_t sid) {
    body << "    %" << name << " = transform.structured.match ops{[\"" << opname << "\"]} attributes{" << kMark
         << " = " << sid << " : i64} in %" << loop << " : (!transform.any_op) -> !transform.any_op\n";
  };
  // Reductions keep kRowAccumulators independent vector partial sums where the
  // row allows: one accumulator would wait on its own latency every step.
  std::vector<int64_t> split(n, 0);
  const int64_t row = g.root.getStaticLoopRanges().back();
  split.back() = row % (kRowAccumulators * g.lanes) == 0 && row >= 2 * kRowAccumulators * g.lanes
                     ? kRowAccumulators * g.lanes
                     : g.lanes;
  for (size_t i = 0; i <= ids.size(); ++i) {
    mlir::linalg::LinalgOp op = i < ids.size() ? g.members[i] : g.root;
    const std::string h = (i < ids.size() ? ids[i] : root_id) + "in";
    // One value per row (fills, 1 / sum): stays scalar.
    if (llvm::isa<mlir::linalg::FillOp>(op.getOperation()) || is_row_scalar_op(op, g.root)) continue;
    rematch(h, "linalg.generic", i < ids.size() ? sids[i] : root_sid);
    if (is_row_reduction(op)) {
      body << "    %" << h << "f, %" << h << "s, %" << h << "c, %" << h
           << "l = transform.structured.tile_reduction_using_for %" << h << " by tile_sizes = " << tile_list(split)
           << " : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, "
              "!transform.any_op)\n"
           << "    transform.structured.vectorize %" << h << "f : !transform.any_op\n"
           << "    transform.structured.vectorize %" << h << "s : !transform.any_op\n"
           << "    transform.structured.vectorize %" << h << "c : !transform.any_op\n";
    } else {
      emit_lane_tiles(body, h, n, g.lanes);
    }
  }
  // Marks the row loop for radix-prefetch-next-row (after bufferization).
  body << "    transform.annotate %" << loop << " \"radix.row_loop\" : !transform.any_op\n";
  // Each row's partial results combine into its scalar as one vector
  // reduction (a shuffle tree: log2 steps), every reduction in the row loop
  // (lower_multi_reductions, after the script, would pick the same for
  // those over innermost dims; this covers the rest of the loop as well).
  body << "    transform.apply_patterns to %" << loop << " {\n"
       << "      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = \"innerreduction\"\n"
       << "    } : !transform.any_op\n";
}

// A linalg.generic reading an operand through a sum of loop dims (o * s + w):
// grouped convolutions and reduce_window. The vectorizer accepts only
// projected permutations (or named convolutions), so these stay plain loops
// rather than reaching the reduction / elementwise cases below.
bool is_windowed_generic(mlir::linalg::LinalgOp op) {
  if (!llvm::isa<mlir::linalg::GenericOp>(op.getOperation())) return false;
  for (mlir::AffineMap m : op.getIndexingMapsArray())
    for (mlir::AffineExpr e : m.getResults())
      if (e.getKind() == mlir::AffineExprKind::Add) return true;
  return false;
}
// The interior copy of a convolution's / pooling's padding (trace/ops_conv.cc,
// pad()): a linalg.generic reading its input with tensor.extract at its own
// indices. Tiled like an elementwise op; the n-D extract vectorizes to
// contiguous loads only with vectorize_nd_extract.
bool is_pad_copy(mlir::linalg::LinalgOp op) { return op->hasAttr("radix.pad_copy"); }
// -----------------------------------------------------------------------------
}  // namespace

namespace {
// In loops marked kFmaMark: addf(mulf(a, b), c) on vectors, the product used
// only there, becomes vector.fma(a, b, c): one rounding instead of two, and
// half the instructions. Elsewhere a * b + c keeps its two roundings, as the
// scalar path computes it.
void fuse_marked_multiply_adds(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::arith::AddFOp> adds;
  module.walk([&](mlir::Operation* loop) {
    if (!loop->hasAttr(kFmaMark)) return;
    loop->removeAttr(kFmaMark);
    loop->walk([&](mlir::arith::AddFOp add) {
      if (llvm::isa<mlir::VectorType>(add.getType())) adds.push_back(add);
    });
  });
  for (mlir::arith::AddFOp add : adds) {
    for (int side = 0; side < 2; ++side) {
      auto mul = add->getOperand(side).getDefiningOp<mlir::arith::MulFOp>();
      if (!mul || !mul->hasOneUse()) continue;
      mlir::OpBuilder b(add);
      mlir::Value fma =
          mlir::vector::FMAOp::create(b, add.getLoc(), mul.getLhs(), mul.getRhs(), add->getOperand(1 - side));
      add.replaceAllUsesWith(fma);
      add.erase();
      mul.erase();
      break;
    }
  }
}

// Whether a vector.multi_reduction is best lowered as one vector.reduction
// per output (a shuffle tree: log2(n) dependent steps): its reduced dims are
// the vector's innermost (no transpose needed) and there are no more
// outputs than reduced elements per output. A dot-product tile's partial
// sums ([tm, tn, v] -> [tm, tn]) are such; "innerparallel" made each
// output a chain of one scalar add per lane (16 dependent adds per stories15M
// classifier row, per attention score). Measured on Zen 3, one core, in one
// process: stories15M f32 decode 113-117 -> 145-148 tok/s, bf16 267 -> 291,
// Q4_0 887 -> 911; stories110M f32 (four rows per tile) 22.8 -> 23.0.
bool reduces_inner_dims(mlir::vector::MultiDimReductionOp r) {
  llvm::ArrayRef<int64_t> shape = r.getSourceVectorType().getShape();
  llvm::ArrayRef<int64_t> dims = r.getReductionDims();
  if (dims.empty() || r.getSourceVectorType().isScalable()) return false;
  const int64_t first = static_cast<int64_t>(shape.size() - dims.size());
  int64_t reduced = 1, outputs = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const bool is_reduced = llvm::is_contained(dims, d);
    if (is_reduced != (d >= first)) return false;
    (is_reduced ? reduced : outputs) *= shape[d];
  }
  return outputs <= reduced;
}

// Lowers every vector.multi_reduction the script left: "innerreduction"
// where reduces_inner_dims says so, "innerparallel" (vector adds across
// lanes) for the rest, e.g. a column sum's [rows, lanes] -> [lanes].
void lower_multi_reductions(mlir::ModuleOp module) {
  std::vector<mlir::Operation*> inner, parallel;
  module.walk([&](mlir::vector::MultiDimReductionOp r) {
    (reduces_inner_dims(r) ? inner : parallel).push_back(r.getOperation());
  });
  for (auto [ops, how] : {std::pair{&inner, mlir::vector::VectorMultiReductionLowering::InnerReduction},
                          std::pair{&parallel, mlir::vector::VectorMultiReductionLowering::InnerParallel}}) {
    if (ops->empty()) continue;
    mlir::RewritePatternSet patterns(module.getContext());
    mlir::vector::populateVectorMultiReductionLoweringPatterns(patterns, how);
    // The ops each lowering step creates are lowered the same way.
    mlir::GreedyRewriteConfig config;
    config.setStrictness(mlir::GreedyRewriteStrictness::ExistingAndNewOps);
    (void)mlir::applyOpPatternsGreedily(*ops, std::move(patterns), config);
  }
}
}  // namespace

std::string ScheduleSummary::to_string() const {
  return std::to_string(matmuls) + " matmuls (" + std::to_string(packed) + " packed), " +
         std::to_string(elementwise) + " elementwise, " + std::to_string(reductions) + " reductions, " +
         std::to_string(skipped) + " left as loops, " + std::to_string(parallel) + " on threads, " +
         std::to_string(fused_rows) + " row-fused groups, " + std::to_string(fused_consumers) +
         " consumers fused into matmuls";
}

VectorIsa host_vector_isa() {
  static const VectorIsa isa = [] {
    llvm::StringMap<bool> f = llvm::sys::getHostCPUFeatures();
    if (f.lookup("avx512f")) return VectorIsa{16, 32};
    if (f.lookup("avx2") || f.lookup("avx")) return VectorIsa{8, 16};
    return VectorIsa{4, 16};
  }();
  return isa;
}

Int8Target int8_target(std::string_view target_features) {
  if (target_features.empty()) {
    llvm::StringMap<bool> f = llvm::sys::getHostCPUFeatures();
    return Int8Target{f.lookup("avx2"), f.lookup("avxvnni") || (f.lookup("avx512vnni") && f.lookup("avx512vl"))};
  }
  const std::string s = "," + std::string(target_features.substr(target_features.find(' ') + 1)) + ",";
  auto has = [&](const char* f) { return s.find(std::string(",+") + f + ",") != std::string::npos; };
  return Int8Target{has("avx2"), has("avxvnni") || (has("avx512vnni") && has("avx512vl"))};
}

std::string build_cpu_schedule(mlir::ModuleOp module, const VectorIsa& requested, int threads,
                               ScheduleSummary* summary, const Int8Target& int8) {
  ScheduleSummary sum;
  std::ostringstream body;
  int sid = 0;
  mlir::OpBuilder b(module.getContext());
  VectorIsa isa = host_vector_isa();
  if (requested.f32_lanes > 0) isa.f32_lanes = requested.f32_lanes;
  if (requested.registers > 0) isa.registers = requested.registers;

  // Marks `m` with the next schedule id and matches it as %op<id> (its handle,
  // `handle(id)`); returns the id.
  auto mark = [&](mlir::Operation* m) -> int64_t {
    const int64_t id = sid++;
    m->setAttr(kMark, b.getI64IntegerAttr(id));
    body << "    %op" << id << " = transform.structured.match ops{[\"" << m->getName().getStringRef().str()
         << "\"]} attributes{" << kMark << " = " << id << " : i64} in %root : (!transform.any_op) -> "
         << "!transform.any_op\n";
    return id;
  };
  auto handle = [](int64_t id) { return "op" + std::to_string(id); };

  // Every function with a body: @main and the function cache's callees, which
  // stay calls (a layer called twelve times is scheduled and compiled once).
  for (mlir::func::FuncOp fn : module.getOps<mlir::func::FuncOp>()) {
    if (fn.isExternal()) continue;
    // Row-fusion groups: their members are scheduled with their root.
    std::vector<RowGroup> groups = find_row_groups(fn);
    llvm::DenseMap<mlir::Operation*, RowGroup*> group_of_root;
    llvm::DenseSet<mlir::Operation*> in_group;
    for (RowGroup& g : groups) {
      group_of_root[g.root.getOperation()] = &g;
      for (auto m : g.members) in_group.insert(m.getOperation());
    }
    // Matmuls scheduled with their elementwise consumer (and zero fills),
    // emitted at the consumer's first matmul.
    std::vector<ConsumerFusion> fusions;
    llvm::DenseMap<mlir::Operation*, size_t> fusion_of_consumer, fusion_at;
    llvm::DenseSet<mlir::Operation*> fused_away;
    fn.walk([&](mlir::linalg::MatmulOp mm) {
      std::optional<ConsumerFusion> f = consumer_fusion(mm, isa);
      if (!f) return;
      mlir::Operation* e = f->consumer.getOperation();
      if (in_group.contains(e) || group_of_root.count(e)) return;
      if (auto it = fusion_of_consumer.find(e); it != fusion_of_consumer.end()) {
        ConsumerFusion& g = fusions[it->second];
        if (g.tm != f->tm || g.tn != f->tn) return;  // scheduled on its own
        g.matmuls.push_back(f->matmuls[0]);
      } else {
        fusion_of_consumer[e] = fusions.size();
        fusion_at[mm.getOperation()] = fusions.size();
        fusions.push_back(*f);
        fused_away.insert(e);
      }
    });
    for (ConsumerFusion& f : fusions)
      for (FusedMatmul& m : f.matmuls) {
        if (!fusion_at.count(m.mm.getOperation())) fused_away.insert(m.mm.getOperation());
        if (m.fill) fused_away.insert(m.fill.getOperation());
      }

    fn.walk([&](mlir::linalg::LinalgOp op) {
      if (in_group.contains(op.getOperation())) return;  // scheduled with its group's root
      if (fused_away.contains(op.getOperation())) return;  // scheduled with its matmul
      if (auto it = fusion_at.find(op.getOperation()); it != fusion_at.end()) {
        ConsumerFusion f = fusions[it->second];
        const std::string e_id = handle(mark(f.consumer.getOperation()));
        std::vector<std::string> mm_ids, fill_ids;
        int64_t work = 0;
        for (FusedMatmul& m : f.matmuls) {
          mm_ids.push_back(handle(mark(m.mm.getOperation())));
          fill_ids.push_back(m.fill ? handle(mark(m.fill.getOperation())) : "");
          llvm::SmallVector<int64_t> r = m.mm.getStaticLoopRanges();
          work = std::max(work, r[0] * r[1] * r[2]);
        }
        llvm::SmallVector<int64_t> r = f.consumer.getStaticLoopRanges();
        const bool dots = llvm::all_of(f.matmuls, [](const FusedMatmul& m) { return m.v > 0; });
        const bool parallel = threads > 1 && work >= (dots ? min_dot_work(r[0]) : kParallelMinMatmulWork) &&
                              (r[0] / f.tm) * (r[1] / f.tn) >= threads;
        emit_consumer_fused_matmuls(body, f, e_id, mm_ids, fill_ids, parallel);
        sum.matmuls += static_cast<int>(f.matmuls.size());
        ++sum.fused_consumers;
        if (parallel) ++sum.parallel;
        return;
      }
      if (auto it = group_of_root.find(op.getOperation()); it != group_of_root.end()) {
        RowGroup g = *it->second;
        std::vector<std::string> ids;
        std::vector<int64_t> sids;
        const int64_t root_sid = mark(g.root);
        const std::string root_id = handle(root_sid);
        for (auto m : g.members) {
          sids.push_back(mark(m));
          ids.push_back(handle(sids.back()));
        }
        int64_t rows = 1;
        llvm::SmallVector<int64_t> r = g.root.getStaticLoopRanges();
        for (size_t d = 0; d + 1 < r.size(); ++d) rows *= r[d];
        const bool parallel = threads > 1 && rows >= threads && rows * r.back() >= kParallelMinWork;
        emit_row_group(body, g, root_id, ids, sids, root_sid, parallel);
        ++sum.fused_rows;
        if (parallel) ++sum.parallel;
        return;
      }
      if (!all_static(op) || op.getNumLoops() == 0) {
        ++sum.skipped;
        return;
      }
      const std::string id = handle(sid);  // the handle match() gives op
      auto match = [&] { mark(op.getOperation()); };
      llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (std::optional<std::vector<int64_t>> plan = int8_kernel_plan(op, threads, int8)) {
        op->setAttr(kInt8KernelAttr, b.getDenseI64ArrayAttr(*plan));
        ++sum.matmuls;
        if ((*plan)[2]) ++sum.parallel;
        return;
      }
      if (is_quantized_dot(op)) {
        if (!emit_quantized_dot(body, op, id, isa, threads, match, sum)) ++sum.skipped;
        return;
      }

      // Convolutions and NHWC pooling (own block; see conv_tiles, pool_tiles).
      // Not counted in the summary's categories.
      std::optional<ConvTiles> tiles = conv_tiles(op, isa);
      if (!tiles) tiles = pool_tiles(op, isa);
      if (tiles) {
        match();
        // Split over an output loop (batch, rows, ...) in whole register tiles.
        std::vector<int64_t> granules = tiles->parallel;
        for (int64_t& g : granules) g = std::max<int64_t>(g, 1);
        std::vector<int64_t> par = parallel_tiles(op, threads, kParallelMinMatmulWork, granules);
        emit_conv(body, id, *tiles, par);
        if (!par.empty()) ++sum.parallel;
        return;
      }
      if (is_windowed_generic(op)) {
        ++sum.skipped;
        return;
      }
      if (is_pad_copy(op) && !touches_bool(op)) {
        // Always vectorized (a whole odd innermost dim as one vector if need
        // be): left as a loop, the unit-dim folding below would turn its
        // in-place write into a strided memref.copy (see trace/ops_conv.cc).
        int64_t v = largest_divisor(ranges.back(), kElementwiseWidths);
        if (v < 4) v = ranges.back() <= 64 ? ranges.back() : 1;
        match();
        std::vector<int64_t> sizes(ranges.size(), 1);
        sizes.back() = v;
        emit_tile(body, id, id + "t", sizes);
        body << "    transform.structured.vectorize %" << id << "t {vectorize_nd_extract} : !transform.any_op\n";
        ++sum.elementwise;
        return;
      }

      if (llvm::isa<mlir::linalg::MatmulOp>(op.getOperation())) {
        auto mm = plain_matmul(op.getOperation());
        if (!mm) {
          ++sum.skipped;
          return;
        }
        const bool bt = b_transposed(op);
        if (use_packed_schedule(mm, isa)) {
          match();
          emit_packed_matmul(body, id, isa, threads, bt, *pack_blocks(ranges[0], ranges[1], ranges[2], isa, threads), ranges[0],
                             ranges[1]);
          ++sum.matmuls;
          ++sum.packed;
          if (threads > 1) ++sum.parallel;
          return;
        }
        const int64_t M = ranges[0], N = ranges[1], K = ranges[2];
        if (bt) {
          if (!emit_dot_products(body, op, id, isa, threads, match, sum)) ++sum.skipped;
          return;
        }
        auto tile = register_tile(M, N, isa);
        if (!tile) {
          ++sum.skipped;
          return;
        }
        const auto [tm, tn] = *tile;
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
        } else if (auto par = parallel_tiles(op, threads, kParallelMinMatmulWork, {tm, tn, 1}); !par.empty()) {
          cur = forall_if(body, cur, par);
          ++sum.parallel;
        }
        emit_tile(body, cur, id + "r", {tm, tn, 0});
        emit_tile(body, id + "r", id + "s", {0, 0, 1});
        body << "    transform.structured.vectorize %" << id << "s {create_named_contraction} : !transform.any_op\n";
        ++sum.matmuls;
        return;
      }

      if (llvm::isa<mlir::linalg::BatchMatmulOp>(op.getOperation()) && b_transposed(op)) {
        if (!emit_dot_products(body, op, id, isa, threads, match, sum)) ++sum.skipped;
        return;
      }
      if (auto bmm = llvm::dyn_cast<mlir::linalg::BatchMatmulOp>(op.getOperation())) {
        // One batch at a time through the same register tiles as a matmul; the
        // unit batch dim of the vector.contract is cast away before lowering.
        mlir::Type et = llvm::cast<mlir::ShapedType>(bmm->getResult(0).getType()).getElementType();
        auto tile = register_tile(ranges[1], ranges[2], isa);
        if (!llvm::isa<mlir::Float32Type, mlir::Float64Type>(et) || bmm.hasUserDefinedMaps() || !tile) {
          ++sum.skipped;
          return;
        }
        const auto [tm, tn] = *tile;
        match();
        const std::vector<int64_t> par = parallel_tiles(op, threads, kParallelMinMatmulWork, {1, tm, tn, 1});
        if (!par.empty()) ++sum.parallel;
        emit_tile(body, forall_if(body, id, par), id + "r", {1, tm, tn, 0});
        emit_tile(body, id + "r", id + "s", {0, 0, 0, 1});
        body << "    transform.structured.vectorize %" << id << "s {create_named_contraction} : !transform.any_op\n";
        ++sum.matmuls;
        return;
      }

      if (llvm::isa<mlir::linalg::GenericOp>(op.getOperation()) && !vectorizable_generic(op)) {
        ++sum.skipped;
        return;
      }
      if (auto fill = llvm::dyn_cast<mlir::linalg::FillOp>(op.getOperation()); fill && feeds_only_packed_matmuls(fill, isa))
        return;  // folded into the packed matmul's accumulator
      // Reductions (reduce_sum / max / min): one reduction loop, no bools.
      // Reductions over one or several axes (reduce_sum(x, {0, 2}), a full
      // reduction): every loop but the innermost steps by 1 (reduction loops
      // too, accumulating in order), so the vector work is one axis.
      if (llvm::isa<mlir::linalg::GenericOp>(op.getOperation()) && op.getNumReductionLoops() >= 1 &&
          op.getNumDpsInits() == 1 && !touches_bool(op)) {
        llvm::SmallVector<mlir::utils::IteratorType> iters = op.getIteratorTypesArray();
        const size_t n = iters.size();
        if (iters.back() == mlir::utils::IteratorType::reduction) {
          // Innermost reduction (row sums): rows one at a time, the row split
          // into V partial sums (tile_reduction_using_for), combined at the end.
          const int64_t v = largest_divisor(ranges.back(), kElementwiseWidths);
          if (v >= 4 && ranges.back() >= 2 * v) {
            match();
            const std::vector<int64_t> par = parallel_tiles(op, threads, kParallelMinWork, {});
            if (!par.empty()) ++sum.parallel;
            std::string cur = forall_if(body, id, par, "fa");
            if (n > 1) {
              std::vector<int64_t> rows(n, 1);
              rows.back() = 0;
              emit_tile(body, cur, id + "p", rows);
              cur = id + "p";
            }
            std::vector<int64_t> split(n, 0);
            split.back() = v;
            body << "    %" << id << "f, %" << id << "s, %" << id << "c, %" << id
                 << "l = transform.structured.tile_reduction_using_for %" << cur << " by tile_sizes = "
                 << tile_list(split)
                 << " : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, "
                    "!transform.any_op)\n"
                 << "    transform.structured.vectorize %" << id << "f : !transform.any_op\n"
                 << "    transform.structured.vectorize %" << id << "s : !transform.any_op\n"
                 << "    transform.structured.vectorize %" << id << "c : !transform.any_op\n";
            ++sum.reductions;
            return;
          }
        } else if (iters.back() == mlir::utils::IteratorType::parallel) {
          // Innermost axis kept (column sums): V columns at a time, every other
          // loop (the reduction included) one step at a time.
          const int64_t v = largest_divisor(ranges.back(), kElementwiseWidths);
          if (v >= 4) {
            match();
            std::vector<int64_t> granules(n, 1);
            granules.back() = v;
            std::vector<int64_t> par = parallel_tiles(op, threads, kParallelMinWork, granules);
            emit_lane_tiles(body, id, n, v, par);
            if (!par.empty()) ++sum.parallel;
            ++sum.reductions;
            return;
          }
        }
      }

      const bool elementwise = op.getNumReductionLoops() == 0 &&
                               (llvm::isa<mlir::linalg::GenericOp, mlir::linalg::FillOp>(op.getOperation()));
      if (elementwise && !touches_bool(op)) {
        const int64_t inner = ranges.back();
        const int64_t v = largest_divisor(inner, kElementwiseWidths);
        if (inner % v != 0 || v < 4) {
          ++sum.skipped;
          return;
        }
        match();
        std::vector<int64_t> granules(ranges.size(), 1);
        granules.back() = v;
        std::vector<int64_t> par = parallel_tiles(op, threads, kParallelMinWork, granules);
        emit_lane_tiles(body, id, ranges.size(), v, par);
        if (!par.empty()) ++sum.parallel;
        ++sum.elementwise;
        return;
      }
      ++sum.skipped;
    });
  }
  if (summary) *summary = sum;
  if (sid == 0) return "";

  std::ostringstream os;
  os << "module attributes {transform.with_named_sequence} {\n"
        "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n"
     << body.str()
     << "    %fns = transform.structured.match ops{[\"func.func\"]} in %root : (!transform.any_op) -> !transform.any_op\n"
        // One function at a time: several of the ops below take exactly one target.
        "    transform.foreach %fns : !transform.any_op {\n"
        "    ^bb0(%fn: !transform.any_op):\n"
        "      transform.apply_patterns to %fn {\n"
        "        transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices\n"
        "        transform.apply_patterns.vector.cast_away_vector_leading_one_dim\n"
        "        transform.apply_patterns.canonicalization\n"
        "      } : !transform.any_op\n"
        "      %loops = transform.structured.match ops{[\"scf.for\"]} in %fn : (!transform.any_op) -> !transform.any_op\n"
        "      transform.foreach %loops : !transform.any_op {\n"
        "      ^bb0(%l: !transform.any_op):\n"
        "        transform.loop.hoist_loop_invariant_subsets %l : !transform.any_op\n"
        "      }\n"
        "      transform.apply_patterns to %fn {\n"
        "        transform.apply_patterns.vector.lower_contraction lowering_strategy = \"outerproduct\"\n"
        "        transform.apply_patterns.vector.lower_outerproduct\n"
        "        transform.apply_patterns.vector.transfer_permutation_patterns\n"
        "        transform.apply_patterns.canonicalization\n"
        "      } : !transform.any_op\n"
        "    }\n"
        "    transform.yield\n"
        "  }\n"
        "}\n";
  return os.str();
}

Status apply_schedule(mlir::ModuleOp module, const std::string& script) {
  mlir::MLIRContext* ctx = module.getContext();
  detail::DiagnosticCollector diags(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> lib = mlir::parseSourceString<mlir::ModuleOp>(script, ctx);
  if (!lib) return Status(ErrorCode::kScheduleError, "schedule: the generated transform script does not parse:\n" + diags.text());
  mlir::Operation* entry = mlir::transform::detail::findTransformEntryPoint(module, *lib, "__transform_main");
  if (!entry) return Status(ErrorCode::kScheduleError, "schedule: no @__transform_main in the transform script");
  if (mlir::failed(mlir::transform::applyTransformNamedSequence(module, entry, *lib,
                                                                mlir::transform::TransformOptions())))
    return Status(ErrorCode::kScheduleError, "schedule: applying the transform script failed:\n" + diags.text());
  fuse_marked_multiply_adds(module);
  lower_multi_reductions(module);
  module.walk([](mlir::Operation* op) { op->removeAttr(kMark); });
  return Status();
}

}  // namespace radix
