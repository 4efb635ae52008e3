// The CUDA backend's own MLIR passes (named, so they appear in pipelines
// and dumps).
#pragma once

#include <memory>

namespace mlir { class Pass; }

namespace radix {

// "radix-gpu-wrap-scalar-ops": a linalg op with no loops (0-d, after unit
// dims were folded) becomes a one-thread kernel before the loops are made:
// its straight-line body would otherwise run on the host.
std::unique_ptr<mlir::Pass> create_wrap_scalar_ops_pass();

// "radix-gpu-tile-matmul": matmuls of 32 or more rows and columns (f32,
// f16, bf16) as kernels with shared-memory tiles (see tile_matmul_pass.cc).
std::unique_ptr<mlir::Pass> create_tile_matmul_pass();

// "radix-gpu-parallel-first": a linalg.generic whose reduction loop comes
// before a parallel one (a sum over the first axis) is interchanged so that
// its parallel loops are outermost and become one kernel's threads.
std::unique_ptr<mlir::Pass> create_parallel_first_pass();

// "radix-gpu-map": parallel loops -> linearized gpu.launch kernels; other
// host-level buffer work -> one-thread kernels; a host sync before host
// reads of device memory (see gpu_map_pass.cc).
std::unique_ptr<mlir::Pass> create_gpu_map_pass();

// Registers the passes above (idempotent).
void register_cuda_passes();

}  // namespace radix
