// CompileOptions: how a traced module is turned into an Executable.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace radix {

struct CompileOptions {
  // Stages to print: "traced" (as emitted), any pipeline stage name
  // (see compiler/pipelines.h: "dps", "fuse", "schedule", "bufferize",
  // "lower"), "llvm-ir" (optimized LLVM IR), or "all".
  std::vector<std::string> dump;
  // Where dumps go: empty = standard error; otherwise a folder that receives
  // one file per stage, "<NN>-<stage>.mlir" / ".ll".
  std::string dump_dir;
  // Apply the transform-dialect tiling + vectorization schedule. Off gives
  // plain scalar loops (a reference for debugging the schedule).
  bool vectorize = true;
  // LLVM optimization level, 0..3.
  int opt_level = 3;
  // Print per-stage progress and timings to standard error.
  bool verbose = false;
};

}  // namespace radix
