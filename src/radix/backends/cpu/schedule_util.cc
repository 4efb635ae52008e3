#include "radix/backends/cpu/schedule_util.h"

namespace radix::cpu_schedule {

int64_t largest_divisor(int64_t n, std::initializer_list<int64_t> candidates) {
  for (int64_t c : candidates)
    if (c > 0 && n % c == 0) return c;
  return 1;
}

bool touches_bool(mlir::linalg::LinalgOp op) {
  for (mlir::Value v : op->getOperands()) {
    mlir::Type t = v.getType();
    if (auto st = llvm::dyn_cast<mlir::ShapedType>(t)) t = st.getElementType();
    if (t.isInteger(1)) return true;
  }
  return false;
}

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

void emit_tile(std::ostringstream& os, const std::string& in, const std::string& out,
               const std::vector<int64_t>& sizes, const std::vector<int64_t>& interchange) {
  int loops = 0;
  for (int64_t s : sizes) loops += s != 0;
  os << "    %" << out;
  for (int i = 0; i < loops; ++i) os << ", %" << out << "_l" << i;
  os << " = transform.structured.tile_using_for %" << in << " tile_sizes " << tile_list(sizes);
  if (!interchange.empty()) os << " interchange = " << tile_list(interchange);
  os << " : (!transform.any_op) -> (!transform.any_op";
  for (int i = 0; i < loops; ++i) os << ", !transform.any_op";
  os << ")\n";
}

void emit_split(std::ostringstream& os, const std::string& in, const std::string& split, int64_t after,
                int64_t dimension, const std::string& first, const std::string& second) {
  os << "    %" << split << " = transform.structured.split %" << in << " after " << after << " {dimension = "
     << dimension << "} : !transform.any_op\n"
     << "    %" << first << ", %" << second << " = transform.split_handle %" << split
     << " : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
}

void emit_forall(std::ostringstream& os, const std::string& in, const std::string& out,
                 const std::vector<int64_t>& sizes) {
  os << "    %" << out << ", %" << out << "_fa = transform.structured.tile_using_forall %" << in << " tile_sizes "
     << tile_list(sizes) << " : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n";
}

std::string forall_if(std::ostringstream& os, const std::string& id, const std::vector<int64_t>& par,
                      const std::string& suffix) {
  if (par.empty()) return id;
  emit_forall(os, id, id + suffix, par);
  return id + suffix;
}

int64_t min_dot_work(int64_t rows) { return rows <= kDotMaxStreamingRows ? kParallelMinDotWork : kParallelMinMatmulWork; }

// The chunk of `range` for parallel_chunk's pass: 0 wants a multiple of
// `threads` chunks, 1 takes any count.
static int64_t chunk_in_pass(int64_t range, int threads, int64_t granule, int pass) {
  for (int64_t c = threads; c <= range && c <= 64 * int64_t{threads}; ++c) {
    if (pass == 0 && c % threads != 0) continue;
    if (range % c == 0 && (range / c) % granule == 0) return range / c;
  }
  return 0;
}

int64_t parallel_chunk(int64_t range, int threads, int64_t granule) {
  if (threads <= 1 || range < threads) return 0;
  for (int pass = 0; pass < 2; ++pass)
    if (int64_t c = chunk_in_pass(range, threads, granule, pass)) return c;
  return 0;
}

std::vector<int64_t> parallel_tiles(mlir::linalg::LinalgOp op, int threads, int64_t min_work,
                                    const std::vector<int64_t>& granules) {
  if (threads <= 1) return {};
  llvm::SmallVector<int64_t> r = op.getStaticLoopRanges();
  int64_t work = 1;
  for (int64_t x : r) work *= x;
  if (work < min_work) return {};
  llvm::SmallVector<mlir::utils::IteratorType> iters = op.getIteratorTypesArray();
  // A later loop split into whole rounds of chunks before an earlier one
  // that leaves threads idle in the last round (a 6-row-tiled matmul's 126
  // rows, 3 chunks on 2 threads, against its 128 columns in 2: 129^3 on two
  // Zen 3 cores 1.22-1.25x).
  for (int pass = 0; pass < 2; ++pass)
    for (size_t d = 0; d < r.size(); ++d) {
      if (iters[d] != mlir::utils::IteratorType::parallel || r[d] < threads) continue;
      const int64_t chunk = chunk_in_pass(r[d], threads, d < granules.size() ? granules[d] : 1, pass);
      if (chunk > 0) {
        std::vector<int64_t> sizes(r.size(), 0);
        sizes[d] = chunk;
        return sizes;
      }
    }
  return {};
}

void emit_lane_tiles(std::ostringstream& os, const std::string& id, size_t n_loops, int64_t v,
                     const std::vector<int64_t>& par) {
  std::vector<int64_t> sizes(n_loops, 1);
  sizes.back() = v;
  emit_tile(os, forall_if(os, id, par), id + "t", sizes);
  os << "    transform.structured.vectorize %" << id << "t : !transform.any_op\n";
}

}  // namespace radix::cpu_schedule
