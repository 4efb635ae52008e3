// Radix's own MLIR passes that every backend can use (each named, so it can
// appear in pipelines and dumps). CPU-only passes: backends/cpu/cpu_passes.h.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "radix/core/status.h"

namespace mlir { class Pass; class ModuleOp; }

namespace radix {

namespace detail { class DiagnosticCollector; }

// "radix-results-to-destinations": rewrites func.func @main(tensors) ->
// (tensors) into destination-passing style, @main(tensors..., memrefs...) with
// no results, each result materialized into its destination memref. Inputs
// are marked non-writable so bufferization never writes into a caller's
// buffer — except a donated one (tf.aliasing_output = o): it becomes a
// writable memref argument and result o is materialized into it (no
// destination argument of its own). Adds llvm.emit_c_interface for a stable
// C calling convention: @main(inputs..., non-donated outputs...).
std::unique_ptr<mlir::Pass> create_results_to_destinations_pass();

// "radix-untie-shared-inits": clones every tensor.empty / linalg.fill that
// has several users, one per user, so that empty-tensor elimination never
// places two results' computations in one destination buffer.
std::unique_ptr<mlir::Pass> create_untie_shared_inits_pass();

// Registers the passes above with MLIR's textual pipeline parser (idempotent).
void register_radix_passes();

// Parses `pipeline` (the inner part of builtin.module(...)) and runs it on
// `module`: a compile error naming `what` (e.g. "stage 'bufferize'") and the
// pipeline, with the diagnostics `diags` collected, if either fails.
Status run_pass_pipeline(mlir::ModuleOp module, const std::string& what, const std::string& pipeline,
                         detail::DiagnosticCollector& diags);

// `text` with every `key` replaced by `by` (a pipeline's @placeholders@).
std::string replace_all(std::string text, std::string_view key, std::string_view by);

}  // namespace radix
