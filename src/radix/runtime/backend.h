// The backend boundary: the few operations a device backend provides. The CPU
// backend (backends/cpu) is the embedded default; a CUDA backend implements the
// same interface. Everything above it (Platform, Buffer, Executable) is
// backend-agnostic.
//
// Ownership: device memory returned by allocate() is owned by the caller and
// released with deallocate(); a BackendExecutable owns its compiled code.
// Thread-safety: every method may be called from several threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "radix/compiler/compile_options.h"
#include "radix/core/shape.h"
#include "radix/core/status.h"

namespace radix {

class TracedModule;

// Compile-time statistics, for progress output and benchmarks.
struct CompileStats {
  double lower_ms = 0;  // pass pipelines (incl. schedule)
  double jit_ms = 0;    // LLVM optimization + machine code
  double total_ms = 0;
  // True if the vectorizing schedule was rejected and plain loops compiled
  // instead (a warning is printed too).
  bool schedule_fell_back = false;
  std::string summary() const;
};

class BackendExecutable {
 public:
  virtual ~BackendExecutable() = default;
  // Runs the program: reads `inputs` (device pointers, in Signature order),
  // writes every output into the caller-allocated `outputs`. Shapes were
  // checked by the caller.
  virtual Status execute(std::span<void* const> inputs, std::span<void* const> outputs) = 0;
  virtual const CompileStats& stats() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Lowers and compiles a traced module (the module itself is not modified).
  virtual Result<std::unique_ptr<BackendExecutable>> compile(const TracedModule& module,
                                                             const CompileOptions& options) = 0;
  virtual Result<void*> allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr) = 0;
  virtual Status copy_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual Status copy_to_host(void* dst, const void* src, size_t bytes) = 0;
};

}  // namespace radix
