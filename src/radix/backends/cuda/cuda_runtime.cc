#include "radix/backends/cuda/cuda_runtime.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "radix/backends/cuda/cuda_driver.h"
#include "radix/runtime/host_symbols.h"

namespace radix::cuda {

namespace {

thread_local RunScope* t_run = nullptr;
thread_local Status t_load_error;

// ---- The pool of managed blocks ---------------------------------------------
// Blocks are handed out again only after the run that freed them has
// drained its stream (RunScope releases its pending list after the sync), so
// a block is never reused while a kernel still reads it.
constexpr size_t kPoolCap = size_t{4} << 30;  // cached free bytes per device, at most
constexpr size_t kGranule = 256;              // the driver's own alignment

struct Block {
  size_t size;
  int device;
};
struct Pool {
  std::mutex mu;
  std::multimap<std::pair<int, size_t>, void*> free_blocks;  // (device, size) -> block
  std::unordered_map<void*, Block> blocks;                    // every live or cached block
  std::map<int, size_t> cached, allocated, limit;             // per device
};
Pool& pool() {
  static auto* p = new Pool();  // outlives static destructors of other objects
  return *p;
}

size_t round_up(size_t bytes) { return (std::max<size_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule; }

// Gives a block back to the driver (pool lock held).
void driver_free(Pool& pl, void* p) {
  auto it = pl.blocks.find(p);
  if (it == pl.blocks.end()) return;
  if (make_current(it->second.device).ok()) driver().MemFree(reinterpret_cast<CUdeviceptr>(p));
  pl.allocated[it->second.device] -= it->second.size;
  pl.blocks.erase(it);
}

void release_block(void* p) {
  if (!p) return;
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  auto it = pl.blocks.find(p);
  if (it == pl.blocks.end()) return;  // not ours
  const Block b = it->second;
  if (pl.cached[b.device] + b.size > kPoolCap) return driver_free(pl, p);
  pl.cached[b.device] += b.size;
  pl.free_blocks.emplace(std::make_pair(b.device, b.size), p);
}

// The run in progress on this thread leaves the generated code (no-op
// outside one: a load records and carries on).
void abort_run_if_failed() {
  if (t_run && t_run->failed() && t_run->in_program()) t_run->abort();
}

// ---- The runtime-wrapper ABI gpu-to-llvm calls ------------------------------
// Each entry point does its work in a helper (whose C++ locals are gone when
// it returns) and only then may leave the generated code.
void* load_module(void* data, int opt_level, bool jit) {
  CUmodule m = nullptr;
  char log[4096] = {0};
  CUjit_option opts[3] = {CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[3] = {reinterpret_cast<void*>(static_cast<uintptr_t>(std::clamp(opt_level, 0, 4))), log,
                   reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log - 1))};
  CUresult r = jit ? driver().ModuleLoadDataEx(&m, data, 3, opts, vals) : driver().ModuleLoadData(&m, data);
  if (r != CUDA_SUCCESS) {
    Status st = check(r, jit ? "loading a kernel's PTX (cuModuleLoadDataEx)" : "loading a kernel (cuModuleLoadData)");
    record_error(log[0] ? Status(st.code(), st.message() + ": " + log) : st);
  }
  return m;
}
extern "C" void* radix_mgpuModuleLoadJIT(void* data, int opt_level) {
  void* m = load_module(data, opt_level, true);
  abort_run_if_failed();
  return m;
}
extern "C" void* radix_mgpuModuleLoad(void* data, size_t /*size*/) {
  void* m = load_module(data, 0, false);
  abort_run_if_failed();
  return m;
}
extern "C" void radix_mgpuModuleUnload(void* m) {
  if (m) driver().ModuleUnload(static_cast<CUmodule>(m));
}
void* get_function(void* m, const char* name) {
  CUfunction f = nullptr;
  if (!m) {
    record_error(runtime_error(std::string("cuda: kernel ") + name + ": its module did not load"));
    return nullptr;
  }
  if (CUresult r = driver().ModuleGetFunction(&f, static_cast<CUmodule>(m), name); r != CUDA_SUCCESS)
    record_error(check(r, (std::string("finding kernel ") + name).c_str()));
  return f;
}
extern "C" void* radix_mgpuModuleGetFunction(void* m, const char* name) {
  void* f = get_function(m, name);
  abort_run_if_failed();
  return f;
}
// Launches go to the run's stream: "creating" a stream returns it and
// destroying it does nothing. Synchronizing after each launch is skipped
// (the stream orders the kernels); radix_cuda_host_sync drains it where the
// host reads memory, and the run drains it at its end. (Only a run launches:
// outside one this is the legacy default stream, null.)
extern "C" void* radix_mgpuStreamCreate() { return current_stream(); }
extern "C" void radix_mgpuStreamDestroy(void*) {}
extern "C" void radix_mgpuStreamSynchronize(void* s) {
  if (s != current_stream()) (void)driver().StreamSynchronize(static_cast<CUstream>(s));
}
void launch(void* f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
            void* stream, void** params, void** extra) {
  if (!f) return;  // already recorded
  auto u = [](intptr_t v) { return static_cast<unsigned>(v); };
  CUresult r = driver().LaunchKernel(static_cast<CUfunction>(f), u(gx), u(gy), u(gz), u(bx), u(by), u(bz),
                                     static_cast<unsigned>(smem), static_cast<CUstream>(stream), params, extra);
  if (r != CUDA_SUCCESS)
    record_error(check(r, ("cuLaunchKernel (grid " + std::to_string(gx) + "x" + std::to_string(gy) + "x" +
                           std::to_string(gz) + ", block " + std::to_string(bx) + "x" + std::to_string(by) + "x" +
                           std::to_string(bz) + ")").c_str()));
}
extern "C" void radix_mgpuLaunchKernel(void* f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by,
                                       intptr_t bz, int32_t smem, void* stream, void** params, void** extra,
                                       size_t /*param_count*/) {
  launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra);
  abort_run_if_failed();
}

// ---- Radix's own entry points -----------------------------------------------
// A temporary lives until its run ends (the program frees nothing itself:
// see the "bufferize" stage), then goes back to the pool.
extern "C" void* radix_cuda_alloc(size_t bytes) {
  void* p = run_alloc(bytes);
  abort_run_if_failed();
  return p;
}
extern "C" void radix_cuda_free(void* p) {
  if (p && !t_run) release_block(p);  // inside a run: released at its end
}
void host_sync() {
  if (!t_run) return;
  // Without concurrent managed access the host may not touch managed memory
  // while any kernel of the device runs.
  CUresult r = t_run->sync_whole_device() ? driver().CtxSynchronize() : driver().StreamSynchronize(t_run->stream());
  if (r != CUDA_SUCCESS) record_error(check(r, "synchronizing before a host read"));
}
extern "C" void radix_cuda_host_sync() {
  host_sync();
  abort_run_if_failed();
}

}  // namespace

// ---- RunScope ---------------------------------------------------------------
RunScope::RunScope(int device, CUstream stream, bool sync_whole_device)
    : outer_(t_run), device_(device), stream_(stream), sync_whole_device_(sync_whole_device) {
  t_run = this;
}

RunScope::~RunScope() {
  if (!finished_) (void)finish();
  t_run = outer_;
}

void RunScope::invoke(void (*entry)(void**), void** args) {
  in_program_ = true;
  if (setjmp(jump_) == 0) entry(args);
  in_program_ = false;
}

void RunScope::abort() { std::longjmp(jump_, 1); }

Status RunScope::finish() {
  if (finished_) return error_;
  finished_ = true;
  Status st = check(driver().StreamSynchronize(stream_), "running the program (cuStreamSynchronize)");
  if (error_.ok() && !st.ok()) error_ = st;
  // A broken stream (a kernel faulted) may leave work that never ran using
  // the blocks: leak them rather than reuse them.
  if (st.ok())
    for (void* p : pending_) release_block(p);
  pending_.clear();
  return error_;
}

CUstream current_stream() { return t_run ? t_run->stream() : nullptr; }

void record_error(Status st) {
  if (st.ok()) return;
  if (t_run) t_run->fail(std::move(st));
  else if (t_load_error.ok()) t_load_error = std::move(st);
}

Status take_load_error() {
  Status st = std::move(t_load_error);
  t_load_error = Status();
  return st;
}

Result<void*> allocate_device(int device, size_t bytes) {
  const size_t size = round_up(bytes);
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  if (auto it = pl.free_blocks.find({device, size}); it != pl.free_blocks.end()) {
    void* p = it->second;
    pl.free_blocks.erase(it);
    pl.cached[device] -= size;
    return p;
  }
  RADIX_RETURN_IF_ERROR(make_current(device));
  if (!pl.limit.count(device)) {
    // The device's memory less a reserve (1 GiB, or 1/16 of it if more) for
    // the driver, kernels' stacks and other processes' contexts.
    size_t free_bytes = 0, total = 0;
    RADIX_RETURN_IF_ERROR(check(driver().MemGetInfo(&free_bytes, &total), "cuMemGetInfo"));
    const size_t reserve = std::max<size_t>(size_t{1} << 30, total / 16);
    pl.limit[device] = total > reserve ? total - reserve : 0;
  }
  auto fits = [&] { return pl.allocated[device] + size <= pl.limit[device]; };
  if (!fits()) {
    // Give this device's cached blocks back to the driver first.
    for (auto it = pl.free_blocks.begin(); it != pl.free_blocks.end();) {
      if (it->first.first != device) { ++it; continue; }
      driver_free(pl, it->second);
      it = pl.free_blocks.erase(it);
    }
    pl.cached[device] = 0;
  }
  if (!fits())
    return runtime_error("cuda: out of device memory: " + std::to_string(bytes) + " bytes requested with " +
                         std::to_string(pl.allocated[device]) + " of " + std::to_string(pl.limit[device]) +
                         " usable bytes in use on device " + std::to_string(device));
  CUdeviceptr p = 0;
  RADIX_RETURN_IF_ERROR(check(driver().MemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL),
                              ("allocating " + std::to_string(bytes) + " bytes of device memory").c_str()));
  pl.blocks[reinterpret_cast<void*>(p)] = {size, device};
  pl.allocated[device] += size;
  return reinterpret_cast<void*>(p);
}

void free_device(void* p) { release_block(p); }

void* run_alloc(size_t bytes) {
  auto r = allocate_device(t_run ? t_run->device() : 0, bytes);
  if (!r.ok()) {
    record_error(r.status());
    return nullptr;
  }
  if (t_run) t_run->defer_free(r.value());
  return r.value();
}
void run_release(void*) {}  // freed when the run ends

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
