// The CPU backend: lowers traced modules with the named pipelines of
// compiler/pipelines.h, JIT-compiles them with LLVM ORC (mlir::ExecutionEngine)
// for the host CPU, and runs them on 64-byte-aligned host memory.
#pragma once

#include <memory>

#include "radix/runtime/backend.h"

namespace radix {

std::shared_ptr<Backend> make_cpu_backend();

}  // namespace radix
