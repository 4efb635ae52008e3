#include "radix/runtime/distributed.h"

// The C API only: OpenMPI's mpi.h otherwise pulls in its deprecated C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "radix/runtime/host_symbols.h"

namespace radix::distributed {

namespace {
std::mutex g_mu;

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Status mpi_error(const char* what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return runtime_error(std::string("MPI: ") + what + " failed: " + std::string(text, static_cast<size_t>(len)));
}

// A grid of up to 4 axes (unused ones 1) and a mask of some of its axes.
using GroupKey = std::array<int64_t, 5>;  // d0, d1, d2, d3, axes_mask

// The communicator of the ranks that share every coordinate outside the
// masked axes on the grid (row-major: rank = multi-index), ordered by their
// coordinates along the masked axes. Split once per key (the compiled
// collectives call this on every run: no allocation once split).
MPI_Comm group_comm(const GroupKey& key) {
  static auto* comms = new std::map<GroupKey, MPI_Comm>();
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto it = comms->find(key); it != comms->end()) return it->second;
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  const int64_t mask = key[4];
  int64_t color = 0, order = 0, rest = r;
  std::array<int64_t, 4> coord{};
  for (size_t i = 4; i-- > 0;) {
    coord[i] = rest % key[i];
    rest /= key[i];
  }
  for (size_t i = 0; i < 4; ++i) {
    if ((mask >> i) & 1) order = order * key[i] + coord[i];
    else color = color * key[i] + coord[i];
  }
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color), static_cast<int>(order), &comm);
  (*comms)[key] = comm;
  return comm;
}
}  // namespace

// Called by compiled code (shard.all_gather, lowered by the CPU backend):
// gathers `bytes` from every rank of the group spanning the grid axes in
// `axes_mask` (bit i: axis i) of the grid d0 x d1 x d2 x d3 (unused axes 1),
// concatenated in group order into `recv`.
extern "C" void radix_mpi_all_gather(int64_t send, int64_t recv, int64_t bytes, int64_t d0, int64_t d1, int64_t d2,
                                     int64_t d3, int64_t axes_mask) {
  MPI_Comm comm = group_comm({d0, d1, d2, d3, axes_mask});
  MPI_Allgather(reinterpret_cast<const void*>(send), static_cast<int>(bytes), MPI_BYTE, reinterpret_cast<void*>(recv),
                static_cast<int>(bytes), MPI_BYTE, comm);
}

// Called by compiled code (shard.all_reduce): `count` elements of MpiType
// `type` from `send` reduced (MpiReduction `op`) over the group spanning the
// grid axes in `axes_mask`, into `recv`, on every rank of the group.
extern "C" void radix_mpi_all_reduce(int64_t send, int64_t recv, int64_t count, int64_t type, int64_t op, int64_t d0,
                                     int64_t d1, int64_t d2, int64_t d3, int64_t axes_mask) {
  MPI_Comm comm = group_comm({d0, d1, d2, d3, axes_mask});
  MPI_Datatype t = MPI_FLOAT;
  switch (static_cast<MpiType>(type)) {
    case MpiType::kF32: t = MPI_FLOAT; break;
    case MpiType::kF64: t = MPI_DOUBLE; break;
    case MpiType::kI32: t = MPI_INT32_T; break;
    case MpiType::kI64: t = MPI_INT64_T; break;
  }
  MPI_Op o = MPI_SUM;
  switch (static_cast<MpiReduction>(op)) {
    case MpiReduction::kSum: o = MPI_SUM; break;
    case MpiReduction::kMax: o = MPI_MAX; break;
    case MpiReduction::kMin: o = MPI_MIN; break;
    case MpiReduction::kProduct: o = MPI_PROD; break;
  }
  MPI_Allreduce(reinterpret_cast<const void*>(send), reinterpret_cast<void*>(recv), static_cast<int>(count), t, o, comm);
}

Status init() {
  static const Status started = [] {
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) {
      int provided = 0;
      if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS)
        return mpi_error("MPI_Init_thread", rc);
      std::atexit(finalize_at_exit);
    }
    (void)register_host_symbol("radix_mpi_all_gather", reinterpret_cast<void*>(&radix_mpi_all_gather));
    (void)register_host_symbol("radix_mpi_all_reduce", reinterpret_cast<void*>(&radix_mpi_all_reduce));
    return Status();
  }();
  return started;
}

int rank() {
  if (!init().ok()) return 0;
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int size() {
  if (!init().ok()) return 1;
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

Status require_size(long long devices, const char* what) {
  RADIX_RETURN_IF_ERROR(init());
  const int n = size();
  if (n == devices) return Status();
  return invalid_argument(std::string(what) + " runs on " + std::to_string(devices) +
                          " devices (one MPI process each), but this job has " + std::to_string(n) +
                          " process(es): start it with `mpirun -np " + std::to_string(devices) + " ...`");
}

Status all_gather(const void* send, void* recv, size_t bytes) {
  RADIX_RETURN_IF_ERROR(init());
  if (int rc = MPI_Allgather(send, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE,
                             MPI_COMM_WORLD);
      rc != MPI_SUCCESS)
    return mpi_error("MPI_Allgather", rc);
  return Status();
}

Status barrier() {
  RADIX_RETURN_IF_ERROR(init());
  if (int rc = MPI_Barrier(MPI_COMM_WORLD); rc != MPI_SUCCESS) return mpi_error("MPI_Barrier", rc);
  return Status();
}

}  // namespace radix::distributed
