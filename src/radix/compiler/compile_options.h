// CompileOptions: how a traced module is turned into an Executable.
//
// Split by effect: CodegenOptions change the generated code and are part of
// the executable-cache key; DiagnosticOptions (dumps, verbosity, profiling)
// never do, so turning them on still hits the cache.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <string>
#include <vector>

#include "radix/backends/cpu/cpu_options.h"
#include "radix/backends/cuda/cuda_options.h"

namespace radix {

struct CodegenOptions {
  // LLVM optimization level, 0..3.
  int opt_level = 3;
  // The CPU to generate code for: "host" (this machine's CPU and features)
  // or an LLVM CPU name ("znver3", "skylake-avx512", "x86-64-v3", ...). Code
  // for another CPU runs here only if this CPU has its features.
  std::string target_cpu = "host";
  // Each backend's typed options (IREE's per-target options): only the
  // compiling backend's are read and hashed.
  CpuOptions cpu;
  CudaOptions cuda;
};

struct DiagnosticOptions {
  // Stages to write: "traced" (as emitted), any stage of the backend's
  // pipeline (CPU: "partition", "collectives" for sharded programs, "dps", "fuse", "schedule-script", "schedule", "bufferize",
  // "math", "lower", "llvm-ir", "asm" (the native code, as assembly); CUDA: "custom-calls", "dps", "fuse", "bufferize", "gpu-map", "nvvm",
  // "ptx" (one <kernel>.ptx file per kernel), "host", "llvm-ir"), or "all".
  std::vector<std::string> dump;
  // Where dumps go. Empty: standard error. Otherwise every compile writes
  // <dump_dir>/<backend>/<module name>_<key>/module.mlir (the traced module)
  // and one "<NN>-<stage>.mlir" / ".ll" per dumped stage there; <key> is the
  // executable-cache key, so each distinct program has its own folder.
  std::string dump_dir;
  // Per-stage progress and timings (and executable-cache decisions) on
  // standard error.
  bool verbose = false;
};

struct CompileOptions {
  CodegenOptions codegen;
  DiagnosticOptions diagnostics;
  // On-disk executable cache folder (see runtime/executable_cache.h); empty:
  // no cache. A compile first looks the program up there and stores it after.
  std::string cache_dir;
};

}  // namespace radix
