// Internal: emits the shard dialect's annotations for a program traced on a
// Mesh of several devices (TraceOptions::mesh).
#pragma once

#include <cstdint>
#include <vector>

#include <span>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Value.h"
#include "radix/core/mesh.h"
#include "radix/core/shape.h"
#include "radix/trace/compilation_context.h"

namespace radix::detail {

// The module's shard.grid symbol (one per module: the TraceOptions mesh).
inline constexpr const char* kGridName = "mesh";

// shard.grid's shape for `mesh` ({1} for one device).
std::vector<int64_t> grid_shape(const Mesh& mesh);

// `v` annotated with `shape`'s partitions (shard.sharding + shard.shard; the
// grid emitted on first use); `v` itself on a one-device mesh. Throws
// TraceError when the mesh rejects the shape (Mesh::check).
mlir::Value annotate_sharding(CompilationContext& ctx, mlir::Value v, const Shape& shape);

// Annotates @main: each argument with its input Shape's partitions (its uses
// then read the annotated value), each returned value with its output
// Shape's (replicated when it has none).
void annotate_main_shardings(CompilationContext& ctx, mlir::func::FuncOp fn, std::span<const Shape> inputs,
                             std::span<const Shape> outputs);

// The sharding-interface models of the dialects Radix emits (linalg, tensor,
// arith, func), which sharding-propagation and shard-partition need.
void register_sharding_models(mlir::DialectRegistry& registry);

}  // namespace radix::detail
