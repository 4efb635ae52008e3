// Radix's own MLIR passes (each named, so it can appear in pipelines and dumps).
#pragma once

#include <memory>

namespace mlir { class Pass; }

namespace radix {

// "radix-results-to-destinations": rewrites func.func @main(tensors) ->
// (tensors) into destination-passing style, @main(tensors..., memrefs...) with
// no results, each result materialized into its destination memref. Inputs
// are marked non-writable so bufferization never writes into a caller's
// buffer. Adds llvm.emit_c_interface for a stable C calling convention.
std::unique_ptr<mlir::Pass> create_results_to_destinations_pass();

// "radix-untie-shared-inits": clones every tensor.empty / linalg.fill that
// has several users, one per user, so that empty-tensor elimination never
// places two results' computations in one destination buffer.
std::unique_ptr<mlir::Pass> create_untie_shared_inits_pass();

// "radix-math-approximation": f32 exp / log / tanh / ... become polynomial
// approximations that stay vectorized (instead of one libm call per lane).
std::unique_ptr<mlir::Pass> create_math_approximation_pass();

// "radix-materialize-reduction-indices": linalg.index of a reduction loop
// becomes an iota input operand, so that reduction tiling (which does not
// offset such indices in MLIR 22) cannot scramble them.
std::unique_ptr<mlir::Pass> create_materialize_reduction_indices_pass();

// "radix-strided-copies-to-loops": memref.copy between non-contiguous
// buffers becomes linalg.copy (loops) instead of a runtime-library call.
std::unique_ptr<mlir::Pass> create_strided_copies_to_loops_pass();

// Registers the passes above with MLIR's textual pipeline parser (idempotent).
void register_radix_passes();

}  // namespace radix
