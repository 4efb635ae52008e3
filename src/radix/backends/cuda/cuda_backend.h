// The CUDA backend: NVIDIA GPUs through MLIR's gpu dialect, LLVM's NVPTX
// target and the CUDA driver API (loaded at run time; see cuda_driver.h). It
// registers itself as "cuda" (device 0); Platform::cuda(ordinal) opens
// others.
#pragma once

#include <memory>

#include "radix/runtime/backend.h"

namespace radix {

// The CUDA backend for device `ordinal` (one instance per ordinal, shared).
// Creating it needs no device: compile_only() works without one; everything
// that runs code or touches memory fails with "no CUDA device: ..." then.
std::shared_ptr<Backend> cuda_backend(int ordinal);

}  // namespace radix
