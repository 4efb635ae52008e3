// Internal: traces a C++ function over rank-0 tensors as *scalar* ops at the
// end of the builder's current block — a sort comparator inside a merge loop,
// a scatter combiner, a custom reduce body inside a linalg region.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "radix/trace/mlir_bridge.h"

namespace radix::detail {

// Wraps each scalar `args[i]` (of dtypes[i]) as a rank-0 Tensor, runs fn, has
// `check_result` validate the returned tensor's shape (it throws TraceError),
// then rewrites the rank-0 linalg ops fn emitted into their scalar bodies and
// returns the result scalar. Errors from fn come back prefixed by `what`.
mlir::Value trace_scalar_fn(CompilationContext& ctx, const std::string& what, const std::vector<mlir::Value>& args,
                            const std::vector<DType>& dtypes, const std::function<void(const Shape&)>& check_result,
                            const std::function<Tensor(const std::vector<Tensor>&)>& fn);

// The same, the result required to be a rank-0 tensor of `result_dtype`.
mlir::Value trace_scalar_fn(CompilationContext& ctx, const std::string& what, const std::vector<mlir::Value>& args,
                            const std::vector<DType>& dtypes, DType result_dtype,
                            const std::function<Tensor(const std::vector<Tensor>&)>& fn);

}  // namespace radix::detail
