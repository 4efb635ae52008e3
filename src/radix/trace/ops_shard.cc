#include "radix/trace/ops_shard.h"

#include "mlir/Dialect/Arith/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Func/Extensions/ShardingExtensions.h"
#include "mlir/Dialect/Linalg/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/ShardingInterfaceImpl.h"
#include "mlir/IR/BuiltinOps.h"
#include "radix/core/mesh.h"
#include "radix/trace/mlir_bridge.h"
#include "radix/trace/sharding_emitter.h"

namespace radix {

namespace detail {

namespace {
// The module's shard.grid for the trace's mesh, emitted on first use.
void ensure_grid(CompilationContext& ctx) {
  mlir::OpBuilder& b = ctx.builder();
  ctx.mlir_context().getOrLoadDialect<mlir::shard::ShardDialect>();
  mlir::ModuleOp module = ctx.module();
  if (module.lookupSymbol(kGridName)) return;
  mlir::OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  mlir::shard::GridOp::create(b, ctx.loc(), kGridName, llvm::ArrayRef<int64_t>(grid_shape(ctx.options().mesh)));
}
}  // namespace

mlir::Value annotate_sharding(CompilationContext& ctx, mlir::Value v, const Shape& shape) {
  const Mesh& mesh = ctx.options().mesh;
  if (!ctx.automatic_partitioning()) return v;
  // emit_main checks the arguments first (naming them); this catches what
  // shard() pins.
  if (auto err = mesh.check(shape)) fail("shard: " + *err);
  mlir::OpBuilder& b = ctx.builder();
  mlir::MLIRContext* mctx = &ctx.mlir_context();
  ensure_grid(ctx);
  // split_axes[i]: the grid axes splitting tensor axis i (one or none here).
  llvm::SmallVector<mlir::shard::GridAxesAttr> split;
  int last = -1;
  for (int i = 0; i < shape.rank(); ++i) {
    llvm::SmallVector<int16_t, 1> axes;
    if (!shape.partition(i).empty()) {
      axes.push_back(static_cast<int16_t>(*mesh.find(shape.partition(i))));
      last = i;
    }
    split.push_back(mlir::DenseI16ArrayAttr::get(mctx, axes));
  }
  split.resize(static_cast<size_t>(last + 1));  // trailing replicated axes are implied
  if (split.empty()) split.push_back(mlir::DenseI16ArrayAttr::get(mctx, {}));
  auto grid = mlir::FlatSymbolRefAttr::get(mctx, kGridName);
  mlir::Value sharding = mlir::shard::ShardingOp::create(b, ctx.loc(), grid, split).getResult();
  return mlir::shard::ShardOp::create(b, ctx.loc(), v, sharding, mlir::UnitAttr()).getResult();
}

std::vector<int64_t> grid_shape(const Mesh& mesh) {
  std::vector<int64_t> dims;
  for (int a = 0; a < mesh.rank(); ++a) dims.push_back(mesh.size(a));
  if (dims.empty()) dims.push_back(1);
  return dims;
}

void annotate_main_shardings(CompilationContext& ctx, mlir::func::FuncOp fn, std::span<const Shape> inputs,
                             std::span<const Shape> outputs) {
  mlir::OpBuilder& b = ctx.builder();
  mlir::OpBuilder::InsertionGuard guard(b);
  mlir::Block& entry = fn.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    mlir::Value arg = fn.getArgument(i);
    mlir::Value annotated = annotate_sharding(ctx, arg, inputs[i]);
    arg.replaceAllUsesExcept(annotated, annotated.getDefiningOp());
  }
  mlir::Operation* ret = entry.getTerminator();
  b.setInsertionPoint(ret);
  for (unsigned o = 0; o < ret->getNumOperands(); ++o)
    ret->setOperand(o, annotate_sharding(ctx, ret->getOperand(o), outputs[o]));
}

void register_sharding_models(mlir::DialectRegistry& registry) {
  mlir::linalg::registerShardingInterfaceExternalModels(registry);
  mlir::tensor::registerShardingInterfaceExternalModels(registry);
  mlir::arith::registerShardingInterfaceExternalModels(registry);
  mlir::func::registerShardingInterfaceExternalModels(registry);
}

}  // namespace detail

Tensor shard(const Tensor& x, std::initializer_list<std::pair<Axis, Tag>> spec) {
  CompilationContext& ctx = detail::context_for("shard", {&x});
  Shape s = x.shape().replicated();
  try {
    for (const auto& [axis, mesh_axis] : spec) {
      if (mesh_axis.empty())
        detail::fail("shard(" + x.shape().to_string() + "): axis " + axis.to_string() + " names no mesh axis");
      s = s.with_partition(axis, mesh_axis);
    }
  } catch (const std::invalid_argument& e) {
    detail::fail(std::string("shard: ") + e.what());
  }
  const Mesh& mesh = ctx.options().mesh;
  if (ctx.options().partitioning == TraceOptions::Partitioning::kManual && !mesh.single_device())
    detail::fail("shard(" + x.shape().to_string() + "): a program traced per device (manual partitioning) "
                 "places nothing; its collectives say how devices combine");
  return detail::wrap(ctx, detail::annotate_sharding(ctx, detail::value_of(x), s), s);
}

Tensor all_reduce(const Tensor& x, Tag mesh_axis, CollectiveReduction op) {
  CompilationContext& ctx = detail::context_for("all_reduce", {&x});
  const TraceOptions& o = ctx.options();
  const std::string what = "all_reduce(" + x.shape().to_string() + ", '" + std::string(mesh_axis.name()) + "')";
  if (o.partitioning != TraceOptions::Partitioning::kManual)
    detail::fail(what + ": collectives are explicit only in a program traced per device "
                 "(TraceOptions::partitioning = kManual); automatic partitioning inserts its own");
  auto axis = o.mesh.find(mesh_axis);
  if (!axis) detail::fail(what + ": " + o.mesh.to_string() + " has no axis '" + std::string(mesh_axis.name()) + "'");
  const DType d = x.dtype();
  if (d != DType::kF32 && d != DType::kF64 && d != DType::kI32 && d != DType::kI64)
    detail::fail(what + ": reduces f32, f64, i32 or i64 elements");
  if (o.mesh.size(*axis) == 1) return x;
  detail::ensure_grid(ctx);
  mlir::shard::ReductionKind kind = mlir::shard::ReductionKind::Sum;
  switch (op) {
    case CollectiveReduction::kSum: kind = mlir::shard::ReductionKind::Sum; break;
    case CollectiveReduction::kMax: kind = mlir::shard::ReductionKind::Max; break;
    case CollectiveReduction::kMin: kind = mlir::shard::ReductionKind::Min; break;
    case CollectiveReduction::kProduct: kind = mlir::shard::ReductionKind::Product; break;
  }
  mlir::Value v = detail::value_of(x);
  mlir::Value r = mlir::shard::AllReduceOp::create(ctx.builder(), ctx.loc(), v.getType(), detail::kGridName,
                                                   llvm::ArrayRef<int16_t>{static_cast<int16_t>(*axis)}, v, kind)
                      .getResult();
  return detail::wrap(ctx, r, x.shape());
}

}  // namespace radix
