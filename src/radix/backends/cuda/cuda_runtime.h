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
// Radix keeps its managed allocations (live and pooled) under the device's
// memory less a reserve: oversubscribed managed memory can hang a GPU.
//
// Errors: the first failure of a run (a launch, an allocation, a kernel
// load) ends the run at once — the runtime jumps back to RunScope::invoke,
// out of the generated code, which holds no resources of its own — and
// Executable::call returns it.
#pragma once

#include <cuda.h>

#include <csetjmp>
#include <cstddef>
#include <vector>

#include "radix/core/status.h"

namespace radix::cuda {

// Registers the functions above as host symbols (once).
void register_runtime_symbols();

// One run of a program on `stream` (device `device`, current on this
// thread): while alive, the program's launches go to `stream` and its
// temporaries are collected (released when the run ends, after the stream
// drained). `sync_whole_device`: a host read drains the whole device, not
// only the stream (a device without concurrent managed access).
class RunScope {
 public:
  RunScope(int device, CUstream stream, bool sync_whole_device);
  ~RunScope();
  RunScope(const RunScope&) = delete;
  RunScope& operator=(const RunScope&) = delete;

  // Calls entry(args); a failure inside returns here early (see Errors).
  void invoke(void (*entry)(void**), void** args);
  // Drains the stream, releases the temporaries; the run's first failure
  // (or the stream's) or OK.
  Status finish();

  int device() const { return device_; }
  CUstream stream() const { return stream_; }
  bool sync_whole_device() const { return sync_whole_device_; }
  bool failed() const { return !error_.ok(); }
  void fail(Status st) {
    if (error_.ok()) error_ = std::move(st);
  }
  void defer_free(void* p) { pending_.push_back(p); }
  // Leaves the generated code for invoke() (only while inside it).
  [[noreturn]] void abort();
  bool in_program() const { return in_program_; }

 private:
  RunScope* outer_;
  int device_;
  CUstream stream_;
  bool sync_whole_device_;
  std::vector<void*> pending_;
  Status error_;
  bool finished_ = false;
  bool in_program_ = false;
  std::jmp_buf jump_;
};

// The stream of the run in progress on this thread (null outside a run).
CUstream current_stream();

// Device memory: managed, pooled per device (freed blocks of a size are
// reused).
Result<void*> allocate_device(int device, size_t bytes);
void free_device(void* p);

// For a custom call's execution context during a run: device memory that
// lives until the run ends (release is a no-op; the run frees it).
void* run_alloc(size_t bytes);
void run_release(void* p);

// Records `st` as the failure of the run in progress on this thread, or of
// the load in progress (no run), if it is the first.
void record_error(Status st);
// The failure recorded outside any run (by a module load), cleared.
Status take_load_error();

}  // namespace radix::cuda
