// The named stages of the CPU lowering, in order. Each one can be dumped
// (CompileOptions::dump) and timed.
//
//   dps        radix-results-to-destinations: results become memref arguments
//   fuse       linalg-fuse-elementwise-ops, canonicalize, cse, radix-untie-shared-inits
//   schedule   transform-dialect tiling + vectorization (compiler/schedule.h)
//   bufferize  eliminate-empty-tensors, one-shot-bufferize, buffer deallocation
//   math       radix-math-approximation: f32 exp/log/tanh/... as polynomials
//              (skipped when CompileOptions::approximate_math is off)
//   lower      vector/linalg/scf/math/arith/memref/func -> LLVM dialect
//
// Then the backend translates to LLVM IR ("llvm-ir"), optimizes it and JITs it.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "radix/compiler/compile_options.h"
#include "radix/core/status.h"

namespace mlir { class ModuleOp; }

namespace radix {

struct PipelineStage {
  const char* name;
  const char* pipeline;  // textual pass pipeline (inner part of builtin.module(...)); empty for C++ stages
};

std::span<const PipelineStage> cpu_pipeline_stages();

// Writes a stage's text where CompileOptions says (stderr or a dump folder),
// if that stage was asked for.
class StageDumper {
 public:
  explicit StageDumper(const CompileOptions& options) : options_(options) {}
  bool wants(std::string_view stage) const;
  void dump(std::string_view stage, std::string_view text, std::string_view ext = "mlir");
  void dump_module(std::string_view stage, mlir::ModuleOp module);

 private:
  const CompileOptions& options_;
  int counter_ = 0;
};

// Runs the CPU lowering on `module` (in place), from traced IR to the LLVM
// dialect. `timings` receives per-stage milliseconds when non-null.
Status run_cpu_lowering(mlir::ModuleOp module, const CompileOptions& options, StageDumper& dumper,
                        const std::function<void(std::string_view stage, double ms)>& on_stage = {});

// True if `name` is "traced", a stage name, "schedule-script" (the generated
// transform script), "llvm-ir" or "all".
bool is_known_stage(std::string_view name);
// "traced, dps, fuse, schedule-script, schedule, ..., llvm-ir, all" for messages.
std::string known_stages();

}  // namespace radix
