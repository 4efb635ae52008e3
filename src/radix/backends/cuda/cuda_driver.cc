#include "radix/backends/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>
#include <vector>

namespace radix::cuda {

namespace {
// The symbol name an entry point has in libcuda: cuda.h maps several to
// versioned ABI names (cuMemAlloc -> cuMemAlloc_v2), so the macro is
// expanded before it is stringized.
#define RADIX_CU_NAME2(x) #x
#define RADIX_CU_NAME(x) RADIX_CU_NAME2(x)

Driver* load() {
  auto* d = new Driver();
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    d->unavailable = std::string("the NVIDIA driver's libcuda.so.1 cannot be loaded (") + (e ? e : "dlopen failed") + ")";
    return d;
  }
  std::vector<std::string> missing;
  auto get = [&](auto& slot, const char* name) {
    void* p = dlsym(lib, name);
    if (!p) missing.emplace_back(name);
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
  };
#define RADIX_CU_GET(field, fn) get(d->field, RADIX_CU_NAME(fn))
  RADIX_CU_GET(Init, cuInit);
  RADIX_CU_GET(DriverGetVersion, cuDriverGetVersion);
  RADIX_CU_GET(DeviceGetCount, cuDeviceGetCount);
  RADIX_CU_GET(DeviceGet, cuDeviceGet);
  RADIX_CU_GET(DeviceGetName, cuDeviceGetName);
  RADIX_CU_GET(DeviceGetAttribute, cuDeviceGetAttribute);
  RADIX_CU_GET(DeviceTotalMem, cuDeviceTotalMem);
  RADIX_CU_GET(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
  RADIX_CU_GET(CtxSetCurrent, cuCtxSetCurrent);
  RADIX_CU_GET(CtxGetCurrent, cuCtxGetCurrent);
  RADIX_CU_GET(CtxSynchronize, cuCtxSynchronize);
  RADIX_CU_GET(MemAllocManaged, cuMemAllocManaged);
  RADIX_CU_GET(MemAlloc, cuMemAlloc);
  RADIX_CU_GET(MemFree, cuMemFree);
  RADIX_CU_GET(MemGetInfo, cuMemGetInfo);
  RADIX_CU_GET(MemHostAlloc, cuMemHostAlloc);
  RADIX_CU_GET(MemFreeHost, cuMemFreeHost);
  RADIX_CU_GET(Memcpy, cuMemcpy);
  RADIX_CU_GET(MemcpyAsync, cuMemcpyAsync);
  RADIX_CU_GET(MemsetD32Async, cuMemsetD32Async);
  RADIX_CU_GET(StreamCreate, cuStreamCreate);
  RADIX_CU_GET(StreamDestroy, cuStreamDestroy);
  RADIX_CU_GET(StreamSynchronize, cuStreamSynchronize);
  RADIX_CU_GET(ModuleLoadData, cuModuleLoadData);
  RADIX_CU_GET(ModuleLoadDataEx, cuModuleLoadDataEx);
  RADIX_CU_GET(ModuleUnload, cuModuleUnload);
  RADIX_CU_GET(ModuleGetFunction, cuModuleGetFunction);
  RADIX_CU_GET(LaunchKernel, cuLaunchKernel);
  RADIX_CU_GET(GetErrorName, cuGetErrorName);
  RADIX_CU_GET(GetErrorString, cuGetErrorString);
#undef RADIX_CU_GET
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    d->unavailable = "the CUDA driver libcuda.so.1 is too old: it lacks " + list;
    return d;
  }
  if (CUresult r = d->Init(0); r != CUDA_SUCCESS) {
    const char* name = nullptr;
    d->GetErrorName(r, &name);
    d->unavailable = std::string("cuInit failed with ") + (name ? name : std::to_string(r).c_str()) +
                     (r == CUDA_ERROR_NO_DEVICE ? " (no CUDA device)" : "");
  }
  return d;
}
}  // namespace

const Driver& driver() {
  static const Driver* d = load();
  return *d;
}

Status check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return Status();
  const Driver& d = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.GetErrorName) d.GetErrorName(r, &name);
  if (d.GetErrorString) d.GetErrorString(r, &text);
  return runtime_error(std::string("cuda: ") + what + ": " + (name ? name : "CUDA error " + std::to_string(r)) +
                       (text ? std::string(" (") + text + ")" : ""));
}

namespace {
struct Opened {
  CUcontext ctx = nullptr;
  DeviceInfo info;
  Status status;
};
std::mutex g_mu;
std::vector<Opened>& opened() {
  static auto* v = new std::vector<Opened>(64);
  return *v;
}
thread_local int t_current = -1;
}  // namespace

Result<DeviceInfo> open_device(int ordinal) {
  const Driver& d = driver();
  if (!d.unavailable.empty()) return Status(ErrorCode::kNotFound, "no CUDA device: " + d.unavailable);
  int count = 0;
  RADIX_RETURN_IF_ERROR(check(d.DeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0) return Status(ErrorCode::kNotFound, "no CUDA device: the driver sees none");
  if (ordinal < 0 || ordinal >= count || ordinal >= 64)
    return invalid_argument("no CUDA device " + std::to_string(ordinal) + ": the driver sees " + std::to_string(count));
  std::lock_guard<std::mutex> lock(g_mu);
  Opened& o = opened()[static_cast<size_t>(ordinal)];
  if (!o.ctx && o.status.ok()) {
    o.status = [&]() -> Status {
      CUdevice dev;
      RADIX_RETURN_IF_ERROR(check(d.DeviceGet(&dev, ordinal), "cuDeviceGet"));
      char name[256] = {0};
      RADIX_RETURN_IF_ERROR(check(d.DeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName"));
      DeviceInfo& i = o.info;
      i.ordinal = ordinal;
      i.name = name;
      auto attr = [&](CUdevice_attribute a, int* out) { return check(d.DeviceGetAttribute(out, a, dev), "cuDeviceGetAttribute"); };
      RADIX_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &i.sm_major));
      RADIX_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &i.sm_minor));
      RADIX_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &i.multiprocessors));
      (void)attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &i.clock_khz);  // absent on some drivers: only for reports
      int managed = 0;
      RADIX_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, &managed));
      i.managed_memory = managed != 0;
      int concurrent = 0;
      RADIX_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, &concurrent));
      i.concurrent_managed_access = concurrent != 0;
      if (!i.managed_memory)
        return Status(ErrorCode::kNotFound, "CUDA device " + std::to_string(ordinal) + " (" + i.name +
                                                ") has no managed memory, which Radix's CUDA backend needs");
      RADIX_RETURN_IF_ERROR(check(d.DeviceTotalMem(&i.memory_bytes, dev), "cuDeviceTotalMem"));
      RADIX_RETURN_IF_ERROR(check(d.DevicePrimaryCtxRetain(&o.ctx, dev), "cuDevicePrimaryCtxRetain"));
      return Status();
    }();
  }
  if (!o.status.ok()) return o.status;
  if (t_current != ordinal) {
    RADIX_RETURN_IF_ERROR(check(d.CtxSetCurrent(o.ctx), "cuCtxSetCurrent"));
    t_current = ordinal;
  }
  return o.info;
}

Status make_current(int ordinal) {
  if (t_current == ordinal) return Status();
  auto r = open_device(ordinal);
  return r.ok() ? Status() : r.status();
}

}  // namespace radix::cuda
