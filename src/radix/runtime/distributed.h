// Distributed runs: one process per device, started by MPI (Debian's
// OpenMPI; `mpirun -np 4 prog`, or `mpirun --host a,b ...` across hosts).
// A program traced on a Mesh of N devices runs as N processes; device d is
// MPI rank d, and the collectives the partitioner inserts (all-reduce,
// all-gather) are MPI calls inside the compiled code.
//
// MPI starts on first use (compiling or running a sharded program, or any
// function below) and stops at process exit. A process not started by
// mpirun is a job of one rank. MPI's default error handler applies: a rank
// that dies or fails a collective ends the whole job (mpirun reports which),
// so no rank waits forever on a dead peer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "radix/core/status.h"

namespace radix::distributed {

// Starts MPI (thread level "funneled": collectives run on the calling
// thread, the executables' worker threads never call MPI). Idempotent.
Status init();
// This process's rank and the job's size (starting MPI if needed).
int rank();
int size();
// Checks that the job has exactly `devices` ranks; the error says how to
// start it ("mpirun -np 4 ...").
Status require_size(long long devices, const char* what);

// Every rank's `bytes` from `send`, concatenated in rank order into `recv`
// (size() * bytes), on every rank.
Status all_gather(const void* send, void* recv, size_t bytes);
// Waits until every rank arrives.
Status barrier();

// Codes the compiled collectives pass to the runtime (CPU backend's
// radix-collectives-to-mpi).
enum class MpiType : int64_t { kF32 = 0, kF64 = 1, kI32 = 2, kI64 = 3 };
enum class MpiReduction : int64_t { kSum = 0, kMax = 1, kMin = 2, kProduct = 3 };

}  // namespace radix::distributed
