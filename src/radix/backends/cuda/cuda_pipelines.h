// The CUDA backend's lowering, as named stages (each one dumpable):
//
//   custom-calls  radix-custom-calls (as on the CPU)
//   dps           results written into caller-allocated outputs
//   fuse          elementwise fusion, unit dims folded
//   bufferize     one-shot bufferization, deallocation
//   gpu-map       linalg -> parallel loops -> kernels (radix-gpu-map), kernels
//                 outlined into gpu.modules
//   nvvm          target attached (sm, libdevice), kernels to the NVVM dialect
//   ptx           kernels serialized to PTX by LLVM's NVPTX target
//                 (gpu.binary); each kernel's PTX is also dumpable as a file
//   host          host code to the LLVM dialect; launches become calls of the
//                 runtime-wrapper ABI that cuda_runtime.h implements
//
// Then the backend emits the host object ("llvm-ir" dumps its LLVM IR); the
// PTX travels inside it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "radix/backends/cuda/cuda_options.h"
#include "radix/compiler/stage_dumper.h"
#include "radix/core/status.h"

namespace mlir { class ModuleOp; }

namespace radix {

struct CudaLowering {
  std::string sm;          // resolved target, "sm_90"
  int opt_level = 3;       // NVPTX optimization level
  std::string libdevice;   // path of libdevice.10.bc ("" if not found)
  bool tile_matmul = true; // CudaOptions::tile_matmul
};

// Lowers `module` in place from traced IR to the LLVM dialect with embedded
// PTX. Kernels that call math functions need libdevice: without it, a clear
// error naming the file looked for.
Status run_cuda_lowering(mlir::ModuleOp module, const CudaLowering& lowering, StageDumper& dumper,
                         const std::function<void(std::string_view stage, double ms)>& on_stage = {},
                         std::vector<std::string>* kernel_names = nullptr);

// Every stage name DiagnosticOptions::dump accepts for CUDA, in order.
const std::vector<std::string>& cuda_stage_names();

// The libdevice bitcode of the CUDA toolkit ($CUDA_HOME, $CUDA_PATH,
// /usr/local/cuda), or "" if none.
std::string find_libdevice();

// "sm_90" from "sm_90" / "90" / "" (the default); an error for anything
// else, naming it.
Result<std::string> resolve_sm(const std::string& target, const std::string& device_sm);

}  // namespace radix
