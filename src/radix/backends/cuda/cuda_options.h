// CudaOptions: the CUDA backend's own code-generating options. They live in
// CodegenOptions::cuda (see compiler/compile_options.h) and so are part of
// the executable-cache key.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <string>

namespace radix {

struct CudaOptions {
  // The GPU architecture kernels are generated for, "sm_<major><minor>"
  // ("sm_80", "sm_90", ...). Empty: the device's own, or sm_90 (an H100 /
  // H200) when compiling on a machine without a device.
  std::string target;
  // Matmuls of 32 or more rows and columns (f32, f16, bf16) as
  // shared-memory tiled kernels (64 x 64 tiles, f32 sums); off: one thread
  // per output, as every other op.
  bool tile_matmul = true;
};

}  // namespace radix
