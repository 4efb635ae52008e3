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
// The rewrite, for a forall output initialized by a fill with no other use,
// whose block argument is read only through extract_slices of exactly the
// slice the iteration writes back (its parallel_insert_slice), the
// iterations together covering the tensor: the loop's output starts from
// the fill's destination, and each of those extract_slices is filled with
// the constant right after it. Measured on Zen 5 (two threads of a shared
// VM at about half speed), best of 5 with / without, three alternations:
// 256^3 199 / 189, 205 / 203, 211 / 190 GFLOP/s; 1024^3 199 / 198,
// 204 / 203, 200 / 184. Not yet where the schedule splits the rows into
// two parts (16-register ISAs): each part's loop starts from a slice of
// the fill, which stays where it is.
//
// Runs first in the bufferize stage (before radix-outputs-in-place, which
// then writes the loop's output into the function's destination).
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

class FillsIntoForallsPass
    : public mlir::PassWrapper<FillsIntoForallsPass, mlir::OperationPass<mlir::ModuleOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FillsIntoForallsPass)
  llvm::StringRef getArgument() const override { return "radix-fills-into-foralls"; }
  llvm::StringRef getDescription() const override {
    return "Fill a parallel loop's constant-initialized output slice by slice inside the loop";
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::scf::ForallOp> loops;
    getOperation().walk([&](mlir::scf::ForallOp f) { loops.push_back(f); });
    for (mlir::scf::ForallOp f : loops)
      for (unsigned i = 0; i < f.getNumResults(); ++i) rewrite(f, i);
  }

 private:
  static void rewrite(mlir::scf::ForallOp loop, unsigned i) {
    mlir::OpOperand& init = loop.getOutputsMutable()[i];
    auto fill = init.get().getDefiningOp<mlir::linalg::FillOp>();
    if (!fill || !fill.hasPureTensorSemantics() || !fill->getResult(0).hasOneUse()) return;
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
        return;  // read some other way (or written back twice): left as it is
      }
    }
    if (!insert || reads.empty() || !covers(loop, insert)) return;
    for (mlir::tensor::ExtractSliceOp e : reads)
      if (!same_slice(e, insert)) return;
    init.set(fill.getOutputs()[0]);
    for (mlir::tensor::ExtractSliceOp e : reads) {
      mlir::OpBuilder b(e->getContext());
      b.setInsertionPointAfter(e);
      auto filled = mlir::linalg::FillOp::create(b, fill.getLoc(), mlir::ValueRange{fill.getInputs()[0]},
                                                  mlir::ValueRange{e.getResult()});
      e.getResult().replaceAllUsesExcept(filled.getResult(0), filled);
    }
    fill.erase();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_fills_into_foralls_pass() { return std::make_unique<FillsIntoForallsPass>(); }

}  // namespace radix
