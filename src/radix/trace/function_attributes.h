// Internal: the argument / result attributes Radix writes on a func.func.
// @main gets all of them; a call()ed function none (the inliner merges it
// into its caller, whose @main attributes already say everything).
//
//   argument names   radix.name = "layers.0.w"
//   donations        tf.aliasing_output = <result> : i32 on the donated argument
//   memory kinds     mhlo.memory_kind = "pinned_host" on a result (device: none)
//   shardings        mhlo.sharding = "{replicated}" / "{devices=[4,1]<=[4]}"
//                    on every argument and result, only with num_partitions > 1
#pragma once

#include <span>
#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "radix/core/memory_kind.h"
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

// "{replicated}" if no axis is sharded or num_partitions is 1, else
// "{devices=[d0,d1,...]<=[N]}" with N for a sharded axis and 1 otherwise.
std::string sharding_representation(const Shape& shape, int num_partitions);

// mhlo.sharding on every argument and result; nothing if num_partitions <= 1.
void write_shardings(mlir::func::FuncOp fn, std::span<const Shape> inputs, std::span<const Shape> outputs,
                     int num_partitions);

}  // namespace radix::detail
