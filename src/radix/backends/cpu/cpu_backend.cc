#include "radix/backends/cpu/cpu_backend.h"
#include "radix/runtime/profiler.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <mutex>

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "radix/compiler/pipelines.h"
#include "radix/core/half.h"
#include "radix/trace/traced_module.h"

namespace radix {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr size_t kAlign = 64;
constexpr double kSlowCompileMs = 1000;  // compiles longer than this report their time

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

void register_runtime_symbols(mlir::ExecutionEngine& engine) {
  engine.registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap m;
    auto add = [&](const char* name, auto* fn) {
      m[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn), llvm::JITSymbolFlags::Exported};
    };
    add("__truncsfbf2", &radix_truncsfbf2);
    add("__truncdfbf2", &radix_truncdfbf2);
    return m;
  });
}

// Memref descriptors for the C interface: {allocated, aligned, offset,
// sizes[rank], strides[rank]}, all 8-byte fields.
struct Descriptor {
  std::vector<int64_t> words;
  void* ptr() { return words.data(); }
};

Descriptor make_descriptor(void* data, const Shape& s) {
  Descriptor d;
  d.words.resize(3 + 2 * static_cast<size_t>(s.rank()));
  auto p = reinterpret_cast<int64_t>(data);
  d.words[0] = p;
  d.words[1] = p;
  d.words[2] = 0;
  int64_t stride = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    d.words[3 + static_cast<size_t>(i)] = s.dim(i);
    d.words[3 + static_cast<size_t>(s.rank() + i)] = stride;
    stride *= s.dim(i);
  }
  return d;
}

// Set once static destruction has begun (see ExitSentinel).
std::atomic<bool> g_exiting{false};

// Destroying an ExecutionEngine runs LLVM code that uses LLVM's own static
// objects; during static destruction at exit those may already be gone (an
// Executable held in a static crashed there). The sentinel is built right
// after the first engine, so it is destroyed before the LLVM statics that
// compile touched: engines still alive after that are leaked instead.
struct ExitSentinel {
  ~ExitSentinel() { g_exiting.store(true); }
};
void arm_exit_sentinel() { static ExitSentinel sentinel; }

class CpuExecutable : public BackendExecutable {
 public:
  CpuExecutable(std::unique_ptr<mlir::ExecutionEngine> engine, void (*entry)(void**), Signature sig,
                CompileStats stats)
      : engine_(std::move(engine)), entry_(entry), sig_(std::move(sig)), stats_(stats) {
    arm_exit_sentinel();
  }
  ~CpuExecutable() override {
    if (g_exiting.load()) (void)engine_.release();  // the process is exiting: let the OS reclaim it
  }

  Status execute(std::span<void* const> inputs, std::span<void* const> outputs) override {
    const size_t n = inputs.size() + outputs.size();
    std::vector<Descriptor> descs;
    descs.reserve(n);
    for (size_t i = 0; i < inputs.size(); ++i) descs.push_back(make_descriptor(inputs[i], sig_.inputs[i]));
    for (size_t i = 0; i < outputs.size(); ++i) descs.push_back(make_descriptor(outputs[i], sig_.outputs[i]));
    // Packed calling convention: args[i] points at the i-th argument of
    // _mlir_ciface_main, itself a pointer to a descriptor.
    std::vector<void*> desc_ptrs(n), args(n);
    for (size_t i = 0; i < n; ++i) {
      desc_ptrs[i] = descs[i].ptr();
      args[i] = &desc_ptrs[i];
    }
    entry_(args.data());
    return Status();
  }
  const CompileStats& stats() const override { return stats_; }

 private:
  std::unique_ptr<mlir::ExecutionEngine> engine_;
  void (*entry_)(void**);
  Signature sig_;
  CompileStats stats_;
};

class CpuBackend : public Backend {
 public:
  CpuBackend() {
    static std::once_flag once;
    std::call_once(once, [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
    });
  }

  std::string name() const override { return "cpu"; }

  Result<std::unique_ptr<BackendExecutable>> compile(const TracedModule& traced,
                                                     const CompileOptions& options) override {
    if (options.opt_level < 0 || options.opt_level > 3)
      return invalid_argument("CompileOptions.opt_level must be 0..3, got " + std::to_string(options.opt_level));
    const VectorIsa& isa = options.schedule_isa;
    if ((isa.f32_lanes != 0 && isa.f32_lanes != 4 && isa.f32_lanes != 8 && isa.f32_lanes != 16) ||
        (isa.registers != 0 && isa.registers != 16 && isa.registers != 32))
      return invalid_argument("CompileOptions.schedule_isa: f32_lanes must be 0, 4, 8 or 16 and registers 0, 16 or "
                              "32; got " + std::to_string(isa.f32_lanes) + " and " + std::to_string(isa.registers));
    for (const std::string& d : options.dump)
      if (!is_known_stage(d))
        return invalid_argument("CompileOptions.dump: unknown stage '" + d + "' (known: " + known_stages() + ")");
    auto t_start = Clock::now();
    CompileStats stats;
    StageDumper dumper(options);
    auto log = [&](const char* fmt, auto... args) {
      if (options.verbose) {
        std::fprintf(stderr, "[radix cpu] ");
        std::fprintf(stderr, fmt, args...);
        std::fprintf(stderr, "\n");
      }
    };
    dumper.dump_module("traced", traced.module());

    // Lower a clone: the traced module stays as it was (for dumps, recompiles).
    mlir::OwningOpRef<mlir::ModuleOp> module(traced.module().clone());
    auto t0 = Clock::now();
    auto on_stage = [&](std::string_view stage, double ms) {
      log("stage %-10.*s %8.2f ms", static_cast<int>(stage.size()), stage.data(), ms);
    };
    Status st = run_cpu_lowering(*module, options, dumper, on_stage);
    if (!st.ok() && options.vectorize && st.message().rfind("schedule:", 0) == 0) {
      // A schedule the transform interpreter rejects is a Radix bug, but the
      // program is still valid: say so, and compile plain loops instead.
      std::fprintf(stderr, "radix cpu: warning: %s\nradix cpu: compiling without vectorization instead\n",
                   st.message().c_str());
      CompileOptions scalar = options;
      scalar.vectorize = false;
      module = mlir::OwningOpRef<mlir::ModuleOp>(traced.module().clone());
      st = run_cpu_lowering(*module, scalar, dumper, on_stage);
      stats.schedule_fell_back = true;
    }
    if (!st.ok()) return st;
    stats.lower_ms = ms_since(t0);

    // JIT: translate to LLVM IR, optimize at opt_level, emit machine code.
    t0 = Clock::now();
    Profiler::Span jit_span("llvm codegen", "compile");
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) return compile_error("cannot detect the host target: " + llvm::toString(jtmb.takeError()));
    const auto cg = options.opt_level == 0   ? llvm::CodeGenOptLevel::None
                    : options.opt_level == 1 ? llvm::CodeGenOptLevel::Less
                    : options.opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                             : llvm::CodeGenOptLevel::Aggressive;
    jtmb->setCodeGenOptLevel(cg);
    auto tm = jtmb->createTargetMachine();
    if (!tm) return compile_error("cannot create the host target machine: " + llvm::toString(tm.takeError()));
    auto optimize = mlir::makeOptimizingTransformer(static_cast<unsigned>(options.opt_level), 0, tm->get());
    mlir::ExecutionEngineOptions eo;
    eo.jitCodeGenOptLevel = cg;
    // ExecutionEngineOptions::transformer is a function_ref: keep the callable alive.
    auto transform = [&](llvm::Module* m) -> llvm::Error {
      if (auto e = optimize(m)) return e;
      if (dumper.wants("llvm-ir")) {
        std::string s;
        llvm::raw_string_ostream os(s);
        m->print(os, nullptr);
        dumper.dump("llvm-ir", s, "ll");
      }
      return llvm::Error::success();
    };
    eo.transformer = transform;
    auto engine = mlir::ExecutionEngine::create(*module, eo, std::move(*tm));
    if (!engine) return compile_error("JIT compilation failed: " + llvm::toString(engine.takeError()));
    register_runtime_symbols(**engine);
    (*engine)->initialize();
    auto sym = (*engine)->lookupPacked("_mlir_ciface_main");  // materializes machine code
    if (!sym) return compile_error("JIT lookup of @main failed: " + llvm::toString(sym.takeError()));
    stats.jit_ms = ms_since(t0);
    stats.total_ms = ms_since(t_start);
    log("jit %.2f ms; compiled %s in %.1f ms", stats.jit_ms, traced.signature().to_string().c_str(),
        stats.total_ms);
    // Long compiles say so even when not verbose (as ZML does past a second).
    if (!options.verbose && stats.total_ms > kSlowCompileMs)
      std::fprintf(stderr, "[radix cpu] compiled %s in %.2f s (%s)\n", traced.name().c_str(), stats.total_ms / 1000,
                   stats.summary().c_str());
    return std::unique_ptr<BackendExecutable>(
        new CpuExecutable(std::move(*engine), *sym, traced.signature(), stats));
  }

  Result<void*> allocate(size_t bytes) override {
    size_t n = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, n);
    if (!p) return runtime_error("cpu: out of memory allocating " + std::to_string(bytes) + " bytes");
    return p;
  }
  void deallocate(void* p) override { std::free(p); }
  Status copy_to_device(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return Status();
  }
  Status copy_to_host(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return Status();
  }
};

}  // namespace

std::shared_ptr<Backend> make_cpu_backend() { return std::make_shared<CpuBackend>(); }

}  // namespace radix
