#include "radix/compiler/pipelines.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "radix/compiler/passes.h"
#include "radix/compiler/schedule.h"
#include "radix/runtime/profiler.h"
#include "radix/trace/diagnostic_collector.h"

namespace radix {

namespace {
const PipelineStage kStages[] = {
    {"dps", "radix-results-to-destinations"},
    {"fuse", "func.func(linalg-fuse-elementwise-ops),canonicalize,cse,radix-untie-shared-inits"},
    // The pipeline runs first, then the generated transform script. No cse
    // here: it would merge the inits that radix-untie-shared-inits separated.
    {"schedule", "radix-materialize-reduction-indices"},
    {"bufferize",
     "eliminate-empty-tensors,"
     "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map "
     "allow-return-allocs-from-loops},"
     "buffer-deallocation-pipeline,canonicalize,cse,radix-strided-copies-to-loops"},
    {"math", "func.func(math-extend-to-supported-types),radix-math-approximation"},
    {"lower",
     "convert-vector-to-scf{full-unroll},convert-linalg-to-loops,"
     "expand-strided-metadata,lower-affine,"
     "func.func(math-extend-to-supported-types,"
     "arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32},"
     "arith-expand{include-bf16=true}),"
     // math before vector: libm calls for vector math (f64 erf, tan, ...) are
     // unrolled into vector.extract / insert, which vector-to-llvm then lowers.
     "convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,convert-vector-to-llvm,"
     "finalize-memref-to-llvm,convert-arith-to-llvm,"
     "convert-cf-to-llvm,convert-func-to-llvm,convert-ub-to-llvm,reconcile-unrealized-casts"},
};

void register_all_once() {
  static bool done = [] {
    mlir::registerAllPasses();
    register_radix_passes();
    return true;
  }();
  (void)done;
}
}  // namespace

std::span<const PipelineStage> cpu_pipeline_stages() { return kStages; }

namespace {
// Every name CompileOptions::dump accepts, in pipeline order.
std::vector<std::string_view> stage_names() {
  std::vector<std::string_view> names = {"traced"};
  for (const auto& st : kStages) {
    if (std::string_view(st.name) == "schedule") names.push_back("schedule-script");
    names.push_back(st.name);
  }
  names.insert(names.end(), {"llvm-ir", "all"});
  return names;
}
}  // namespace

std::string known_stages() {
  std::string s;
  for (std::string_view n : stage_names()) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

bool is_known_stage(std::string_view name) {
  for (std::string_view n : stage_names())
    if (n == name) return true;
  return false;
}

bool StageDumper::wants(std::string_view stage) const {
  for (const auto& d : options_.dump)
    if (d == stage || d == "all") return true;
  return false;
}

void StageDumper::dump(std::string_view stage, std::string_view text, std::string_view ext) {
  if (!wants(stage)) return;
  ++counter_;
  if (options_.dump_dir.empty()) {
    std::fprintf(stderr, "// ----- radix stage: %.*s -----\n%.*s\n", static_cast<int>(stage.size()), stage.data(),
                 static_cast<int>(text.size()), text.data());
    return;
  }
  std::filesystem::create_directories(options_.dump_dir);
  char prefix[8];
  std::snprintf(prefix, sizeof(prefix), "%02d-", counter_);
  std::filesystem::path p = std::filesystem::path(options_.dump_dir) /
                            (std::string(prefix) + std::string(stage) + "." + std::string(ext));
  std::ofstream(p) << text;
}

void StageDumper::dump_module(std::string_view stage, mlir::ModuleOp module) {
  if (!wants(stage)) return;
  std::string s;
  llvm::raw_string_ostream os(s);
  module.print(os);
  dump(stage, s);
}

namespace {
Status run_pipeline(mlir::ModuleOp module, const PipelineStage& stage, detail::DiagnosticCollector& diags) {
  const std::string name = stage.name;
  mlir::PassManager pm = mlir::PassManager::on<mlir::ModuleOp>(module.getContext());
  if (mlir::failed(mlir::parsePassPipeline(stage.pipeline, pm, llvm::errs())))
    return compile_error("stage '" + name + "': pass pipeline does not parse: " + stage.pipeline);
  if (mlir::failed(pm.run(module)))
    return compile_error("stage '" + name + "' (" + stage.pipeline + ") failed:\n" + diags.text());
  return Status();
}
}  // namespace

Status run_cpu_lowering(mlir::ModuleOp module, const CompileOptions& options, StageDumper& dumper,
                        const std::function<void(std::string_view, double)>& on_stage) {
  register_all_once();
  mlir::MLIRContext* ctx = module.getContext();
  detail::DiagnosticCollector diags(ctx);
  for (const PipelineStage& stage : kStages) {
    auto t0 = std::chrono::steady_clock::now();
    std::string name = stage.name;
    Profiler::Span span("stage " + name, "compile");
    if (name == "schedule") {
      if (!options.vectorize) continue;
      RADIX_RETURN_IF_ERROR(run_pipeline(module, stage, diags));
      ScheduleSummary sum;
      std::string script = build_cpu_schedule(module, options.schedule_isa, &sum);
      if (!script.empty()) {
        dumper.dump("schedule-script", "// schedule: " + sum.to_string() + "\n" + script);
        RADIX_RETURN_IF_ERROR(apply_schedule(module, script));
      }
    } else {
      if (name == "math" && !options.approximate_math) continue;
      RADIX_RETURN_IF_ERROR(run_pipeline(module, stage, diags));
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (on_stage) on_stage(name, ms);
    dumper.dump_module(name, module);
  }
  return Status();
}

}  // namespace radix
