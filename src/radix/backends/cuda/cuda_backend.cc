#include "radix/backends/cuda/cuda_backend.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "radix/backends/cpu/object_jit.h"
#include "radix/backends/cuda/cuda_driver.h"
#include "radix/backends/cuda/cuda_pipelines.h"
#include "radix/backends/cuda/cuda_runtime.h"
#include "radix/backends/dialect_registry.h"
#include "radix/backends/native_executable.h"
#include "radix/compiler/stage_dumper.h"
#include "radix/runtime/ffi_registry.h"
#include "radix/runtime/ffi_site.h"
#include "radix/runtime/host_symbols.h"
#include "radix/runtime/profiler.h"
#include "radix/trace/diagnostic_collector.h"
#include "radix/trace/sharding_emitter.h"
#include "radix/trace/traced_module.h"

namespace radix {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}


// A compiled program: the host object (with every kernel's PTX inside),
// loaded; its stream; the device it runs on.
class CudaExecutable : public NativeExecutable {
 public:
  CudaExecutable(std::string object, std::unique_ptr<LoadedObject> loaded, void (*entry)(void**), const Signature& sig,
                 int device, CUstream stream, bool sync_whole_device)
      : NativeExecutable(std::move(object), std::move(loaded), entry, sig), device_(device), stream_(stream),
        sync_whole_device_(sync_whole_device) {}
  ~CudaExecutable() override {
    if (cuda::make_current(device_).ok()) {
      (void)cuda::driver().StreamSynchronize(stream_);
      loaded_.reset();  // unloads the kernels' modules (the object's destructors)
      (void)cuda::driver().StreamDestroy(stream_);
    }
  }

  Status execute(std::span<void* const> inputs, std::span<void* const> outputs) override {
    RADIX_RETURN_IF_ERROR(cuda::make_current(device_));
    cuda::RunScope run(device_, stream_, sync_whole_device_);
    ffi::detail::DeviceScope ffi_device("cuda", stream_, &cuda::run_alloc, &cuda::run_release, device_);
    call_packed(layout_, entry_, inputs, outputs, [&](void (*e)(void**), void** args) { run.invoke(e, args); });
    return run.finish();
  }

 private:
  int device_;
  CUstream stream_;
  bool sync_whole_device_;  // no concurrent managed access: host reads drain the device
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int ordinal) : ordinal_(ordinal) { cuda::register_runtime_symbols(); }

  std::string name() const override { return "cuda"; }

  Status available() const override {
    auto d = cuda::open_device(ordinal_);
    return d.ok() ? Status() : d.status();
  }

  Status check_options(const CompileOptions& options) const override {
    const CodegenOptions& cg = options.codegen;
    if (cg.opt_level < 0 || cg.opt_level > 3)
      return invalid_argument("CompileOptions.codegen.opt_level must be 0..3, got " + std::to_string(cg.opt_level));
    RADIX_RETURN_IF_ERROR(resolve_sm(cg.cuda.target, "").status());
    return check_dump_stages(options.diagnostics, cuda_stage_names());
  }

  // The architecture code is generated for: the option's, else the
  // device's when one is present (see resolve_sm).
  Result<std::string> target_sm(const CompileOptions& options) const {
    std::string device_sm;
    if (options.codegen.cuda.target.empty())
      if (auto d = cuda::open_device(ordinal_); d.ok()) device_sm = d->sm();
    return resolve_sm(options.codegen.cuda.target, device_sm);
  }

  std::string codegen_fingerprint(const CompileOptions& options) const override {
    auto sm = target_sm(options);
    return "sm=" + (sm.ok() ? sm.value() : options.codegen.cuda.target) +
           ";opt=" + std::to_string(options.codegen.opt_level) + ";libdevice=" + (find_libdevice().empty() ? "0" : "1") +
           ";tile_matmul=" + std::to_string(options.codegen.cuda.tile_matmul);
  }

  // Lowers and emits the host object (PTX inside); no device needed.
  Result<std::string> build_object(const CompileJob& job, CompileStats& stats) {
    const CompileOptions& options = *job.options;
    const Signature& sig = *job.signature;
    if (!sig.mesh.single_device())
      return compile_error("cuda: programs traced on a mesh of several devices (" + sig.mesh.to_string() +
                           ") run on the CPU backend over MPI only");
    StageDumper dumper(options.diagnostics, job.dump_folder);
    const bool verbose = options.diagnostics.verbose;
    mlir::MLIRContext ctx(backend_dialect_registry(), mlir::MLIRContext::Threading::DISABLED);
    mlir::OwningOpRef<mlir::ModuleOp> module;
    {
      detail::DiagnosticCollector diags(&ctx);
      module = mlir::parseSourceString<mlir::ModuleOp>(llvm::StringRef(job.bytecode.data(), job.bytecode.size()),
                                                       mlir::ParserConfig(&ctx));
      if (!module) return compile_error("cuda: the traced module's bytecode does not parse:\n" + diags.text());
    }
    dumper.dump_module("traced", *module);
    CudaLowering lowering;
    RADIX_ASSIGN_OR_RETURN(lowering.sm, target_sm(options));
    lowering.opt_level = options.codegen.opt_level;
    lowering.libdevice = find_libdevice();
    lowering.tile_matmul = options.codegen.cuda.tile_matmul;
    auto t0 = Clock::now();
    std::vector<std::string> kernels;
    auto on_stage = [&](std::string_view stage, double ms) {
      if (verbose)
        std::fprintf(stderr, "[radix cuda] stage %-12.*s %8.2f ms\n", static_cast<int>(stage.size()), stage.data(), ms);
    };
    RADIX_RETURN_IF_ERROR(run_cuda_lowering(*module, lowering, dumper, on_stage, &kernels));
    stats.lower_ms = ms_since(t0);
    t0 = Clock::now();
    Profiler::Span span("llvm codegen (host)", "compile");
    ObjectCodegenOptions oo;
    oo.opt_level = options.codegen.opt_level;
    if (dumper.wants("llvm-ir")) oo.on_llvm_ir = [&](const std::string& ir) { dumper.dump("llvm-ir", ir, "ll"); };
    RADIX_ASSIGN_OR_RETURN(std::string object, emit_object(*module, oo));
    stats.jit_ms = ms_since(t0);
    if (verbose)
      std::fprintf(stderr, "[radix cuda] %zu kernels for %s; host object %zu bytes\n", kernels.size(),
                   lowering.sm.c_str(), object.size());
    return object;
  }

  Result<CompileStats> compile_only(const CompileJob& job) override {
    auto t0 = Clock::now();
    CompileStats stats;
    stats.dump_folder = job.dump_folder;
    RADIX_RETURN_IF_ERROR(build_object(job, stats).status());
    stats.total_ms = ms_since(t0);
    return stats;
  }

  // (Platform::compile has checked available(): there is a device.)
  Result<std::unique_ptr<BackendExecutable>> compile(const CompileJob& job) override {
    auto t0 = Clock::now();
    CompileStats stats;
    stats.dump_folder = job.dump_folder;
    RADIX_ASSIGN_OR_RETURN(std::string object, build_object(job, stats));
    auto t1 = Clock::now();
    RADIX_ASSIGN_OR_RETURN(std::unique_ptr<BackendExecutable> exe, load_object(std::move(object), *job.signature));
    stats.jit_ms += ms_since(t1);
    stats.total_ms = ms_since(t0);
    exe->stats = stats;
    if (!job.options->diagnostics.verbose && stats.total_ms > 1000)
      std::fprintf(stderr, "[radix cuda] compiled %s in %.2f s (%s)\n", job.name.c_str(), stats.total_ms / 1000,
                   stats.summary().c_str());
    return exe;
  }

  Result<std::unique_ptr<BackendExecutable>> load(std::string_view bytes, const CompileJob& job) override {
    return load_object(std::string(bytes), *job.signature);
  }

  // Loads the host object; its static constructors load each kernel's PTX
  // into the device's context (errors kept by the runtime, reported here).
  // Without a device: "no CUDA device: ..." from open_device.
  Result<std::unique_ptr<BackendExecutable>> load_object(std::string object, const Signature& sig) {
    RADIX_ASSIGN_OR_RETURN(cuda::DeviceInfo device, cuda::open_device(ordinal_));
    (void)cuda::take_load_error();
    std::vector<HostSymbol> symbols = host_symbols();
    RADIX_ASSIGN_OR_RETURN(std::unique_ptr<LoadedObject> loaded, LoadedObject::load(object, symbols));
    RADIX_RETURN_IF_ERROR(cuda::take_load_error());
    RADIX_ASSIGN_OR_RETURN(auto entry, loaded->packed_entry("main"));
    CUstream stream = nullptr;
    RADIX_RETURN_IF_ERROR(cuda::check(cuda::driver().StreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
    return std::unique_ptr<BackendExecutable>(new CudaExecutable(std::move(object), std::move(loaded), entry, sig,
                                                                 ordinal_, stream, !device.concurrent_managed_access));
  }

  // Device memory is managed memory (see cuda_runtime.h); pinned host memory
  // is page-locked and mapped into the device's address space.
  // Every output of every call comes here: no more than a thread-local
  // check of the current context (which says "no CUDA device" without one).
  Result<void*> allocate(size_t bytes, MemoryKind kind) override {
    if (kind == MemoryKind::kDevice) return cuda::allocate_device(ordinal_, bytes);
    RADIX_RETURN_IF_ERROR(cuda::make_current(ordinal_));
    void* p = nullptr;
    RADIX_RETURN_IF_ERROR(cuda::check(
        cuda::driver().MemHostAlloc(&p, std::max<size_t>(bytes, 1), CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
        ("allocating " + std::to_string(bytes) + " bytes of pinned host memory").c_str()));
    return p;
  }
  void deallocate(void* p, size_t bytes, MemoryKind kind) override {
    if (!p) return;
    if (kind == MemoryKind::kDevice) return cuda::free_device(p);
    if (cuda::make_current(ordinal_).ok()) (void)cuda::driver().MemFreeHost(p);
  }
  Status copy(void* dst, const void* src, size_t bytes, const char* what) {
    if (!bytes || dst == src) return Status();
    RADIX_RETURN_IF_ERROR(cuda::make_current(ordinal_));
    RADIX_RETURN_IF_ERROR(cuda::check(
        cuda::driver().Memcpy(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes), what));
    // cuMemcpy runs on the legacy stream, which the executables' non-blocking
    // streams do not wait for, and may return before a copy from pageable
    // memory or within the device is done: wait for it here.
    return cuda::check(cuda::driver().StreamSynchronize(CU_STREAM_LEGACY), what);
  }
  Status copy_to_device(void* dst, const void* src, size_t bytes) override {
    return copy(dst, src, bytes, "copying host -> device (cuMemcpy)");
  }
  Status copy_to_host(void* dst, const void* src, size_t bytes) override {
    return copy(dst, src, bytes, "copying device -> host (cuMemcpy)");
  }
  Status copy_on_device(void* dst, const void* src, size_t bytes) override {
    return copy(dst, src, bytes, "copying on the device (cuMemcpy)");
  }

 private:
  int ordinal_;
};

[[maybe_unused]] const bool g_registered = register_backend("cuda", [] { return cuda_backend(0); });

}  // namespace

std::shared_ptr<Backend> cuda_backend(int ordinal) {
  static std::mutex mu;
  static auto* backends = new std::map<int, std::shared_ptr<Backend>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& b = (*backends)[ordinal];
  if (!b) b = std::make_shared<CudaBackend>(ordinal);
  return b;
}

}  // namespace radix
