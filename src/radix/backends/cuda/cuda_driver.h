// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"), so
// that libradix builds and runs on machines without a GPU or a driver. Only
// the entry points the CUDA backend uses are resolved; every call's error is
// mapped to a Status carrying the CUDA error's name (CUDA_ERROR_...).
//
// Thread-safety: driver() is created once; the table is read-only after.
#pragma once

#include <cuda.h>

#include <string>

#include "radix/core/status.h"

namespace radix::cuda {

struct Driver {
  // Resolved entry points (the _v2 ABI names where the header maps them).
  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuDriverGetVersion) DriverGetVersion = nullptr;
  decltype(&::cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuDeviceTotalMem) DeviceTotalMem = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuCtxGetCurrent) CtxGetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) CtxSynchronize = nullptr;
  decltype(&::cuMemAllocManaged) MemAllocManaged = nullptr;
  decltype(&::cuMemAlloc) MemAlloc = nullptr;
  decltype(&::cuMemFree) MemFree = nullptr;
  decltype(&::cuMemGetInfo) MemGetInfo = nullptr;
  decltype(&::cuMemHostAlloc) MemHostAlloc = nullptr;
  decltype(&::cuMemFreeHost) MemFreeHost = nullptr;
  decltype(&::cuMemcpy) Memcpy = nullptr;
  decltype(&::cuMemcpyAsync) MemcpyAsync = nullptr;
  decltype(&::cuMemsetD32Async) MemsetD32Async = nullptr;
  decltype(&::cuStreamCreate) StreamCreate = nullptr;
  decltype(&::cuStreamDestroy) StreamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleLoadDataEx) ModuleLoadDataEx = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;

  // Why the driver is unusable ("" when it loaded and cuInit succeeded):
  // libcuda.so.1 missing, a symbol missing, or cuInit's error.
  std::string unavailable;
};

// The process's driver table (loaded and cuInit'ed on first use).
const Driver& driver();

// `r` as a Status: OK for CUDA_SUCCESS, else kRuntimeError
// "cuda: <what>: CUDA_ERROR_<NAME> (<description>)".
Status check(CUresult r, const char* what);

// One device the driver sees.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;  // compute capability
  int multiprocessors = 0;
  int clock_khz = 0;               // SM clock
  size_t memory_bytes = 0;
  bool managed_memory = false;     // cuMemAllocManaged supported
  // The host may touch managed memory while kernels run (Linux on H100 /
  // H200: yes; WSL, some vGPUs: no, so host reads drain the whole device).
  bool concurrent_managed_access = false;
  std::string sm() const { return "sm_" + std::to_string(sm_major) + std::to_string(sm_minor); }
};

// Device `ordinal`, with its primary context retained and made current on
// the calling thread; a clear "no CUDA device" error naming why when the
// driver is missing or sees no device.
Result<DeviceInfo> open_device(int ordinal);
// Makes device `ordinal`'s primary context current on the calling thread
// (cheap after the first call on a thread).
Status make_current(int ordinal);

}  // namespace radix::cuda
