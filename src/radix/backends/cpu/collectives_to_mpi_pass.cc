// "radix-collectives-to-mpi": the partitioner's collectives (shard.all_reduce,
// shard.all_gather) become calls into the runtime's MPI wrappers
// (runtime/distributed.cc: radix_mpi_all_reduce / radix_mpi_all_gather, over
// MPI_Allreduce / MPI_Allgather).
//
// Why not MLIR's convert-shard-to-mpi for all_reduce: measured on MLIR 22
// with OpenMPI 4.1, its LLVM lowering reads the communicator MPI_Comm_split
// returns as a 32-bit int (MPICH's handle type) and sign-extends it into a
// pointer, so MPI_Allreduce crashes; it also splits a new communicator on
// every call (a collective, and a leak). The runtime splits one per (grid,
// axes) and keeps it. The mpi dialect has no all-gather at all.
// convert-shard-to-mpi still lowers what remains (process indices).
//
// MPI_Allgather concatenates the ranks' blocks, i.e. stacks the local
// tensors on a new leading axis [P, local...]; a transpose moves that axis
// next to the gather axis and a collapse merges the two.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cpu/runtime_calls.h"
#include "radix/runtime/distributed.h"

namespace radix {

namespace {

constexpr int kMaxGridAxes = 4;

struct CollectivesToMpiPass : public mlir::PassWrapper<CollectivesToMpiPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CollectivesToMpiPass)

  llvm::StringRef getArgument() const override { return "radix-collectives-to-mpi"; }
  llvm::StringRef getDescription() const override {
    return "Lower shard.all_reduce / shard.all_gather to MPI_Allreduce / MPI_Allgather (runtime wrappers)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::bufferization::BufferizationDialect, mlir::func::FuncDialect,
                    mlir::linalg::LinalgDialect, mlir::memref::MemRefDialect, mlir::tensor::TensorDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    llvm::SmallVector<mlir::Operation*> ops;
    module.walk([&](mlir::Operation* op) {
      if (mlir::isa<mlir::shard::AllReduceOp, mlir::shard::AllGatherOp>(op)) ops.push_back(op);
    });
    mlir::OpBuilder b(&getContext());
    for (mlir::Operation* op : ops) {
      mlir::LogicalResult r = mlir::isa<mlir::shard::AllGatherOp>(op)
                                  ? lower_all_gather(b, module, mlir::cast<mlir::shard::AllGatherOp>(op))
                                  : lower_all_reduce(b, module, mlir::cast<mlir::shard::AllReduceOp>(op));
      if (mlir::failed(r)) return signalPassFailure();
    }
  }

  // The grid's dims (4, padded with 1) and the mask of `axes`; the op's grid
  // must be static with at most 4 axes.
  static mlir::FailureOr<std::pair<std::array<int64_t, kMaxGridAxes>, int64_t>> grid_args(
      mlir::Operation* op, mlir::FlatSymbolRefAttr grid_ref, llvm::ArrayRef<int16_t> axes) {
    auto grid = mlir::SymbolTable::lookupNearestSymbolFrom<mlir::shard::GridOp>(op, grid_ref);
    if (!grid || grid.getShape().size() > kMaxGridAxes || llvm::is_contained(grid.getShape(), mlir::ShapedType::kDynamic))
      return op->emitError("radix: collectives need a static grid of at most 4 axes");
    std::array<int64_t, kMaxGridAxes> dims;
    dims.fill(1);
    for (size_t i = 0; i < grid.getShape().size(); ++i) dims[i] = grid.getShape()[i];
    int64_t mask = 0;
    for (int16_t a : axes) mask |= int64_t{1} << a;
    return std::make_pair(dims, mask);
  }

  static mlir::Value i64(mlir::OpBuilder& b, mlir::Location loc, int64_t v) {
    return mlir::arith::ConstantIntOp::create(b, loc, v, 64);
  }

  // The runtime's code for an element type (distributed::MpiType), or -1.
  static int64_t mpi_type(mlir::Type t) {
    if (t.isF32()) return static_cast<int64_t>(distributed::MpiType::kF32);
    if (t.isF64()) return static_cast<int64_t>(distributed::MpiType::kF64);
    if (t.isInteger(32)) return static_cast<int64_t>(distributed::MpiType::kI32);
    if (t.isInteger(64)) return static_cast<int64_t>(distributed::MpiType::kI64);
    return -1;
  }

  mlir::LogicalResult lower_all_reduce(mlir::OpBuilder& b, mlir::ModuleOp module, mlir::shard::AllReduceOp op) {
    mlir::Location loc = op.getLoc();
    auto in_t = mlir::dyn_cast<mlir::RankedTensorType>(op.getInput().getType());
    auto out_t = mlir::dyn_cast<mlir::RankedTensorType>(op.getResult().getType());
    if (!in_t || !out_t || !in_t.hasStaticShape() || in_t != out_t)
      return op.emitError("radix: all_reduce needs one static tensor type in and out");
    const int64_t type = mpi_type(in_t.getElementType());
    if (type < 0) return op.emitError("radix: all_reduce supports f32, f64, i32 and i64 elements");
    distributed::MpiReduction red;
    switch (op.getReduction()) {
      case mlir::shard::ReductionKind::Sum: red = distributed::MpiReduction::kSum; break;
      case mlir::shard::ReductionKind::Max: red = distributed::MpiReduction::kMax; break;
      case mlir::shard::ReductionKind::Min: red = distributed::MpiReduction::kMin; break;
      case mlir::shard::ReductionKind::Product: red = distributed::MpiReduction::kProduct; break;
      default: return op.emitError("radix: all_reduce supports sum, max, min and product");
    }
    auto g = grid_args(op, op.getGridAttr(), op.getGridAxes());
    if (mlir::failed(g)) return mlir::failure();
    b.setInsertionPoint(op);
    auto m_t = mlir::MemRefType::get(in_t.getShape(), in_t.getElementType());
    mlir::Value src = mlir::bufferization::ToBufferOp::create(b, loc, m_t, op.getInput(), /*read_only=*/true);
    mlir::Value dst = mlir::memref::AllocOp::create(b, loc, m_t);
    llvm::SmallVector<mlir::Value> args = {detail::buffer_address(b, loc, src), detail::buffer_address(b, loc, dst),
                                           i64(b, loc, in_t.getNumElements()), i64(b, loc, type),
                                           i64(b, loc, static_cast<int64_t>(red))};
    for (int64_t d : g->first) args.push_back(i64(b, loc, d));
    args.push_back(i64(b, loc, g->second));
    mlir::func::CallOp::create(b, loc, detail::declare_runtime_function(b, module, "radix_mpi_all_reduce", 10), args);
    mlir::Value result = mlir::bufferization::ToTensorOp::create(b, loc, out_t, dst, /*restrict=*/true, /*writable=*/true);
    op.getResult().replaceAllUsesWith(result);
    op.erase();
    return mlir::success();
  }

  mlir::LogicalResult lower_all_gather(mlir::OpBuilder& b, mlir::ModuleOp module, mlir::shard::AllGatherOp op) {
    mlir::Location loc = op.getLoc();
    auto in_t = mlir::dyn_cast<mlir::RankedTensorType>(op.getInput().getType());
    auto out_t = mlir::dyn_cast<mlir::RankedTensorType>(op.getResult().getType());
    if (!in_t || !out_t || !in_t.hasStaticShape()) return op.emitError("radix: all_gather needs a static tensor");
    auto g = grid_args(op, op.getGridAttr(), op.getGridAxes());
    if (mlir::failed(g)) return mlir::failure();
    int64_t parts = 1;
    for (int16_t a : op.getGridAxes()) parts *= g->first[static_cast<size_t>(a)];
    const int64_t axis = op.getGatherAxis().getSExtValue();
    const int64_t rank = in_t.getRank();
    mlir::Type elem = in_t.getElementType();
    const int64_t elem_bytes = (elem.getIntOrFloatBitWidth() + 7) / 8;
    b.setInsertionPoint(op);

    auto in_m = mlir::MemRefType::get(in_t.getShape(), elem);
    mlir::Value src = mlir::bufferization::ToBufferOp::create(b, loc, in_m, op.getInput(), /*read_only=*/true);
    llvm::SmallVector<int64_t> stacked = {parts};
    stacked.append(in_t.getShape().begin(), in_t.getShape().end());
    mlir::Value dst = mlir::memref::AllocOp::create(b, loc, mlir::MemRefType::get(stacked, elem));
    llvm::SmallVector<mlir::Value> args = {detail::buffer_address(b, loc, src), detail::buffer_address(b, loc, dst),
                                           i64(b, loc, in_t.getNumElements() * elem_bytes)};
    for (int64_t d : g->first) args.push_back(i64(b, loc, d));
    args.push_back(i64(b, loc, g->second));
    mlir::func::CallOp::create(b, loc, detail::declare_runtime_function(b, module, "radix_mpi_all_gather", 8), args);
    mlir::Value t = mlir::bufferization::ToTensorOp::create(b, loc, mlir::RankedTensorType::get(stacked, elem), dst,
                                                            /*restrict=*/true, /*writable=*/true);
    if (axis > 0) {  // [P, l0, .., l_axis, ..] -> [l0, .., P, l_axis, ..]
      llvm::SmallVector<int64_t> perm, dims;
      for (int64_t i = 1; i <= axis; ++i) perm.push_back(i);
      perm.push_back(0);
      for (int64_t i = axis + 1; i <= rank; ++i) perm.push_back(i);
      for (int64_t p : perm) dims.push_back(stacked[static_cast<size_t>(p)]);
      mlir::Value init = mlir::tensor::EmptyOp::create(b, loc, dims, elem);
      t = mlir::linalg::TransposeOp::create(b, loc, t, init, perm).getResult()[0];
    }
    llvm::SmallVector<mlir::ReassociationIndices> groups;
    for (int64_t i = 0; i < rank; ++i) {
      if (i < axis) groups.push_back({i});
      else if (i == axis) groups.push_back({i, i + 1});
      else groups.push_back({i + 1});
    }
    mlir::Value result = mlir::tensor::CollapseShapeOp::create(b, loc, out_t, t, groups);
    op.getResult().replaceAllUsesWith(result);
    op.erase();
    return mlir::success();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> create_collectives_to_mpi_pass() { return std::make_unique<CollectivesToMpiPass>(); }

}  // namespace radix
