// "radix-fills-into-foralls": a parallel loop's output that starts as a
// constant (a matmul's zeros) is filled by each iteration, in its own
// slice, instead of by one thread over the whole tensor before the loop.
//
// The schedule tiles a packed matmul into an scf.forall whose shared output
// is C's panels, initialized by a linalg.fill outside it: that fill runs on
// one thread (a memset of all of C) while the others wait at the next
// parallel region, and C is written to memory and read back. Fusing the
// fill in the transform script does not work there: it reaches the loop
// through C's pack (an expand_shape after lowering), so the fused fill
// wrote a slice of a new tensor that bufferization allocated and copied.
// Here, after the script, the fill feeds the loop directly.
//
// The rewrite, for a fill whose value only parallel loops read, each
// through extract_slices of exactly the slice an iteration writes back (its
// parallel_insert_slice), the iterations together covering the loop's
// output: each of those extract_slices is filled with the constant right
// after it, and the fill's destination replaces the fill. The loops read
// the fill directly, or (rows split into a 6-row-tile part and a 4-row one
// on 16-register ISAs) through a chain of extract_slices of it and
// insert_slices of the parts' results back into it, which must cover the
// tensor. A part with one iteration has no parallel loop (its forall is
// folded away; the schedule splits its columns to avoid that): then the
// fill stays. Measured on Zen 5 (two threads of a shared VM at about half
// speed), best of 5 with / without, three alternations: 256^3 199 / 189,
// 205 / 203, 211 / 190 GFLOP/s; 1024^3 199 / 198, 204 / 203, 200 / 184.
//
// Runs first in the bufferize stage (before radix-outputs-in-place, which
// then writes the loop's output into the function's destination).
#include <optional>
#include <vector>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

bool same_slice(mlir::tensor::ExtractSliceOp e, mlir::tensor::ParallelInsertSliceOp p) {
  auto eq = [](llvm::ArrayRef<mlir::OpFoldResult> a, llvm::ArrayRef<mlir::OpFoldResult> b) {
    return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto ab) {
             return mlir::isEqualConstantIntOrValue(std::get<0>(ab), std::get<1>(ab));
           });
  };
  return eq(e.getMixedOffsets(), p.getMixedOffsets()) && eq(e.getMixedSizes(), p.getMixedSizes()) &&
         eq(e.getMixedStrides(), p.getMixedStrides()) && e.getType() == p.getSourceType();
}

// Iterations times the slice's elements == the tensor's elements: with
// the slices of distinct iterations disjoint (tile_using_forall's), every
// element is written by one iteration.
bool covers(mlir::scf::ForallOp loop, mlir::tensor::ParallelInsertSliceOp p) {
  llvm::ArrayRef<int64_t> lb = loop.getStaticLowerBound(), ub = loop.getStaticUpperBound(), step = loop.getStaticStep();
  int64_t iterations = 1;
  for (size_t i = 0; i < lb.size(); ++i) {
    if (mlir::ShapedType::isDynamic(lb[i]) || mlir::ShapedType::isDynamic(ub[i]) ||
        mlir::ShapedType::isDynamic(step[i]) || step[i] <= 0)
      return false;
    iterations *= (ub[i] - lb[i] + step[i] - 1) / step[i];
  }
  auto slice = p.getSourceType();
  auto whole = llvm::dyn_cast<mlir::RankedTensorType>(p.getDest().getType());
  if (!slice.hasStaticShape() || !whole || !whole.hasStaticShape()) return false;
  for (int64_t s : p.getStaticStrides())
    if (s != 1) return false;
  return iterations * slice.getNumElements() == whole.getNumElements();
}

// A parallel loop output's reads, when they are all of the slice each
// iteration writes back and the iterations cover the output: the
// extract_slices of its block argument (to fill), else none.
std::optional<llvm::SmallVector<mlir::tensor::ExtractSliceOp>> own_slice_reads(mlir::scf::ForallOp loop, unsigned i) {
  mlir::BlockArgument arg = loop.getRegionIterArgs()[i];
  mlir::tensor::ParallelInsertSliceOp insert;
  llvm::SmallVector<mlir::tensor::ExtractSliceOp> reads;
  for (mlir::OpOperand& use : arg.getUses()) {
    if (auto p = llvm::dyn_cast<mlir::tensor::ParallelInsertSliceOp>(use.getOwner());
        p && use.get() == p.getDest() && !insert) {
      insert = p;
    } else if (auto e = llvm::dyn_cast<mlir::tensor::ExtractSliceOp>(use.getOwner())) {
      reads.push_back(e);
    } else {
      return std::nullopt;  // read some other way (or written back twice)
    }
  }
  if (!insert || reads.empty() || !covers(loop, insert)) return std::nullopt;
  for (mlir::tensor::ExtractSliceOp e : reads)
    if (!same_slice(e, insert)) return std::nullopt;
  return reads;
}

// A static, unit-stride box of a tensor: offsets and sizes.
struct Box {
  llvm::SmallVector<int64_t> off, size;
};
template <class SliceOp>
std::optional<Box> static_box(SliceOp op) {
  Box b{llvm::to_vector(op.getStaticOffsets()), llvm::to_vector(op.getStaticSizes())};
  for (int64_t v : b.off)
    if (mlir::ShapedType::isDynamic(v)) return std::nullopt;
  for (int64_t v : b.size)
    if (mlir::ShapedType::isDynamic(v)) return std::nullopt;
  for (int64_t v : op.getStaticStrides())
    if (v != 1) return std::nullopt;
  return b;
}
bool disjoint(const Box& a, const Box& b) {
  for (size_t d = 0; d < a.off.size(); ++d)
    if (a.off[d] + a.size[d] <= b.off[d] || b.off[d] + b.size[d] <= a.off[d]) return true;
  return false;
}
int64_t elements(const Box& b) {
  int64_t n = 1;
  for (int64_t s : b.size) n *= s;
  return n;
}

class FillsIntoForallsPass
    : public mlir::PassWrapper<FillsIntoForallsPass, mlir::OperationPass<mlir::ModuleOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FillsIntoForallsPass)
  llvm::StringRef getArgument() const override { return "radix-fills-into-foralls"; }
  llvm::StringRef getDescription() const override {
    return "Fill a parallel loop's constant-initialized output slice by slice inside the loop";
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::FillOp> fills;
    getOperation().walk([&](mlir::linalg::FillOp f) {
      if (f.hasPureTensorSemantics()) fills.push_back(f);
    });
    for (mlir::linalg::FillOp f : fills) rewrite(f);
  }

 private:
  struct Target {
    mlir::scf::ForallOp loop;
    llvm::SmallVector<mlir::tensor::ExtractSliceOp> reads;
  };

  // The fill's value is read only by parallel loops that read just their
  // own slices, either directly (the loop's output is the fill) or, where
  // the schedule split the rows into parts (16-register ISAs), through a
  // chain: each part's loop starts from an extract_slice of the fill (or of
  // the previous part's insert_slice into it), and the inserts together
  // cover the tensor. Then every such read is filled inside its loop, and
  // the fill's destination takes the fill's place.
  static void rewrite(mlir::linalg::FillOp fill) {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(fill->getResult(0).getType());
    if (!type || !type.hasStaticShape()) return;
    std::vector<Target> targets;
    auto add_target = [&](mlir::OpOperand& use) {
      auto loop = llvm::dyn_cast<mlir::scf::ForallOp>(use.getOwner());
      if (!loop) return false;
      unsigned i = 0;
      while (i < loop.getNumResults() && &loop.getOutputsMutable()[i] != &use) ++i;
      if (i == loop.getNumResults()) return false;  // a bound, not an output
      std::optional<llvm::SmallVector<mlir::tensor::ExtractSliceOp>> reads = own_slice_reads(loop, i);
      if (!reads) return false;
      targets.push_back({loop, std::move(*reads)});
      return true;
    };
    mlir::Value cur = fill->getResult(0);
    mlir::OpOperand* only = cur.hasOneUse() ? &*cur.getUses().begin() : nullptr;
    if (only && llvm::isa<mlir::scf::ForallOp>(only->getOwner())) {  // the loop's output is the fill itself
      if (!add_target(*only)) return;
    } else {
      std::vector<Box> written;
      for (bool first = true; cur; first = false) {
        mlir::Value next;
        bool observed = false;  // read by something other than the chain
        for (mlir::OpOperand& use : cur.getUses()) {
          mlir::Operation* user = use.getOwner();
          auto e = llvm::dyn_cast<mlir::tensor::ExtractSliceOp>(user);
          auto ins = llvm::dyn_cast<mlir::tensor::InsertSliceOp>(user);
          if (e && e.getResult().hasOneUse() && add_target(*e.getResult().getUses().begin())) continue;
          if (ins && use.get() == ins.getDest() && !next) {
            std::optional<Box> box = static_box(ins);
            if (!box) return;
            for (const Box& w : written)
              if (!disjoint(w, *box)) return;
            written.push_back(*box);
            next = ins.getResult();
            continue;
          }
          observed = true;
        }
        // Only the chain's last value (every element written) may be read
        // other than by it.
        if (observed && (first || next)) return;
        cur = next;
      }
      int64_t covered = 0;
      for (const Box& w : written) covered += elements(w);
      if (targets.empty() || covered != type.getNumElements()) return;
    }
    for (Target& t : targets)
      for (mlir::tensor::ExtractSliceOp e : t.reads) {
        mlir::OpBuilder b(e->getContext());
        b.setInsertionPointAfter(e);
        auto filled = mlir::linalg::FillOp::create(b, fill.getLoc(), mlir::ValueRange{fill.getInputs()[0]},
                                                    mlir::ValueRange{e.getResult()});
        e.getResult().replaceAllUsesExcept(filled.getResult(0), filled);
      }
    fill->getResult(0).replaceAllUsesWith(fill.getOutputs()[0]);
    fill.erase();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_fills_into_foralls_pass() { return std::make_unique<FillsIntoForallsPass>(); }

}  // namespace radix
