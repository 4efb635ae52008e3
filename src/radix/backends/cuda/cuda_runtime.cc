#include "radix/backends/cuda/cuda_runtime.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

#include "radix/backends/cuda/cuda_driver.h"
#include "radix/runtime/host_symbols.h"

namespace radix::cuda {

namespace {

thread_local RunScope* t_run = nullptr;
thread_local Status t_load_error;
thread_local CUstream t_fallback_stream = nullptr;  // launches outside a run (none expected)

// ---- The pool of managed blocks ---------------------------------------------
// Blocks are handed out again only after the run that freed them has
// drained its stream (RunScope releases its pending list after the sync), so
// a block is never reused while a kernel still reads it.
constexpr size_t kPoolCap = size_t{4} << 30;  // cached free bytes, at most
constexpr size_t kGranule = 256;              // the driver's own alignment

struct Pool {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;
  std::unordered_map<void*, size_t> sizes;  // every live or cached block
  size_t cached = 0;
};
Pool& pool() {
  static auto* p = new Pool();  // outlives static destructors of other objects
  return *p;
}

size_t round_up(size_t bytes) { return (std::max<size_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule; }

void release_block(void* p) {
  if (!p) return;
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  auto it = pl.sizes.find(p);
  if (it == pl.sizes.end()) return;  // not ours
  if (pl.cached + it->second > kPoolCap) {
    pl.sizes.erase(it);
    driver().MemFree(reinterpret_cast<CUdeviceptr>(p));
    return;
  }
  pl.cached += it->second;
  pl.free_blocks.emplace(it->second, p);
}

// ---- The runtime-wrapper ABI gpu-to-llvm calls ------------------------------
extern "C" void* radix_mgpuModuleLoadJIT(void* data, int opt_level) {
  CUmodule m = nullptr;
  CUjit_option opts[1] = {CU_JIT_OPTIMIZATION_LEVEL};
  void* vals[1] = {reinterpret_cast<void*>(static_cast<intptr_t>(opt_level < 0 ? 4 : std::min(opt_level, 4)))};
  if (Status st = check(driver().ModuleLoadDataEx(&m, data, 1, opts, vals), "loading a kernel's PTX (cuModuleLoadDataEx)"); !st.ok())
    record_error(std::move(st));
  return m;
}
extern "C" void* radix_mgpuModuleLoad(void* data, size_t /*size*/) {
  CUmodule m = nullptr;
  if (Status st = check(driver().ModuleLoadData(&m, data), "loading a kernel (cuModuleLoadData)"); !st.ok())
    record_error(std::move(st));
  return m;
}
extern "C" void radix_mgpuModuleUnload(void* m) {
  if (m) driver().ModuleUnload(static_cast<CUmodule>(m));
}
extern "C" void* radix_mgpuModuleGetFunction(void* m, const char* name) {
  CUfunction f = nullptr;
  if (!m) return nullptr;  // its load failed: already recorded
  if (Status st = check(driver().ModuleGetFunction(&f, static_cast<CUmodule>(m), name),
                        (std::string("finding kernel ") + name).c_str());
      !st.ok())
    record_error(std::move(st));
  return f;
}
// Launches go to the run's stream: "creating" a stream returns it and
// destroying it does nothing. Synchronizing after each launch is skipped
// (the stream orders the kernels); radix_cuda_host_sync drains it where the
// host reads memory, and the run drains it at its end.
extern "C" void* radix_mgpuStreamCreate() {
  if (CUstream s = current_stream()) return s;
  if (!t_fallback_stream) (void)driver().StreamCreate(&t_fallback_stream, CU_STREAM_NON_BLOCKING);
  return t_fallback_stream;
}
extern "C" void radix_mgpuStreamDestroy(void*) {}
extern "C" void radix_mgpuStreamSynchronize(void* s) {
  if (s != current_stream()) (void)driver().StreamSynchronize(static_cast<CUstream>(s));
}
extern "C" void radix_mgpuLaunchKernel(void* f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by,
                                       intptr_t bz, int32_t smem, void* stream, void** params, void** extra,
                                       size_t /*param_count*/) {
  if (!f) return;  // the kernel was not found: already recorded
  if (t_run && t_run->failed()) return;
  auto u = [](intptr_t v) { return static_cast<unsigned>(v); };
  if (Status st = check(driver().LaunchKernel(static_cast<CUfunction>(f), u(gx), u(gy), u(gz), u(bx), u(by), u(bz),
                                              static_cast<unsigned>(smem), static_cast<CUstream>(stream), params, extra),
                        "cuLaunchKernel");
      !st.ok())
    record_error(std::move(st));
}

// ---- Radix's own entry points -----------------------------------------------
// A temporary lives until its run ends (the program frees nothing itself:
// see the "bufferize" stage), then goes back to the pool.
extern "C" void* radix_cuda_alloc(size_t bytes) {
  auto r = allocate_device(t_run ? t_run->device() : 0, bytes);
  if (!r.ok()) {
    record_error(r.status());
    return nullptr;
  }
  if (t_run) t_run->defer_free(r.value());
  return r.value();
}
extern "C" void radix_cuda_free(void* p) {
  if (p && !t_run) release_block(p);  // inside a run: released at its end
}
extern "C" void radix_cuda_host_sync() {
  if (!t_run) return;
  if (Status st = check(driver().StreamSynchronize(t_run->stream()), "synchronizing before a host read");
      !st.ok())
    record_error(std::move(st));
}

}  // namespace

// ---- RunScope ---------------------------------------------------------------
RunScope::RunScope(int device, CUstream stream) : outer_(t_run), device_(device), stream_(stream) { t_run = this; }

RunScope::~RunScope() {
  if (!finished_) (void)finish();
  t_run = outer_;
}

Status RunScope::finish() {
  if (finished_) return error_;
  finished_ = true;
  Status st = check(driver().StreamSynchronize(stream_), "running the program (cuStreamSynchronize)");
  if (error_.ok() && !st.ok()) error_ = st;
  if (st.ok()) {
    for (void* p : pending_) release_block(p);
  } else {
    // The stream is broken (a kernel faulted): the blocks may still be in
    // use by work that never ran; leak them rather than reuse them.
  }
  pending_.clear();
  return error_;
}

CUstream current_stream() { return t_run ? t_run->stream() : nullptr; }

void record_error(Status st) {
  if (st.ok()) return;
  if (t_run) {
    t_run->fail(std::move(st));
  } else if (t_load_error.ok()) {
    t_load_error = std::move(st);
  }
}

Status take_load_error() {
  Status st = std::move(t_load_error);
  t_load_error = Status();
  return st;
}

Result<void*> allocate_device(int device, size_t bytes) {
  const size_t size = round_up(bytes);
  Pool& pl = pool();
  {
    std::lock_guard<std::mutex> lock(pl.mu);
    if (auto it = pl.free_blocks.find(size); it != pl.free_blocks.end()) {
      void* p = it->second;
      pl.free_blocks.erase(it);
      pl.cached -= size;
      return p;
    }
  }
  RADIX_RETURN_IF_ERROR(make_current(device));
  // Managed memory may oversubscribe the device, which can hang the GPU:
  // never ask for more than it has free (a clear out-of-memory instead).
  auto fits = [&] {
    size_t free_bytes = 0, total = 0;
    return driver().MemGetInfo(&free_bytes, &total) == CUDA_SUCCESS && size + (size_t{64} << 20) <= free_bytes;
  };
  CUdeviceptr p = 0;
  CUresult r = fits() ? driver().MemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL) : CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    // Give the cached blocks back to the driver and try once more.
    {
      std::lock_guard<std::mutex> lock(pl.mu);
      for (auto& [sz, blk] : pl.free_blocks) {
        pl.sizes.erase(blk);
        driver().MemFree(reinterpret_cast<CUdeviceptr>(blk));
      }
      pl.free_blocks.clear();
      pl.cached = 0;
    }
    r = fits() ? driver().MemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL) : CUDA_ERROR_OUT_OF_MEMORY;
  }
  RADIX_RETURN_IF_ERROR(check(r, ("allocating " + std::to_string(bytes) + " bytes of device memory").c_str()));
  std::lock_guard<std::mutex> lock(pl.mu);
  pl.sizes[reinterpret_cast<void*>(p)] = size;
  return reinterpret_cast<void*>(p);
}

void free_device(void* p, size_t) { release_block(p); }

void register_runtime_symbols() {
  static const bool done = [] {
    auto reg = [](const char* name, void* fn) { (void)register_host_symbol(name, fn); };
    reg("mgpuModuleLoadJIT", reinterpret_cast<void*>(&radix_mgpuModuleLoadJIT));
    reg("mgpuModuleLoad", reinterpret_cast<void*>(&radix_mgpuModuleLoad));
    reg("mgpuModuleUnload", reinterpret_cast<void*>(&radix_mgpuModuleUnload));
    reg("mgpuModuleGetFunction", reinterpret_cast<void*>(&radix_mgpuModuleGetFunction));
    reg("mgpuStreamCreate", reinterpret_cast<void*>(&radix_mgpuStreamCreate));
    reg("mgpuStreamDestroy", reinterpret_cast<void*>(&radix_mgpuStreamDestroy));
    reg("mgpuStreamSynchronize", reinterpret_cast<void*>(&radix_mgpuStreamSynchronize));
    reg("mgpuLaunchKernel", reinterpret_cast<void*>(&radix_mgpuLaunchKernel));
    reg("radix_cuda_alloc", reinterpret_cast<void*>(&radix_cuda_alloc));
    reg("radix_cuda_free", reinterpret_cast<void*>(&radix_cuda_free));
    reg("radix_cuda_host_sync", reinterpret_cast<void*>(&radix_cuda_host_sync));
    return true;
  }();
  (void)done;
}

}  // namespace radix::cuda
