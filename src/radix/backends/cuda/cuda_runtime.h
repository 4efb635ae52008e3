// What compiled CUDA programs call on the host, and the memory they run on.
//
// The host half of a program is native code (LLVM ORC, as on the CPU) whose
// gpu.launch_func ops gpu-to-llvm lowered to MLIR's runtime-wrapper ABI
// (mgpuModuleLoadJIT, mgpuLaunchKernel, ...). Debian ships no wrapper
// library, and Radix wants its own streams and errors anyway, so this file
// implements that ABI over the driver table of cuda_driver.h and registers
// it as host symbols, together with:
//   radix_cuda_alloc / radix_cuda_free   temporaries (what memref.alloc /
//                                        dealloc call; see the "host" stage):
//                                        all of a run's are released when it
//                                        ends, so a traced loop's temporaries
//                                        add up over its iterations
//   radix_cuda_host_sync                 drains the stream before the host
//                                        reads device memory
//
// Memory: device buffers are CUDA managed memory, so the few host-side
// reads a program needs (a loop bound, a custom call on the host) are
// correct once the stream has drained; kernels see device-resident pages.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <vector>

#include "radix/core/status.h"

namespace radix::cuda {

// Registers the functions above as host symbols (once).
void register_runtime_symbols();

// One run of a program on `stream`: while alive on this thread, the
// program's launches go to `stream`, its temporaries are collected in
// `pending` (released when the run ends, after the stream drained), and the
// first failure of any runtime call is kept. finish() synchronizes and
// returns that failure (or the stream's).
class RunScope {
 public:
  RunScope(int device, CUstream stream);
  ~RunScope();
  Status finish();
  RunScope(const RunScope&) = delete;
  RunScope& operator=(const RunScope&) = delete;

  int device() const { return device_; }
  CUstream stream() const { return stream_; }
  // A run that failed skips its remaining launches.
  bool failed() const { return !error_.ok(); }
  void fail(Status st) {
    if (error_.ok()) error_ = std::move(st);
  }
  void defer_free(void* p) { pending_.push_back(p); }

 private:
  RunScope* outer_;
  int device_;
  CUstream stream_;
  std::vector<void*> pending_;
  Status error_;
  bool finished_ = false;
};

// The stream of the run in progress on this thread (null outside a run).
CUstream current_stream();

// Device memory: managed, pooled (freed blocks of a size are reused).
Result<void*> allocate_device(int device, size_t bytes);
void free_device(void* p, size_t bytes);

// Records `st` as the failure of the run (or of the load) in progress on
// this thread, if it is the first.
void record_error(Status st);
// The failure recorded outside any run (by a module load), cleared.
Status take_load_error();

}  // namespace radix::cuda
