// The CPU backend's own MLIR passes (each named, so it can appear in
// pipelines and dumps).
#pragma once

#include <memory>
#include <vector>

namespace mlir {
class Operation;
class Pass;
}  // namespace mlir

namespace radix {

// "radix-math-approximation": f32 exp / log / tanh / ... become polynomial
// approximations that stay vectorized (instead of one libm call per lane).
std::unique_ptr<mlir::Pass> create_math_approximation_pass();

// "radix-materialize-reduction-indices": linalg.index of a reduction loop
// becomes an iota input operand, so that reduction tiling (which does not
// offset such indices in MLIR 22) cannot scramble them.
std::unique_ptr<mlir::Pass> create_materialize_reduction_indices_pass();

// "radix-flat-fills": a fill of a contiguous buffer of rank >= 2 fills its
// one-dimensional view (one memset, not a row-by-row loop nest that LLVM
// unrolls into one huge block).
std::unique_ptr<mlir::Pass> create_flat_fills_pass();

// "radix-strided-copies-to-loops": memref.copy between non-contiguous
// buffers becomes linalg.copy (loops) instead of a runtime-library call;
// with {every-copy=true}, every copy (the CUDA backend: a kernel).
std::unique_ptr<mlir::Pass> create_strided_copies_to_loops_pass();

// "radix-fuse-elementwise": linalg elementwise fusion between generics only
// (upstream's pass also turns named matmuls fed by a reshape into generics).
std::unique_ptr<mlir::Pass> create_fuse_elementwise_pass();

// "radix-scalar-vector-transfers": one-element vector transfers become
// memref.load / memref.store (a 0-D read of a strided buffer does not lower).
std::unique_ptr<mlir::Pass> create_scalar_vector_transfers_pass();

// "radix-half-transposes-as-integers": bf16 / f16 vector transposes move
// i16 lanes (bitcasts around them): AVX2 has no 16-bit float vectors.
std::unique_ptr<mlir::Pass> create_half_transposes_pass();

// "radix-stack-small-buffers": small static temporaries that live within one
// loop iteration (a row's max / sum, a row temporary) become stack buffers
// hoisted out of sequential loops (never out of a parallel loop's body).
std::unique_ptr<mlir::Pass> create_stack_small_buffers_pass();

// The marks the CPU schedule's transform script leaves on loops for the
// passes after bufferization (each pass takes and removes its own):
// row-fused groups' row loops (radix-prefetch-next-row), dot-product tiles'
// reduction loops (radix-prefetch-next-tile), batched products' reduction
// loops (radix-prefetch-next-batch), the packed matmul's panel loops
// (radix-accumulators-from-fill, then radix-prefetch-next-tile: the next
// accumulator tile), and on AVX-512 the same loops again for
// radix-prefetch-next-tile to fetch the next row tile of A.
inline constexpr const char* kRowLoopMark = "radix.row_loop";
inline constexpr const char* kStreamLoopMark = "radix.stream_loop";
inline constexpr const char* kBatchStreamLoopMark = "radix.batch_stream_loop";
inline constexpr const char* kAccTileLoopMark = "radix.acc_tile_loop";
inline constexpr const char* kPrefetchARowsMark = "radix.prefetch_a_rows";

// "radix-accumulators-from-fill": the packed matmul's register tiles (panel
// loops marked by the schedule) take their accumulators in the first K
// block from the value C was filled with instead of loading them from C.
std::unique_ptr<mlir::Pass> create_accumulators_from_fill_pass();

// "radix-prefetch-next-row": in row-fused loops (marked by the schedule),
// the compute-heavy column loop prefetches the next row.
std::unique_ptr<mlir::Pass> create_prefetch_next_row_pass();

// "radix-prefetch-next-tile": in dot-product tiles' reduction loops (marked
// by the schedule), each read of a block of weight rows prefetches the same
// columns of the next rows.
std::unique_ptr<mlir::Pass> create_prefetch_next_tile_pass();

// "radix-prefetch-next-batch": in batched products' reduction loops (marked
// by the schedule), reads of a per-batch slab of a few KiB (a head's chunk
// of the KV cache) prefetch the same elements of the next batch.
std::unique_ptr<mlir::Pass> create_prefetch_next_batch_pass();

// "radix-streaming-stores{min-bytes=N}": outputs of at least N bytes that a
// function only writes are stored with non-temporal (cache-bypassing) vector
// stores where the address is aligned; N = 0 turns it off.
std::unique_ptr<mlir::Pass> create_streaming_stores_pass();
// The mark of the sfence it puts at the end of a parallel loop's body:
// radix-omp-static-chunks moves it after the thread's share of the
// iterations (one fence per thread, not per iteration).
inline constexpr const char* kThreadFenceMark = "radix.thread_fence";

// "radix-int8-dot-kernels": the integer-activation quantized products the
// schedule planned for integer kernels (radix.int8_kernel) become loops of
// x86 byte dot products (AVX2 vpmaddubsw + vpmaddwd, or VNNI vpdpbusd).
std::unique_ptr<mlir::Pass> create_int8_dot_kernels_pass();

// "radix-bf16-dot-kernels": products of f32 activations and bf16 weights the
// schedule planned for bf16 kernels (radix.bf16_kernel) become loops of
// AVX-512 BF16 vdpbf16ps (x rounded to bf16 once per product).
std::unique_ptr<mlir::Pass> create_bf16_dot_kernels_pass();

// "radix-merge-foralls": neighbouring parallel tile loops that touch no
// buffer the other writes become one loop (one OpenMP fork / join).
std::unique_ptr<mlir::Pass> create_merge_foralls_pass();

// "radix-lower-alloca-scopes": memref.alloca_scope becomes stack save /
// restore around its inlined body (before scf-to-cf splits the body).
std::unique_ptr<mlir::Pass> create_lower_alloca_scopes_pass();

// "radix-outputs-in-place": outputs computed in their destination buffers
// (no copy into an empty tensor, no buffer of their own copied out).
std::unique_ptr<mlir::Pass> create_outputs_in_place_pass();

// "radix-fills-into-foralls": a parallel loop's output that starts as a
// constant is filled slice by slice by the iterations that write it.
std::unique_ptr<mlir::Pass> create_fills_into_foralls_pass();

// "radix-omp-static-chunks": plain OpenMP worksharing loops (from the
// schedule's scf.forall) become scf.for over the thread's static share of
// the iterations, without libomp's static-init calls and inner barrier.
std::unique_ptr<mlir::Pass> create_omp_static_chunks_pass();

// "radix-collectives-to-mpi": shard.all_reduce / shard.all_gather become
// MPI_Allreduce / MPI_Allgather through the runtime's wrappers (see the
// pass for why not convert-shard-to-mpi's all_reduce).
std::unique_ptr<mlir::Pass> create_collectives_to_mpi_pass();

// "radix-custom-calls": custom calls (trace/ops_custom_call.h) become calls
// into the runtime's FFI with a per-site descriptor; an unregistered target
// is an error naming it.
std::unique_ptr<mlir::Pass> create_custom_calls_pass();

// The ops under `root` (itself included) that carry the unit attribute
// `mark` the schedule left for a later pass, in walk order; take_ also
// removes the marks (marked_ops leaves them for a later pass).
std::vector<mlir::Operation*> marked_ops(mlir::Operation* root, const char* mark);
std::vector<mlir::Operation*> take_marked_ops(mlir::Operation* root, const char* mark);

// Registers the passes above (and the shared ones) with MLIR's textual
// pipeline parser (idempotent).
void register_cpu_passes();

}  // namespace radix
