// "radix-outputs-in-place": the function's outputs are computed where they
// are returned, not in a buffer of their own copied there at the end.
//
// Two rewrites, before one-shot bufferization:
// - a linalg.copy of a tensor into a tensor.empty is its input, value for
//   value: the copy goes (where a copy is needed after all, an input
//   returned as it is, bufferization still makes one);
// - an output written into the function's destination memref
//   (bufferization.materialize_in_destination) whose value was built up
//   from a tensor.empty of the destination's type (or of another static
//   shape of as many elements, reached through a reshape of the
//   destination), through reshapes and destination-passing ops, starts from
//   the destination itself instead of the empty. eliminate-empty-tensors
//   does the same but stops at the reshapes (it follows only ops that keep
//   the type).
//
// Why: the packed matmul's output is C's panels [m, n / panel, panel], an
// expand_shape of C's row-major layout, and its unpack lowers to a copy of
// their collapse_shape into an empty tensor. Bufferization gave the product
// a buffer of its own (zero-filled, allocated per call) and copied all of C
// into the output after it. Measured on Zen 5, one process, with / without
// (best of 15, two orders of compilation): 256^3 1.04x on one thread,
// 1.09-1.13x on two; 512^3 two threads 1.11-1.14x; 1024^3 1.00-1.03x on
// one, 1.04-1.06x on two. An interleaved decode mat-vec's output tiles
// [n / 16, 16] of a [1, n] result likewise: stories15M's classifier copied
// 128 KiB of logits per token (Zen 3, one thread: 2-5% of a Q4_0 step).
//
// Runs first in the bufferize stage (before eliminate-empty-tensors).
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"

namespace radix {

namespace {

class OutputsInPlacePass
    : public mlir::PassWrapper<OutputsInPlacePass, mlir::OperationPass<mlir::ModuleOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OutputsInPlacePass)
  llvm::StringRef getArgument() const override { return "radix-outputs-in-place"; }
  llvm::StringRef getDescription() const override {
    return "Compute the function outputs in their destinations: no copy of a tensor into an empty one";
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::CopyOp> copies;
    getOperation().walk([&](mlir::linalg::CopyOp c) {
      if (c.hasPureTensorSemantics() && c->getNumResults() == 1 && c.getInputs().size() == 1 &&
          c.getOutputs()[0].getDefiningOp<mlir::tensor::EmptyOp>() &&
          c.getInputs()[0].getType() == c->getResult(0).getType())
        copies.push_back(c);
    });
    for (mlir::linalg::CopyOp c : copies) {
      c->getResult(0).replaceAllUsesWith(c.getInputs()[0]);
      c.erase();
    }
    getOperation().walk([&](mlir::bufferization::MaterializeInDestinationOp m) { write_in_place(m); });
  }

 private:
  // An output written into the function's destination memref whose value
  // was built up from a tensor.empty of the destination's type through
  // reshapes and destination-passing ops (the packed matmul: empty ->
  // expand_shape -> fill -> forall or for loops, insert_slices of split
  // row blocks -> collapse_shape): the empty becomes the destination
  // itself. An empty's contents are unspecified, so any tensor of its type
  // may stand in for it: where writing in place would clobber a value still
  // needed, bufferization copies as it would have. eliminate-empty-tensors
  // does the same but stops at ops that change the type (the reshapes).
  static void write_in_place(mlir::bufferization::MaterializeInDestinationOp m) {
    mlir::Value dest = m.getDest();
    auto mt = llvm::dyn_cast<mlir::MemRefType>(dest.getType());
    if (!mt || !mt.getLayout().isIdentity() || !dest.hasOneUse()) return;
    mlir::Value v = m.getSource();
    mlir::tensor::EmptyOp empty;
    for (int depth = 0; depth < 64 && !empty; ++depth) {
      mlir::Operation* d = v.getDefiningOp();
      if (!d) return;
      if (auto c = llvm::dyn_cast<mlir::tensor::CollapseShapeOp>(d)) {
        v = c.getSrc();
      } else if (auto e = llvm::dyn_cast<mlir::tensor::ExpandShapeOp>(d)) {
        v = e.getSrc();
      } else if (auto e = llvm::dyn_cast<mlir::tensor::EmptyOp>(d)) {
        empty = e;
      } else if (auto dps = llvm::dyn_cast<mlir::DestinationStyleOpInterface>(d)) {
        mlir::OpOperand* tied = dps.getTiedOpOperand(llvm::cast<mlir::OpResult>(v));
        if (!tied) return;
        v = tied->get();
      } else if (auto ins = llvm::dyn_cast<mlir::tensor::InsertSliceOp>(d)) {
        v = ins.getDest();
      } else if (auto f = llvm::dyn_cast<mlir::scf::ForallOp>(d)) {
        v = f.getTiedOpOperand(llvm::cast<mlir::OpResult>(v))->get();
      } else if (auto f = llvm::dyn_cast<mlir::scf::ForOp>(d)) {
        v = f.getInitArgs()[llvm::cast<mlir::OpResult>(v).getResultNumber()];
      } else {
        return;
      }
    }
    if (!empty) return;
    const auto dest_type = mlir::RankedTensorType::get(mt.getShape(), mt.getElementType());
    const mlir::RankedTensorType et = empty.getType();
    // Another static shape of as many elements (a mat-vec's output tiles
    // [n / 16, 16] returned as [1, n]): the destination, contiguous, is
    // reshaped to it through one dimension.
    if (et != dest_type && (!et.hasStaticShape() || !dest_type.hasStaticShape() || et.getRank() == 0 ||
                            dest_type.getRank() == 0 ||
                            et.getElementType() != dest_type.getElementType() ||
                            et.getNumElements() != dest_type.getNumElements()))
      return;
    mlir::OpBuilder b(empty);
    const mlir::Location loc = empty.getLoc();
    mlir::Value t = mlir::bufferization::ToTensorOp::create(b, loc, dest_type, dest,
                                                            /*restrict=*/true, /*writable=*/true);
    if (et != dest_type) {
      auto all = [](int64_t rank) {
        mlir::ReassociationIndices r;
        for (int64_t i = 0; i < rank; ++i) r.push_back(i);
        return llvm::SmallVector<mlir::ReassociationIndices>{r};
      };
      const auto flat = mlir::RankedTensorType::get({et.getNumElements()}, et.getElementType());
      if (dest_type.getRank() != 1) t = mlir::tensor::CollapseShapeOp::create(b, loc, flat, t, all(dest_type.getRank()));
      if (et.getRank() != 1) t = mlir::tensor::ExpandShapeOp::create(b, loc, et, t, all(et.getRank()));
    }
    empty.getResult().replaceAllUsesWith(t);
    empty.erase();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_outputs_in_place_pass() { return std::make_unique<OutputsInPlacePass>(); }

}  // namespace radix
