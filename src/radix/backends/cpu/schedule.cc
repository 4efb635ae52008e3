#include "radix/backends/cpu/schedule.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"
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
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/matmul_schedule.h"
#include "radix/backends/cpu/prefetch_util.h"
#include "radix/backends/cpu/schedule_util.h"
#include "radix/trace/diagnostic_collector.h"

namespace radix {

using namespace cpu_schedule;  // NOLINT: the emitters this file combines

namespace {
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
  const int64_t max_acc = max_accumulators(isa);
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
  const int64_t max_acc = max_accumulators(isa);
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
// Rows longer than this that no 16 divides are split at their last whole
// 16: the columns before it in vectors of 16, the rest (under 16) after it
// in vectors of 4 or 8 where 4 divides it, else a loop. For elementwise ops
// (see the elementwise schedule) and row groups (emit_row_group). Unsplit,
// rows no 4 divides formed no group at all, their reductions scalar loops,
// and rows 4 divides ran in vectors of 4. Measured on one Zen 5 core,
// softmax over [768, C] f32, ns per element unsplit -> split: C = 301 3.06
// -> 0.60, 302 2.83 -> 0.59, 65 2.45 -> 0.75 (304: 0.43); code for Zen 3
// (AVX2) 301 1.37 -> 0.53; rows 4 divides, vectors of 4 or 8 -> split:
// 300 1.29 -> 0.50, 100 1.19 -> 0.64, 4100 1.21 -> 0.30, 264 0.65 -> 0.41
// (AVX2 code: 300 1.14 -> 0.48, 4100 1.13 -> 0.43). The rest in vectors
// keeps every store of a row 4 divides a vector store, which
// radix-streaming-stores takes (a 16-vector at a 16-byte aligned address
// streams as four 4-vectors): RMSNorm over 64 MiB of rows of 4100
// 0.25-0.37 -> 0.21-0.29 ns per element, of 300 0.24-0.28 -> 0.15-0.21.
constexpr int64_t kSplitRowMinCols = 32;
constexpr int64_t kSplitRowVector = 16;
// Where a row of `cols` is split (its last whole kSplitRowVector), or 0
// when it is not.
int64_t split_row_main_cols(int64_t cols) {
  return cols > kSplitRowMinCols && cols % kSplitRowVector != 0 ? cols / kSplitRowVector * kSplitRowVector : 0;
}
// The vector width of a split row's rest (`rest` columns), or 0: a loop.
int64_t split_row_rest_lanes(int64_t rest) { return rest % 4 == 0 ? largest_divisor(rest, kElementwiseWidths) : 0; }

// Where an op over all its rows at once (elementwise, column sums) splits
// rows of `cols`, or 0. Split so, the op is two ops, each a pass over every
// row: rows 4 divides, already in vectors of 4 or 8, are split only where
// the op evaluates a transcendental function (SiLU over [256, C], ns per
// element, vectors of 4 or 8 -> split, one Zen 5 core: C = 44 0.65 ->
// 0.31, 100 0.65 -> 0.19, 136 0.33 -> 0.18); a light op's second pass cost
// more than the wider vectors gained (relu(1.5 x) - x: 40 0.089 -> 0.12,
// 44 0.095 -> 0.14, 100 even).
int64_t split_op_main_cols(int64_t cols, bool transcendental) {
  return cols % 4 != 0 || transcendental ? split_row_main_cols(cols) : 0;
}

// `id` (an op over `n` loops whose innermost, of `cols`, is parallel) tiled
// by `par` over the threads and by vectors of `v` along its innermost loop;
// split first at `main_cols` (> 0: split_op_main_cols), the rest in vectors
// of its own lanes where 4 divides it.
void emit_row_lane_tiles(std::ostringstream& body, const std::string& id, size_t n, int64_t cols, int64_t main_cols,
                         int64_t v, const std::vector<int64_t>& par) {
  std::string main = id;
  if (main_cols > 0) {
    emit_split(body, id, id + "sc", main_cols, int64_t(n - 1), id + "mc", id + "rc");
    main = id + "mc";
    if (const int64_t rest = split_row_rest_lanes(cols - main_cols)) emit_lane_tiles(body, id + "rc", n, rest, par);
  }
  emit_lane_tiles(body, main, n, v, par);
}

// The tile of a row reduction's partial sums over `row` columns in vectors
// of `lanes`: kRowAccumulators vectors where the row allows, else one.
int64_t row_accumulator_tile(int64_t row, int64_t lanes) {
  return row % (kRowAccumulators * lanes) == 0 && row >= 2 * kRowAccumulators * lanes ? kRowAccumulators * lanes
                                                                                       : lanes;
}

struct RowGroup {
  mlir::linalg::LinalgOp root;
  std::vector<mlir::linalg::LinalgOp> members;  // producers, consumers before their producers
  int64_t lanes = 0;                            // vector width along the row
  // > 0: each member is split along the row at this column (the last whole
  // vector of `lanes`); the part after it stays a loop.
  int64_t main_cols = 0;
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

// An input map that reads along the row loop (the op's last, `last`) at
// another axis than its innermost: a transpose, each row a column of that
// input. Inputs that do not vary along the row (a per-row value broadcast
// over it) do not.
bool map_reads_row_across(mlir::AffineMap m, unsigned last) {
  for (unsigned i = 0; i + 1 < m.getNumResults(); ++i)
    if (m.getResult(i) == mlir::getAffineDimExpr(last, m.getContext())) return true;
  return false;
}

// An op with such an input (an operand-swapped matmul's product read by its
// consumer). Row at a time, such reads are one element per input row; on
// its own the op is tiled square instead (minor_transpose).
bool reads_rows_across(mlir::linalg::LinalgOp op) {
  for (mlir::OpOperand* in : op.getDpsInputOperands())
    if (llvm::isa<mlir::ShapedType>(in->get().getType()) &&
        map_reads_row_across(op.getMatchingIndexingMap(in), op.getNumLoops() - 1))
      return true;
  return false;
}

// Loops (rows..., c): every loop parallel, or all but the last (a reduction
// along the row into one value per row).
bool is_row_reduction(mlir::linalg::LinalgOp op) {
  if (!float_generic(op) || op.getNumLoops() < 2 || op.getNumReductionLoops() != 1 || reads_rows_across(op))
    return false;
  llvm::SmallVector<mlir::utils::IteratorType> it = op.getIteratorTypesArray();
  return it.back() == mlir::utils::IteratorType::reduction;
}
bool is_row_elementwise(mlir::linalg::LinalgOp op) {
  return float_generic(op) && op.getNumLoops() >= 2 && op.getNumReductionLoops() == 0 && !reads_rows_across(op);
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
    bool has_reduction = false, transcendental = computes_transcendentals(root);
    for (mlir::Operation* c : cand) {
      has_reduction |= is_row_reduction(llvm::cast<mlir::linalg::LinalgOp>(c));
      transcendental |= computes_transcendentals(c);
    }
    const int64_t row = root.getStaticLoopRanges().back();
    // A light group's rows that 8 divides keep their vectors of 8: aligned
    // to 32 bytes, they never straddle two cache lines, where the split's
    // vectors of 16 straddle one in two (RMSNorm over 64 MiB of rows of
    // 4104, 8-vectors -> split: 0.205-0.218 -> 0.24-0.32 ns per element).
    const int64_t main_cols = transcendental || row % 8 != 0 ? split_row_main_cols(row) : 0;
    const int64_t lanes = main_cols > 0 ? kSplitRowVector : largest_divisor(row, kElementwiseWidths);
    if (!has_reduction || lanes < 4 || row < 2 * lanes) continue;
    RowGroup g{root, {}, lanes, main_cols};
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
  NextTilePrefetch prefetch = NextTilePrefetch::kOn;  // of dot-product tiles
};
struct ConsumerFusion {
  mlir::linalg::LinalgOp consumer;
  std::vector<FusedMatmul> matmuls;  // every matmul it takes over (SwiGLU's gate and up)
  int64_t tm = 0, tn = 0;
};

// `op` as a matmul an elementwise consumer can take over, or none.
std::optional<ConsumerFusion> consumer_fusion(mlir::linalg::LinalgOp op, const VectorIsa& isa, int threads) {
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
    const std::optional<DotTiles> dt = dot_tiles(op, isa, threads);
    if (!dt) return std::nullopt;
    f.tm = dt->tm, f.tn = dt->tn, m.v = dt->v, m.prefetch = dt->prefetch;
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
      emit_dot_reduction(body, fused, mm, {0, 0, f.matmuls[i].v}, f.matmuls[i].prefetch);
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
  split.back() = row_accumulator_tile(g.main_cols > 0 ? g.main_cols : g.root.getStaticLoopRanges().back(), g.lanes);
  for (size_t i = 0; i <= ids.size(); ++i) {
    mlir::linalg::LinalgOp op = i < ids.size() ? g.members[i] : g.root;
    std::string h = (i < ids.size() ? ids[i] : root_id) + "in";
    // One value per row (fills, 1 / sum): stays scalar.
    if (llvm::isa<mlir::linalg::FillOp>(op.getOperation()) || is_row_scalar_op(op, g.root)) continue;
    rematch(h, "linalg.generic", i < ids.size() ? sids[i] : root_sid);
    // Rows no 16 divides: the whole vectors first, the rest after them (a
    // reduction's rest adds to the first part's result), in one vector
    // (reductions) or in vectors of its lanes where 4 divides it.
    if (g.main_cols > 0) {
      emit_split(body, h, h + "sp", g.main_cols, int64_t(n - 1), h + "m", h + "r");
      if (const int64_t rest = split_row_rest_lanes(g.root.getStaticLoopRanges().back() - g.main_cols)) {
        if (is_row_reduction(op))
          body << "    transform.structured.vectorize %" << h << "r : !transform.any_op\n";
        else
          emit_lane_tiles(body, h + "r", n, rest);
      }
      h += "m";
    }
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
  body << "    transform.annotate %" << loop << " \"" << kRowLoopMark << "\" : !transform.any_op\n";
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

// ---- Transposes of the innermost axis -----------------------------------------
// An elementwise op reading an input along another loop than its output's
// innermost one (a [r, c] -> [c, r] transpose, often with the arithmetic of
// its consumers fused in) is tiled T x T over those two loops (T = the
// vector's f32 lanes, 16 or 8) instead of one row of lanes: each tile reads T
// contiguous runs of the input, transposes them in registers (shuffle_16x16
// on AVX-512, the 8 x 8 AVX2 shuffles otherwise) and writes T contiguous
// rows. One row of lanes at a time gathers every lane from another input row
// (one scalar insert per element). The operand-swapped prefill matmuls'
// [N, M] -> [M, N] output transposes are such ops (swap_small_row_matmuls).
// Ranges that T does not divide (a 301-token key cache transposed) are
// split at their last whole tile: the tiles run on the main part, the rest
// (under T rows or columns) stays a loop. Unsplit, all of a [12, 301, 64]
// transpose was a scalar loop (attention over 301 tokens, 0.66x OpenBLAS on
// a Zen 5 core).
struct MinorTranspose {
  unsigned loop;  // the loop along the transposed inputs' innermost axis
  int64_t tile;   // T
  int64_t loop_end = 0, inner_end = 0;  // where whole tiles end along `loop` / the innermost loop (0: no rest)
};

std::optional<MinorTranspose> minor_transpose(mlir::linalg::LinalgOp op, const VectorIsa& isa) {
  auto generic = llvm::dyn_cast<mlir::linalg::GenericOp>(op.getOperation());
  const unsigned n = op.getNumLoops();
  if (!generic || n < 2 || op.getNumReductionLoops() != 0 || op.getNumDpsInits() != 1 || touches_bool(op))
    return std::nullopt;
  const int64_t t = isa.f32_lanes;
  if (t != 8 && t != 16) return std::nullopt;
  for (mlir::OpOperand& o : op->getOpOperands()) {
    auto st = llvm::dyn_cast<mlir::ShapedType>(o.get().getType());
    if (st && st.getElementTypeBitWidth() != 32) return std::nullopt;
  }
  if (!op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity()) return std::nullopt;
  // The transposed inputs (map_reads_row_across) must all have the same
  // innermost loop.
  std::optional<unsigned> loop;
  for (mlir::OpOperand* in : op.getDpsInputOperands()) {
    if (!llvm::isa<mlir::ShapedType>(in->get().getType())) continue;
    mlir::AffineMap m = op.getMatchingIndexingMap(in);
    if (!m.isProjectedPermutation()) return std::nullopt;
    if (!map_reads_row_across(m, n - 1)) continue;
    const unsigned minor = llvm::cast<mlir::AffineDimExpr>(m.getResults().back()).getPosition();
    if (loop && *loop != minor) return std::nullopt;  // two different transposes
    loop = minor;
  }
  if (!loop) return std::nullopt;
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  if (r[*loop] < t || r[n - 1] < t) return std::nullopt;
  MinorTranspose mt{*loop, t};
  if (r[*loop] % t != 0) mt.loop_end = r[*loop] / t * t;
  if (r[n - 1] % t != 0) mt.inner_end = r[n - 1] / t * t;
  return mt;
}

// Returns whether the tiles are split over threads.
bool emit_minor_transpose(std::ostringstream& body, mlir::linalg::LinalgOp op, const std::string& id,
                          const MinorTranspose& mt, int threads) {
  const size_t n = op.getNumLoops();
  std::vector<int64_t> sizes(n, 1);
  sizes[mt.loop] = mt.tile;
  sizes[n - 1] = mt.tile;
  // (A split dim is never the threads' one: no chunk of whole tiles divides it.)
  const std::vector<int64_t> par = parallel_tiles(op, threads, kParallelMinWork, sizes);
  std::string main = id;
  if (mt.inner_end != 0) {
    emit_split(body, main, id + "si", mt.inner_end, int64_t(n - 1), id + "mi", id + "ri");
    main = id + "mi";
  }
  if (mt.loop_end != 0) {
    emit_split(body, main, id + "sl", mt.loop_end, int64_t(mt.loop), id + "ml", id + "rl");
    main = id + "ml";
  }
  emit_tile(body, forall_if(body, main, par), id + "t", sizes);
  body << "    transform.structured.vectorize %" << id << "t : !transform.any_op\n"
       << "    transform.apply_patterns to %" << id << "t_l0 {\n"
       << "      transform.apply_patterns.vector.transfer_permutation_patterns\n"
       << "      transform.apply_patterns.vector.lower_transpose "
       << (mt.tile == 16 ? "lowering_strategy = \"shuffle_16x16\"" : "avx2_lowering_strategy = true") << "\n"
       << "    } : !transform.any_op\n";
  return !par.empty();
}
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
         " consumers fused into matmuls, " + std::to_string(swapped) + " operand-swapped, " +
         std::to_string(transposes) + " tiled transposes, " + std::to_string(padded) + " padded, " +
         std::to_string(split) + " split, " + std::to_string(thread_regions) + " batched by thread, " +
         std::to_string(batch_loops) + " one batch at a time, " + std::to_string(widened) +
         " half-precision weights widened, " + std::to_string(b_in_place) + " B read in place";
}

VectorIsa host_vector_isa() {
  static const VectorIsa isa = target_vector_isa("");
  return isa;
}

// Whether vdpbf16ps outruns f32 FMAs on this CPU (LLVM's name for it):
// radix_bench_isa's multiply-accumulates per second, one core, FMA /
// vdpbf16ps: AMD Zen 5 103 / 191 G (1.85x), an Intel Xeon of family 6
// model 207 (Emerald Rapids) 87 / 42 G (0.48x: there bf16 weights are
// widened into FMAs instead). AMD's Zen 4 and 5 run it on their FMA pipes.
static bool fast_bf16_dot(std::string_view cpu) { return cpu.substr(0, 5) == "znver"; }

namespace {
// The CPU and features of resolve_target_cpu's "cpu +feature,-feature,..."
// (empty: the host's).
class TargetFeatures {
 public:
  explicit TargetFeatures(std::string_view target_features) {
    if (target_features.empty()) {
      cpu_ = llvm::sys::getHostCPUName().str();
      // Appended piece by piece, not "+" + name + ",": GCC 12's -Wrestrict
      // false positive.
      for (const auto& kv : llvm::sys::getHostCPUFeatures())
        if (kv.getValue()) {
          list_ += '+';
          list_ += kv.getKey().str();
          list_ += ',';
        }
      return;
    }
    const size_t space = target_features.find(' ');
    cpu_ = std::string(target_features.substr(0, space));
    if (space != std::string_view::npos) list_ += target_features.substr(space + 1);
    list_ += ",";
    if (list_ == ",,") {
      // A named CPU (CompileOptions.codegen.target_cpu) comes without its
      // features: the ones the name implies.
      llvm::SmallVector<llvm::StringRef> implied;
      llvm::X86::getFeaturesForCPU(cpu_, implied, /*NeedPlus=*/true);
      for (llvm::StringRef f : implied) list_ += f.str() + ",";
    }
  }
  bool has(const char* f) const { return list_.find(std::string(",+") + f + ",") != std::string::npos; }
  const std::string& cpu() const { return cpu_; }
  // The features turned on ("+name"), without the "+".
  std::vector<std::string> enabled() const {
    std::vector<std::string> out;
    for (size_t p = 0; (p = list_.find(",+", p)) != std::string::npos;) {
      const size_t e = list_.find(',', p + 2);
      out.push_back(list_.substr(p + 2, e - p - 2));
      p = e;
    }
    return out;
  }

 private:
  std::string cpu_;
  std::string list_ = ",";
};
}  // namespace

VectorIsa target_vector_isa(std::string_view target_features) {
  const TargetFeatures t(target_features);
  if (t.has("avx512f")) return VectorIsa{16, 32};
  if (t.has("avx2") || t.has("avx")) return VectorIsa{8, 16};
  return VectorIsa{4, 16};
}

std::vector<std::string> features_missing_on_host(std::string_view target_features) {
  // Instructions compiled code only holds through intrinsics (system ones,
  // x87, which the host list leaves out): a VM may hide them (this Zen 5
  // guest: mwaitx, pku, wbnoinvd, rdpru), and Radix's code never uses them.
  static const std::set<std::string_view> kIntrinsicOnly = {
      "x87", "mwaitx", "monitor", "pku", "pconfig", "wbnoinvd", "rdpru", "invpcid", "rdpid", "sgx", "shstk", "uintr",
      "waitpkg", "ptwrite", "clwb", "clflushopt", "clzero", "prefetchi", "movdiri", "movdir64b", "serialize",
      "tsxldtrk", "hreset", "cldemote", "enqcmd", "kl", "widekl", "lwp", "xsave", "xsaveopt", "xsaves", "xsavec",
      "fsgsbase", "rdseed", "rdrnd", "rtm", "fxsr"};
  const TargetFeatures host(""), target(target_features);
  std::vector<std::string> out;
  for (const std::string& f : target.enabled())
    if (!host.has(f.c_str()) && !kIntrinsicOnly.count(f)) out.push_back(f);
  return out;
}

Int8Target int8_target(std::string_view target_features) {
  const TargetFeatures t(target_features);
  return Int8Target{.avx2 = t.has("avx2"),
                    .vnni = t.has("avxvnni") || (t.has("avx512vnni") && t.has("avx512vl")),
                    .bf16 = t.has("avx512bf16") && t.has("avx512f") && fast_bf16_dot(t.cpu()),
                    .vnni512 = t.has("avx512vnni") && t.has("avx512bw") && t.has("avx512f"),
                    .avx512 = t.has("avx512f"),
                    .gfni = t.has("gfni"),
                    .fma = t.has("fma")};
}

VectorIsa schedule_vector_isa(const VectorIsa& requested, std::string_view target_features) {
  VectorIsa isa = target_vector_isa(target_features);
  if (requested.f32_lanes > 0) isa.f32_lanes = requested.f32_lanes;
  if (requested.registers > 0) isa.registers = requested.registers;
  return isa;
}

std::string build_cpu_schedule(mlir::ModuleOp module, const VectorIsa& isa, int threads, ScheduleSummary* summary,
                               const Int8Target& host_int8) {
  ScheduleSummary sum;
  std::ostringstream body;
  int sid = 0;
  mlir::OpBuilder b(module.getContext());
  // The integer kernels' 512-bit form goes with a 16-lane schedule: a
  // narrower schedule_isa (the tests' AVX2 / SSE tilings on an AVX-512 host)
  // keeps them at 256 bits.
  Int8Target int8 = host_int8;
  if (isa.f32_lanes < 16) int8.vnni512 = int8.avx512 = false;

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
  int8_outputs_without_fills(module, threads, int8);
  sum.thread_regions = batched_products_by_thread(module, isa, threads);
  sum.batch_loops = batched_products_by_batch(module, threads);
  sum.widened = widen_half_weights_of_prompts(module, isa, threads, int8);
  const FittedProducts fitted = fit_matmuls_to_tiles(module, isa);
  sum.padded = fitted.padded;
  sum.split = fitted.split;
  sum.swapped = swap_small_row_matmuls(module, isa);
  sum.b_in_place = read_small_b_in_place(module, isa, threads);

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
      if (bf16_kernel_plan(mm, threads, int8)) return;  // the radix-bf16-dot-kernels pass's
      std::optional<ConsumerFusion> f = consumer_fusion(mm, isa, threads);
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
      // Ops in a thread region (batched_products_by_thread) run on one thread each.
      const int op_threads = in_thread_region(op.getOperation()) ? 1 : threads;
      if (in_group.contains(op.getOperation())) return;  // scheduled with its group's root
      if (fused_away.contains(op.getOperation())) return;  // scheduled with its matmul
      if (widened_into_packed_a(op.getOperation(), isa)) return;  // fused into its matmul's K blocks
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
        const bool parallel = op_threads > 1 && work >= (dots ? min_dot_work(r[0]) : kParallelMinMatmulWork) &&
                              (r[0] / f.tm) * (r[1] / f.tn) >= op_threads;
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
        const bool parallel = op_threads > 1 && rows >= op_threads && rows * r.back() >= kParallelMinWork;
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
      if (std::optional<std::vector<int64_t>> plan = bf16_kernel_plan(op, op_threads, int8)) {
        op->setAttr(kBf16KernelAttr, b.getDenseI64ArrayAttr(*plan));
        ++sum.matmuls;
        if ((*plan)[2]) ++sum.parallel;
        return;
      }
      if (std::optional<std::vector<int64_t>> plan = int8_kernel_plan(op, op_threads, int8)) {
        op->setAttr(kInt8KernelAttr, b.getDenseI64ArrayAttr(*plan));
        ++sum.matmuls;
        if ((*plan)[2]) ++sum.parallel;
        return;
      }
      if (is_quantized_dot(op)) {
        if (!emit_quantized_dot(body, op, id, isa, op_threads, match, sum)) ++sum.skipped;
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
        std::vector<int64_t> par = parallel_tiles(op, op_threads, kParallelMinMatmulWork, granules);
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

      if (emit_contraction(body, op, id, isa, op_threads, match, sum)) return;
      if (llvm::isa<mlir::linalg::GenericOp>(op.getOperation()) && !vectorizable_generic(op)) {
        ++sum.skipped;
        return;
      }
      if (auto fill = llvm::dyn_cast<mlir::linalg::FillOp>(op.getOperation());
          fill && (feeds_only_packed_matmuls(fill, isa) || fuses_fill_into_tiles(fill, isa, op_threads)))
        return;  // folded into the packed matmul's accumulator, or fused into the register tiles
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
          // into V partial sums (tile_reduction_using_for; kRowAccumulators
          // vectors of them where the row allows), combined at the end. Rows
          // no 16 divides: split at their last whole 16 as in row groups.
          // Measured on one Zen 5 core, reduce_sum over [R, C] f32 in L2
          // (256 KiB), ns per element one accumulator -> these: C = 4096
          // 0.031 -> 0.027, 300 0.068 -> 0.031, 301 (a scalar loop) 0.51 ->
          // 0.032, 100 0.050 -> 0.027; from memory (64 MiB) 301 0.51 ->
          // 0.11, the others at the read's rate either way.
          const int64_t row = ranges.back();
          const int64_t main_cols = split_row_main_cols(row);
          const int64_t v = main_cols > 0 ? kSplitRowVector : largest_divisor(row, kElementwiseWidths);
          if (v >= 4 && row >= 2 * v) {
            match();
            const std::vector<int64_t> par = parallel_tiles(op, op_threads, kParallelMinWork, {});
            if (!par.empty()) ++sum.parallel;
            std::string cur = forall_if(body, id, par, "fa");
            if (n > 1) {
              std::vector<int64_t> rows(n, 1);
              rows.back() = 0;
              emit_tile(body, cur, id + "p", rows);
              cur = id + "p";
            }
            if (main_cols > 0) {
              emit_split(body, cur, id + "sp", main_cols, int64_t(n - 1), id + "m", id + "r");
              if (split_row_rest_lanes(row - main_cols))
                body << "    transform.structured.vectorize %" << id << "r : !transform.any_op\n";
              cur = id + "m";
            }
            std::vector<int64_t> split(n, 0);
            split.back() = row_accumulator_tile(main_cols > 0 ? main_cols : row, v);
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
          // loop (the reduction included) one step at a time; rows of
          // columns split as elementwise ones.
          const int64_t main_cols = split_op_main_cols(ranges.back(), computes_transcendentals(op));
          const int64_t v = main_cols > 0 ? kSplitRowVector : largest_divisor(ranges.back(), kElementwiseWidths);
          if (v >= 4) {
            match();
            std::vector<int64_t> granules(n, 1);
            granules.back() = v;
            std::vector<int64_t> par = parallel_tiles(op, op_threads, kParallelMinWork, granules);
            emit_row_lane_tiles(body, id, n, ranges.back(), main_cols, v, par);
            if (!par.empty()) ++sum.parallel;
            ++sum.reductions;
            return;
          }
        }
      }

      if (std::optional<MinorTranspose> mt = minor_transpose(op, isa)) {
        match();
        if (emit_minor_transpose(body, op, id, *mt, op_threads)) ++sum.parallel;
        ++sum.elementwise;
        ++sum.transposes;
        return;
      }
      const bool elementwise = op.getNumReductionLoops() == 0 &&
                               (llvm::isa<mlir::linalg::GenericOp, mlir::linalg::FillOp>(op.getOperation()));
      if (elementwise && !touches_bool(op)) {
        const int64_t inner = ranges.back();
        int64_t v = largest_divisor(inner, kElementwiseWidths);
        // Rows no 4 divides (an odd prompt's 129 or 301 columns), and with
        // a transcendental function rows no 16 divides (300): the columns up
        // to the last whole 16 in vectors of 16, the rest split off, in
        // vectors where 4 divides it, else a loop; without, rows no 4
        // divides ran as scalar loops. (The threads' forall never tiles the
        // split dim: no chunk of whole vectors divides it.)
        const int64_t main_cols = split_op_main_cols(inner, computes_transcendentals(op));
        if (main_cols > 0) v = kSplitRowVector;
        if (main_cols == 0 && (inner % v != 0 || v < 4)) {
          ++sum.skipped;
          return;
        }
        match();
        std::vector<int64_t> granules(ranges.size(), 1);
        granules.back() = v;
        std::vector<int64_t> par = parallel_tiles(op, op_threads, kParallelMinWork, granules);
        emit_row_lane_tiles(body, id, ranges.size(), inner, main_cols, v, par);
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
