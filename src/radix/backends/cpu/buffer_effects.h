// Which buffers ops read and write, told apart by their roots: what the CPU
// backend's passes after bufferization (radix-merge-foralls,
// radix-accumulators-from-fill) check before moving or rewriting memory
// accesses.
//
// Conservative by construction: two distinct allocations never alias, an
// allocation never aliases a function argument, nor do two arguments of an
// executable's entry (its inputs and its outputs' own buffers; one donated
// to an output may alias anything), while a callee's arguments may; an op
// whose effects are unknown makes the whole answer unknown.
#pragma once

#include <optional>
#include <vector>

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace radix {

// One memory effect: the buffer's root (null: unknown), whether it writes,
// and the view it goes through (null: unknown).
struct Access {
  mlir::Value root;
  bool write = false;
  mlir::Value view;
};

// The buffer a memref value views: through view-like ops to an allocation
// or a block argument.
mlir::Value root_of(mlir::Value v);

// Whether two roots may be (parts of) the same memory; a null root may be
// anything.
bool may_alias(mlir::Value a, mlir::Value b);

// Every memory effect of `op` and the ops nested in it, except those of
// `skip` (and of the ops nested in it); nullopt when some op's effects are
// unknown. Prefetches change no memory; LLVM intrinsics on vectors alone
// (the kernels' dot products) touch none.
std::optional<std::vector<Access>> accesses(mlir::Operation* op, mlir::Operation* skip = nullptr);

// Whether one list writes what the other reads or writes.
bool conflict(const std::vector<Access>& a, const std::vector<Access>& b);

}  // namespace radix
