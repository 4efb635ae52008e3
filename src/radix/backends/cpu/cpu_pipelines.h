// The named stages of the CPU lowering, in order. Each one can be dumped
// (DiagnosticOptions::dump) and timed.
//
//   partition  (sharded programs only) sharding-propagation, shard-partition:
//              this device's part of the program
//   collectives (sharded programs only) radix-collectives-to-mpi,
//              convert-shard-to-mpi: collectives as MPI calls
//   dps        radix-results-to-destinations: results become memref arguments
//   fuse       linalg-fuse-elementwise-ops, canonicalize, cse, radix-untie-shared-inits
//   schedule   transform-dialect tiling + vectorization (compiler/schedule.h)
//   bufferize  eliminate-empty-tensors, one-shot-bufferize, buffer deallocation
//   math       radix-math-approximation: f32 exp/log/tanh/... as polynomials
//              (skipped when CpuOptions::approximate_math is off)
//   lower      vector/linalg/scf/math/arith/memref/func -> LLVM dialect
//
// Then the backend translates to LLVM IR ("llvm-ir"), optimizes it and JITs it.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include <vector>

#include "radix/backends/cpu/cpu_options.h"
#include "radix/compiler/stage_dumper.h"
#include "radix/core/status.h"

namespace mlir { class ModuleOp; }

namespace radix {

struct Signature;

struct PipelineStage {
  const char* name;
  const char* pipeline;  // textual pass pipeline (inner part of builtin.module(...)); empty for C++ stages
};

std::span<const PipelineStage> cpu_pipeline_stages();

// Runs the CPU lowering on `module` (in place), from traced IR to the LLVM
// dialect. `timings` receives per-stage milliseconds when non-null.
// `local`, when given, is checked against the partitioned @main.
// `target_features`: the target CPU and its features as resolve_target_cpu
// gives them ("znver3 +avx2,..."); empty: the host's.
Status run_cpu_lowering(mlir::ModuleOp module, const CpuOptions& options, StageDumper& dumper,
                        const std::function<void(std::string_view stage, double ms)>& on_stage = {},
                        const Signature* local = nullptr, std::string_view target_features = {});

// Every stage name DiagnosticOptions::dump accepts for the CPU, in order:
// "traced", the stages above (with "schedule-script", the generated
// transform script, before "schedule"), then "llvm-ir".
const std::vector<std::string>& cpu_stage_names();

}  // namespace radix
