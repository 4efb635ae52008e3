// Internal: the argument / result attributes Radix writes on a func.func.
// @main gets all of them; a call()ed function none (the inliner merges it
// into its caller, whose @main attributes already say everything).
//
//   argument names   radix.name = "layers.0.w"
//   donations        tf.aliasing_output = <result> : i32 on the donated argument
//   memory kinds     mhlo.memory_kind = "pinned_host" on a result (device: none)
//   shardings        mhlo.sharding = "{replicated}" / "{devices=[4,1]<=[4]}"
//                    on every argument and result, only on a mesh of several devices
#pragma once

#include <span>
#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "radix/core/memory_kind.h"
#include "radix/core/mesh.h"
#include "radix/core/shape.h"

namespace radix::detail {

// names[i] on argument i; empty names are skipped.
void write_argument_names(mlir::func::FuncOp fn, std::span<const std::string> names);

// For each result o with output_donations[o] = a >= 0: tf.aliasing_output = o
// on argument a. An argument donated to two results is a TraceError naming
// both results and the argument's shape (inputs[a]).
void write_donations(mlir::func::FuncOp fn, std::span<const int> output_donations, std::span<const Shape> inputs);

// mhlo.memory_kind on each result that is not in device memory.
void write_output_memory_kinds(mlir::func::FuncOp fn, std::span<const MemoryKind> kinds);

// XLA's HloSharding text for `shape` split over `mesh`: "{replicated}" when
// no axis is split or the mesh is one device, else "{devices=[t0,t1,...]<=[N]}"
// with t_i the size of the mesh axis splitting tensor axis i (1 if none);
// mesh axes splitting nothing add a last tile dim and
// " last_tile_dim_replicate"; mesh axes used out of mesh order print the
// device iota transposed ("<=[2,2]T(1,0)").
std::string sharding_representation(const Shape& shape, const Mesh& mesh);

// mhlo.sharding on every argument and result; nothing for a one-device mesh.
void write_shardings(mlir::func::FuncOp fn, std::span<const Shape> inputs, std::span<const Shape> outputs,
                     const Mesh& mesh);

}  // namespace radix::detail
