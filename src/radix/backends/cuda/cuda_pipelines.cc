#include "radix/backends/cuda/cuda_pipelines.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/backends/cuda/cuda_passes.h"
#include "radix/compiler/passes.h"
#include "radix/runtime/profiler.h"
#include "radix/trace/diagnostic_collector.h"

namespace radix {

namespace {

struct Stage {
  const char* name;
  const char* pipeline;
};

const Stage kStages[] = {
    {"custom-calls", "radix-custom-calls{platform=cuda}"},
    // The function cache's callees stay functions (host functions that
    // launch their own kernels): compiled once however often called.
    {"dps", "symbol-dce,radix-results-to-destinations"},
    {"fuse", "radix-fuse-elementwise,linalg-fold-unit-extent-dims,canonicalize,cse,radix-untie-shared-inits"},
    // No buffer-deallocation-pipeline: its ownership bookkeeping (pointer
    // comparisons in host-side arrays, conditional frees) would become tiny
    // kernels and host syncs. A run's temporaries are released together when
    // it ends instead (cuda_runtime.h).
    {"bufferize",
     "eliminate-empty-tensors,"
     "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map "
     "allow-return-allocs-from-loops},"
     "drop-equivalent-buffer-results,canonicalize,cse"},
    // radix-gpu-map runs straight after the loops exist: canonicalize would
    // merge and reshape them first.
    {"gpu-map",
     "radix-strided-copies-to-loops{every-copy=true},@tile-matmul@radix-gpu-parallel-first,radix-gpu-wrap-scalar-ops,convert-linalg-to-parallel-loops,radix-gpu-map,canonicalize,cse,"
     // Constants and index arithmetic move into the kernels (known there:
     // loop bounds unroll, divisions by constants become multiplications).
     "gpu-launch-sink-index-computations,gpu-kernel-outlining,symbol-dce"},
    // Inside kernels, f16 / bf16 arithmetic and math run in f32 (libdevice
    // has no 16-bit functions).
    {"nvvm",
     "nvvm-attach-target{chip=@sm@ O=@opt@ @libdevice@},"
     "gpu.module(lower-affine,convert-scf-to-cf,"
     "func.func(math-extend-to-supported-types),"
     "arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32},arith-expand{include-bf16=true},"
     "expand-strided-metadata,lower-affine,"
     // Integer math (ctpop, ctlz, ...) that has no libdevice form becomes LLVM intrinsics.
     "convert-gpu-to-nvvm,convert-math-to-llvm,canonicalize,cse,reconcile-unrealized-casts)"},
    {"ptx", "gpu-module-to-binary{format=isa}"},
    {"host",
     "lower-affine,convert-scf-to-cf,expand-strided-metadata,lower-affine,"
     "finalize-memref-to-llvm,convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,convert-index-to-llvm,"
     "convert-cf-to-llvm,convert-func-to-llvm,gpu-to-llvm,convert-ub-to-llvm,reconcile-unrealized-casts"},
};

void register_all_once() {
  static bool done = [] {
    mlir::registerAllPasses();
    register_cpu_passes();
    register_cuda_passes();
    return true;
  }();
  (void)done;
}

// Temporaries of the host code are device memory: memref.alloc / dealloc
// lowered to malloc / free now call the runtime's allocator instead.
void use_device_allocator(mlir::ModuleOp module) {
  const std::pair<const char*, const char*> renames[] = {{"malloc", "radix_cuda_alloc"}, {"free", "radix_cuda_free"}};
  for (auto [from, to] : renames) {
    auto fn = module.lookupSymbol<mlir::LLVM::LLVMFuncOp>(from);
    if (!fn) continue;
    if (mlir::failed(mlir::SymbolTable::replaceAllSymbolUses(fn, mlir::StringAttr::get(module.getContext(), to), module)))
      continue;
    fn.setSymName(to);
  }
}

// The PTX of each gpu.binary (kernel module), by name.
std::vector<std::pair<std::string, std::string>> ptx_of(mlir::ModuleOp module) {
  std::vector<std::pair<std::string, std::string>> out;
  module.walk([&](mlir::gpu::BinaryOp bin) {
    for (mlir::Attribute a : bin.getObjects()) {
      auto obj = llvm::dyn_cast<mlir::gpu::ObjectAttr>(a);
      if (obj) out.emplace_back(bin.getSymName().str(), obj.getObject().getValue().str());
    }
  });
  return out;
}

// Kernels calling libdevice functions need the library; say so by name.
bool needs_libdevice(mlir::ModuleOp module) {
  bool needs = false;
  module.walk([&](mlir::gpu::GPUModuleOp gm) {
    gm.walk([&](mlir::Operation* op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "math") needs = true;
    });
  });
  return needs;
}

}  // namespace

void register_cuda_passes() {
  static const bool done = [] {
    mlir::registerPass(create_gpu_map_pass);
    mlir::registerPass(create_wrap_scalar_ops_pass);
    mlir::registerPass(create_tile_matmul_pass);
    mlir::registerPass(create_parallel_first_pass);
    return true;
  }();
  (void)done;
}

const std::vector<std::string>& cuda_stage_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"traced"};
    for (const auto& st : kStages) n.push_back(st.name);
    n.push_back("llvm-ir");
    return n;
  }();
  return names;
}

std::string find_libdevice() {
  std::vector<std::string> roots;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v) roots.emplace_back(v);
  roots.emplace_back("/usr/local/cuda");
  for (const std::string& r : roots) {
    std::filesystem::path p = std::filesystem::path(r) / "nvvm" / "libdevice" / "libdevice.10.bc";
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return p.string();
  }
  return "";
}

Result<std::string> resolve_sm(const std::string& target, const std::string& device_sm) {
  std::string t = target.empty() ? (device_sm.empty() ? "sm_90" : device_sm) : target;
  if (t.rfind("sm_", 0) != 0) t = "sm_" + t;
  const std::string digits = t.substr(3);
  bool ok = digits.size() >= 2 && digits.size() <= 4;
  for (size_t i = 0; i < digits.size(); ++i)
    ok = ok && (std::isdigit(static_cast<unsigned char>(digits[i])) || (i + 1 == digits.size() && digits[i] == 'a'));
  if (!ok) return invalid_argument("CompileOptions.codegen.cuda.target: '" + target + "' is not a GPU architecture "
                                   "(expected sm_<major><minor>, e.g. sm_80 or sm_90)");
  if (std::stoi(digits) < 50)
    return invalid_argument("CompileOptions.codegen.cuda.target: " + t + " is older than sm_50, which LLVM's NVPTX "
                            "target no longer supports");
  return t;
}

Status run_cuda_lowering(mlir::ModuleOp module, const CudaLowering& lowering, StageDumper& dumper,
                         const std::function<void(std::string_view, double)>& on_stage,
                         std::vector<std::string>* kernel_names) {
  register_all_once();
  detail::DiagnosticCollector diags(module.getContext());
  for (const Stage& stage : kStages) {
    auto t0 = std::chrono::steady_clock::now();
    const std::string name = stage.name;
    Profiler::Span span("stage " + name, "compile");
    if (name == "nvvm" && lowering.libdevice.empty() && needs_libdevice(module))
      return compile_error("cuda: kernels of this program call math functions, which need CUDA's libdevice "
                           "(nvvm/libdevice/libdevice.10.bc under $CUDA_HOME, $CUDA_PATH or /usr/local/cuda); "
                           "none was found");
    std::string pipeline = stage.pipeline;
    pipeline = replace_all(pipeline, "@sm@", lowering.sm);
    pipeline = replace_all(pipeline, "@opt@", std::to_string(lowering.opt_level));
    pipeline = replace_all(pipeline, "@tile-matmul@", lowering.tile_matmul ? "radix-gpu-tile-matmul," : "");
    pipeline = replace_all(pipeline, "@libdevice@", lowering.libdevice.empty() ? "" : "l=" + lowering.libdevice);
    RADIX_RETURN_IF_ERROR(run_pass_pipeline(module, "cuda stage '" + name + "'", pipeline, diags));
    if (name == "ptx") {
      for (auto& [kernel, ptx] : ptx_of(module)) {
        dumper.dump_file("ptx", kernel + ".ptx", ptx);
        if (kernel_names) kernel_names->push_back(kernel);
      }
    }
    if (name == "host") use_device_allocator(module);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (on_stage) on_stage(name, ms);
    if (name != "ptx") dumper.dump_module(name, module);
  }
  return Status();
}

}  // namespace radix
