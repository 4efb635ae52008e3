// The CPU backend: parses the traced module into its own MLIRContext, lowers
// it with the named pipelines of cpu_pipelines.h, JIT-compiles it with LLVM
// ORC for the host CPU, and runs it on 64-byte-aligned host memory. It
// registers itself as "cpu" (see runtime/backend.h).
#include "radix/runtime/backend.h"
#include "radix/runtime/profiler.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <mutex>

#include <sys/mman.h>

#include "llvm/ADT/SmallVector.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "radix/backends/cpu/block_pool.h"
#include "radix/backends/cpu/jit_heap.h"
#include "radix/backends/dialect_registry.h"
#include "radix/backends/native_executable.h"
#include "radix/backends/cpu/cpu_pipelines.h"
#include "radix/backends/cpu/cpu_threads.h"
#include "radix/backends/cpu/fork_join_pool.h"
#include "radix/backends/cpu/object_jit.h"
#include "radix/backends/cpu/schedule.h"
#include "radix/compiler/stage_dumper.h"
#include "radix/runtime/host_symbols.h"
#include "radix/trace/diagnostic_collector.h"
#include "radix/core/half.h"
#include "radix/trace/traced_module.h"
#include "radix/trace/sharding_emitter.h"
#include "radix/runtime/distributed.h"
#include "radix/runtime/ffi_registry.h"
#include "radix/runtime/ffi_site.h"

namespace radix {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr size_t kPageSize = 4096;
constexpr double kSlowCompileMs = 1000;  // compiles longer than this report their time
constexpr size_t kPoolBytes = size_t{512} << 20;  // freed blocks kept for reuse, at most
// A pinned block's size: whole pages (what mlock / munlock cover).
size_t pinned_bytes(size_t bytes) { return (std::max<size_t>(bytes, 1) + kPageSize - 1) / kPageSize * kPageSize; }

// Runtime support the generated code may call. LLVM lowers float -> bfloat
// truncation to these compiler-rt routines on CPUs without native bf16
// conversion, and Debian 12's libgcc does not provide them. A bfloat travels
// in the low 16 bits of an SSE / FP register, as the low bits of a float do.
float bits_as_bf16_return(uint16_t bits) {
  uint32_t u = bits;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
extern "C" float radix_truncsfbf2(float x) { return bits_as_bf16_return(float_to_bf16(x)); }
extern "C" float radix_truncdfbf2(double x) {
  // Round once: narrow to float with round-to-odd (truncate toward zero, set
  // the last bit if inexact), then round to nearest even into bfloat16.
  float f = static_cast<float>(x);
  if (std::isfinite(f) && static_cast<double>(f) != x) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    u |= 1u;
    std::memcpy(&f, &u, sizeof u);
  }
  return bits_as_bf16_return(float_to_bf16(f));
}


// A compiled program: its native object (kept for the executable cache) and
// that object loaded into the JIT.
class CpuExecutable : public NativeExecutable {
 public:
  CpuExecutable(std::string object, std::unique_ptr<LoadedObject> loaded, void (*entry)(void**), const Signature& sig,
                CompileStats compile_stats, int threads)
      : NativeExecutable(std::move(object), std::move(loaded), entry, sig), threads_(threads) {
    stats = compile_stats;
  }

  Status execute(std::span<void* const> inputs, std::span<void* const> outputs) override {
    // The cores this call's OpenMP team runs on (see cpu_threads.h).
    CoreBudget::Hold cores(CoreBudget::process(), threads_);
    call_packed(layout_, entry_, inputs, outputs);
    return Status();
  }

 private:
  int threads_;
};

// A program on a mesh of several devices runs in an MPI job of exactly that
// many processes (its collectives need every rank); starts MPI, whose
// runtime functions the object links against.
Status require_job_for(const Signature& sig) {
  if (sig.mesh.single_device()) return Status();
  return distributed::require_size(sig.mesh.num_devices(), ("a program on " + sig.mesh.to_string()).c_str());
}

// Loads a native object with every registered host symbol and finds @main.
Result<std::unique_ptr<BackendExecutable>> load_object(std::string object, const Signature& sig,
                                                       const CompileStats& stats, const CpuOptions& cpu) {
  const int threads = resolve_cpu_threads(cpu.threads);
  std::vector<HostSymbol> symbols = host_symbols();
  // The compiled code's temporaries come from a heap that keeps large
  // blocks warm between calls (jit_heap.h).
  symbols.push_back({"malloc", reinterpret_cast<void*>(&jit_heap_malloc)});
  symbols.push_back({"free", reinterpret_cast<void*>(&jit_heap_free)});
  // Its parallel regions run on Radix's pool, unless libomp is asked for.
  if (cpu.thread_pool && threads > 1)
    for (HostSymbol& s : kmpc_entry_points()) symbols.push_back(std::move(s));
  RADIX_ASSIGN_OR_RETURN(std::unique_ptr<LoadedObject> loaded, LoadedObject::load(object, symbols));
  RADIX_ASSIGN_OR_RETURN(auto entry, loaded->packed_entry("main"));
  return std::unique_ptr<BackendExecutable>(
      new CpuExecutable(std::move(object), std::move(loaded), entry, sig, stats, threads));
}

class CpuBackend : public Backend {
 public:
  CpuBackend() {
    static std::once_flag once;
    std::call_once(once, [] {
      (void)register_host_symbol("__truncsfbf2", reinterpret_cast<void*>(&radix_truncsfbf2));
      (void)register_host_symbol("__truncdfbf2", reinterpret_cast<void*>(&radix_truncdfbf2));
      init_cpu_threads();
    });
  }

  std::string name() const override { return "cpu"; }

  Status check_options(const CompileOptions& options) const override {
    const CodegenOptions& cg = options.codegen;
    if (cg.opt_level < 0 || cg.opt_level > 3)
      return invalid_argument("CompileOptions.codegen.opt_level must be 0..3, got " + std::to_string(cg.opt_level));
    if (auto t = resolve_target_cpu(cg.target_cpu); !t.ok())
      return invalid_argument("CompileOptions.codegen.target_cpu: unknown CPU '" + cg.target_cpu + "'");
    const VectorIsa& isa = cg.cpu.schedule_isa;
    if ((isa.f32_lanes != 0 && isa.f32_lanes != 4 && isa.f32_lanes != 8 && isa.f32_lanes != 16) ||
        (isa.registers != 0 && isa.registers != 16 && isa.registers != 32))
      return invalid_argument("CompileOptions.codegen.cpu.schedule_isa: f32_lanes must be 0, 4, 8 or 16 and "
                              "registers 0, 16 or 32; got " + std::to_string(isa.f32_lanes) + " and " +
                              std::to_string(isa.registers));
    if (cg.cpu.threads < 0 || cg.cpu.threads > 1024)
      return invalid_argument("CompileOptions.codegen.cpu.threads must be 0 (every core) or 1..1024, got " +
                              std::to_string(cg.cpu.threads));
    if (cg.cpu.streaming_store_bytes < -1)
      return invalid_argument(
          "CompileOptions.codegen.cpu.streaming_store_bytes must be -1 (half the last-level cache), 0 (never) or a "
          "byte count, got " + std::to_string(cg.cpu.streaming_store_bytes));
    return check_dump_stages(options.diagnostics, cpu_stage_names());
  }

  std::string codegen_fingerprint(const CompileOptions& options) const override {
    const CodegenOptions& cg = options.codegen;
    auto target = resolve_target_cpu(cg.target_cpu);
    const VectorIsa isa = schedule_vector_isa(cg.cpu.schedule_isa, target.ok() ? target.value() : "");
    std::string s = "target=" + (target.ok() ? target.value() : cg.target_cpu);
    s += ";opt=" + std::to_string(cg.opt_level) + ";vectorize=" + std::to_string(cg.cpu.vectorize) +
         ";approx=" + std::to_string(cg.cpu.approximate_math) + ";isa=" + std::to_string(isa.f32_lanes) + "x" +
         std::to_string(isa.registers) + ";threads=" + std::to_string(resolve_cpu_threads(cg.cpu.threads)) +
         ";int8=" + std::to_string(cg.cpu.int8_kernels) + ";bf16=" + std::to_string(cg.cpu.bf16_kernels) +
         ";stream=" + std::to_string(resolve_streaming_store_bytes(cg.cpu.streaming_store_bytes)) +
         ";merge=" + std::to_string(cg.cpu.merge_parallel_loops) +
         ";pool=" + std::to_string(cg.cpu.thread_pool);
    return s;
  }

  Result<std::unique_ptr<BackendExecutable>> compile(const CompileJob& job) override {
    const CompileOptions& options = *job.options;
    const bool verbose = options.diagnostics.verbose;
    auto t_start = Clock::now();
    CompileStats stats;
    stats.dump_folder = job.dump_folder;
    StageDumper dumper(options.diagnostics, job.dump_folder);
    auto log = [&](const char* fmt, auto... args) {
      if (verbose) {
        std::fprintf(stderr, "[radix cpu] ");
        std::fprintf(stderr, fmt, args...);
        std::fprintf(stderr, "\n");
      }
    };

    // The backend's own context: the traced module is only read (as
    // bytecode), so compiles of one module may run on several threads.
    mlir::MLIRContext ctx(backend_dialect_registry(), mlir::MLIRContext::Threading::DISABLED);
    auto parse = [&]() -> Result<mlir::OwningOpRef<mlir::ModuleOp>> {
      detail::DiagnosticCollector diags(&ctx);
      auto m = mlir::parseSourceString<mlir::ModuleOp>(llvm::StringRef(job.bytecode.data(), job.bytecode.size()),
                                                       mlir::ParserConfig(&ctx));
      if (!m) return compile_error("cpu: the traced module's bytecode does not parse:\n" + diags.text());
      return m;
    };
    RADIX_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> module, parse());
    dumper.dump_module("traced", *module);

    auto t0 = Clock::now();
    auto on_stage = [&](std::string_view stage, double ms) {
      log("stage %-10.*s %8.2f ms", static_cast<int>(stage.size()), stage.data(), ms);
    };
    const Signature& sig = *job.signature;
    RADIX_RETURN_IF_ERROR(require_job_for(sig));
    // "cpu +feature,-feature,...": what the code is generated for.
    RADIX_ASSIGN_OR_RETURN(const std::string target_features, resolve_target_cpu(options.codegen.target_cpu));
    Status st = run_cpu_lowering(*module, options.codegen.cpu, dumper, on_stage, &sig, target_features);
    if (!st.ok() && options.codegen.cpu.vectorize && st.code() == ErrorCode::kScheduleError) {
      // A schedule the transform interpreter rejects is a Radix bug, but the
      // program is still valid: say so, and compile plain loops instead.
      std::fprintf(stderr, "radix cpu: warning: %s\nradix cpu: compiling without vectorization instead\n",
                   st.message().c_str());
      CpuOptions scalar = options.codegen.cpu;
      scalar.vectorize = false;
      RADIX_ASSIGN_OR_RETURN(module, parse());
      st = run_cpu_lowering(*module, scalar, dumper, on_stage, &sig, target_features);
      stats.schedule_fell_back = true;
    }
    if (!st.ok()) return st;
    stats.lower_ms = ms_since(t0);

    // Codegen: LLVM IR, optimized at opt_level for the target CPU, emitted
    // as a native object (what the executable cache stores), then loaded.
    t0 = Clock::now();
    Profiler::Span jit_span("llvm codegen", "compile");
    ObjectCodegenOptions oo;
    oo.opt_level = options.codegen.opt_level;
    oo.target_cpu = options.codegen.target_cpu;
    if (dumper.wants("llvm-ir")) oo.on_llvm_ir = [&](const std::string& ir) { dumper.dump("llvm-ir", ir, "ll"); };
    oo.on_step = on_stage;
    if (dumper.wants("asm")) oo.on_asm = [&](const std::string& text) { dumper.dump("asm", text, "s"); };
    RADIX_ASSIGN_OR_RETURN(std::string object, emit_object(*module, oo));
    RADIX_ASSIGN_OR_RETURN(std::unique_ptr<BackendExecutable> exe, load_object(std::move(object), *job.signature, stats,
                                                                           options.codegen.cpu));
    stats.jit_ms = ms_since(t0);
    stats.total_ms = ms_since(t_start);
    log("jit %.2f ms; compiled %s in %.1f ms", stats.jit_ms, job.signature->to_string().c_str(), stats.total_ms);
    // Long compiles say so even when not verbose (as ZML does past a second).
    if (!verbose && stats.total_ms > kSlowCompileMs)
      std::fprintf(stderr, "[radix cpu] compiled %s in %.2f s (%s)\n", job.name.c_str(), stats.total_ms / 1000,
                   stats.summary().c_str());
    exe->stats = stats;
    return exe;
  }

  Result<std::unique_ptr<BackendExecutable>> load(std::string_view bytes, const CompileJob& job) override {
    RADIX_RETURN_IF_ERROR(require_job_for(*job.signature));
    return load_object(std::string(bytes), *job.signature, CompileStats{}, job.options->codegen.cpu);
  }

  // Device memory is host memory here. Pinned host memory is page-aligned
  // and locked into RAM (mlock) where RLIMIT_MEMLOCK allows; beyond the limit
  // it stays pageable, which on the CPU changes no result, only paging.
  // Device memory (kDevice) comes from a pool of freed blocks (block_pool.h):
  // per-call outputs reuse warm memory.
  Result<void*> allocate(size_t bytes, MemoryKind kind) override {
    if (kind != MemoryKind::kPinnedHost) {
      void* p = pool_.allocate(bytes);
      if (!p) return runtime_error("cpu: out of memory allocating " + std::to_string(bytes) + " bytes");
      return p;
    }
    const size_t n = pinned_bytes(bytes);
    void* p = std::aligned_alloc(kPageSize, n);
    if (!p) return runtime_error("cpu: out of memory allocating " + std::to_string(bytes) + " bytes");
    (void)::mlock(p, n);
    return p;
  }
  void deallocate(void* p, size_t bytes, MemoryKind kind) override {
    if (kind != MemoryKind::kPinnedHost) return pool_.release(p, bytes);
    (void)::munlock(p, pinned_bytes(bytes));
    std::free(p);
  }
  Status copy_to_device(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return Status();
  }
  Status copy_to_host(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return Status();
  }
  Status copy_on_device(void* dst, const void* src, size_t bytes) override {
    if (bytes && dst != src) std::memcpy(dst, src, bytes);
    return Status();
  }

 private:
  BlockPool pool_{kPoolBytes};
};

// Registered by name when libradix loads; the runtime never includes this file.
[[maybe_unused]] const bool g_registered = register_backend("cpu", [] { return std::make_shared<CpuBackend>(); });

}  // namespace

}  // namespace radix
