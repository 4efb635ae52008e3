// What the CPU backend's prefetch passes (radix-prefetch-next-row, -tile,
// -batch) share: following a read's subviews back to the buffer they
// slice, one prefetch per cache line of a run of elements, and telling
// compute-bound loops (also for radix-streaming-stores), and finding a packed
// matmul's register tile (also for radix-accumulators-from-fill).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace radix {

inline constexpr int64_t kCacheLine = 64;
inline constexpr uint32_t kLocalityL2 = 2;  // memref.prefetch's locality hint for L2 (prefetcht1)
inline constexpr uint32_t kLocalityL1 = 3;  // and for L1 (prefetcht0)

// A subview the prefetch passes can see through: same rank as its source,
// unit strides (its offsets simply add to the indices read through it).
bool is_plain_slice(mlir::memref::SubViewOp sv);

// `indices` read through a chain of plain slices, in the buffer the chain
// starts from: each subview's offsets (one list per subview) added, ops
// created at `b`.
llvm::SmallVector<mlir::Value> add_slice_offsets(mlir::OpBuilder& b, mlir::Location loc,
                                                 const std::vector<llvm::SmallVector<mlir::OpFoldResult>>& offsets,
                                                 llvm::SmallVector<mlir::Value> indices);

// Prefetches `elems` elements of `elem_bytes` each of `buffer` from `idx`
// along its last (unit-stride) dim: one memref.prefetch per cache line.
void prefetch_lines(mlir::OpBuilder& b, mlir::Location loc, mlir::Value buffer, llvm::SmallVector<mlir::Value> idx,
                    int64_t elems, int64_t elem_bytes, bool is_write, uint32_t locality);

// Whether `op` (a loop) evaluates a transcendental function (exp, log,
// tanh, erf, sin, pow, ...) anywhere inside: tens of instructions per
// vector once approximated, so the loop is compute-bound and the memory
// system idles.
bool computes_transcendentals(mlir::Operation* op);

// The K loop of a packed matmul's panel loop: the body's first scf.for
// carrying one value (the accumulator tile); none when there is no such loop.
mlir::scf::ForOp acc_k_loop(mlir::scf::ForOp panels);

// A packed matmul's register tile in its panel loop (marked
// radix.acc_tile_loop by the schedule): the K loop (acc_k_loop) and the
// read of C that value starts from, on the else branch of the scf.if
// radix-accumulators-from-fill may have put there; none when the loop holds
// no such tile.
struct AccTile {
  mlir::scf::ForOp k_loop;
  mlir::vector::TransferReadOp load;
};
std::optional<AccTile> acc_tile(mlir::scf::ForOp panels);

}  // namespace radix
