#include "radix/backends/cpu/cpu_pipelines.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "radix/backends/cpu/cpu_passes.h"
#include "radix/compiler/passes.h"
#include "radix/backends/cpu/schedule.h"
#include "radix/runtime/profiler.h"
#include "radix/trace/diagnostic_collector.h"
#include "radix/trace/traced_module.h"

namespace radix {

namespace {
const PipelineStage kStages[] = {
    // Only for programs traced on a mesh of several devices (a shard.grid):
    // each device's part of the program (SPMD), then its collectives as MPI
    // calls. convert-shard-to-mpi leaves memrefs next to tensors, so it runs
    // before bufferization. The partitioner works inside one function and
    // has no model of func.call, so the function cache's calls are inlined
    // first (in sharded programs only).
    {"partition", "inline,symbol-dce,func.func(sharding-propagation,shard-partition),canonicalize,cse"},
    {"collectives", "radix-collectives-to-mpi,convert-shard-to-mpi,canonicalize"},
    // Custom calls (FFI): calls into the runtime with each site's descriptor.
    {"custom-calls", "radix-custom-calls"},
    // Calls (the function cache's private callees) are not inlined: a layer
    // called twelve times is scheduled, lowered and compiled once (cold
    // compile of stories110M's two executables: ~65 s inlined, ~5 s not).
    // Every later stage and Radix pass works on all functions.
    {"dps", "symbol-dce,radix-results-to-destinations"},
    // Unit dims of generics folded away (a keep-dims reduction [r, 1, c] -> [r]):
    // the row-fusion groups of the schedule need every op over the same loops.
    {"fuse", "radix-fuse-elementwise,linalg-fold-unit-extent-dims,canonicalize,cse,radix-untie-shared-inits"},
    // The pipeline runs first, then the generated transform script. No cse
    // here: it would merge the inits that radix-untie-shared-inits separated.
    {"schedule", "radix-materialize-reduction-indices"},
    {"bufferize",
     "radix-fills-into-foralls,radix-outputs-in-place,eliminate-empty-tensors,"
     "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map "
     "allow-return-allocs-from-loops},"
     // A callee's result that is its argument updated in place (a KV cache)
     // is dropped; the caller reads its own buffer.
     "drop-equivalent-buffer-results,"
     // Before deallocation: stack buffers need none.
     "radix-stack-small-buffers,"
     "buffer-deallocation-pipeline,canonicalize,cse,radix-strided-copies-to-loops,radix-scalar-vector-transfers,"
     "radix-half-transposes-as-integers,radix-accumulators-from-fill,"
     // After it: it finds C's fill among the views of the tiles it reads.
     "radix-flat-fills,radix-prefetch-next-row,radix-prefetch-next-tile,radix-prefetch-next-batch,radix-int8-dot-kernels,radix-bf16-dot-kernels,"
     // Again: the kernels' small scratch buffers (freed in their block) go to the stack.
     "radix-stack-small-buffers,"
     // Last: it drops the write prefetches of the outputs it streams.
     // @stream@: the byte threshold (CpuOptions::streaming_store_bytes).
     "radix-streaming-stores{min-bytes=@stream@}"},
    // @avx512@: 1 on AVX-512F targets (exp by vscalefps), else 0; @fma@ 1 on
    // targets with FMA (exp by a floored k).
    {"math", "func.func(math-extend-to-supported-types),radix-math-approximation{avx512=@avx512@ fma=@fma@}"},
    // Threads first: the schedule's scf.forall loops become scf.parallel and
    // then OpenMP parallel regions (LLVM's libomp at run time), each thread
    // running its static share of the iterations (radix-omp-static-chunks).
    // canonicalize inlines the memref.alloca_scope each parallel body is
    // wrapped in when nothing is stack-allocated in it; the others become
    // stack save / restore before convert-scf-to-cf splits their bodies.
    {"lower",
     // @merge@: radix-merge-foralls (CpuOptions::merge_parallel_loops).
     "@merge@scf-forall-to-parallel,convert-scf-to-openmp{num-threads=@threads@},radix-omp-static-chunks,canonicalize,radix-lower-alloca-scopes,"
     "convert-vector-to-scf{full-unroll},convert-linalg-to-loops,"
     "expand-strided-metadata,lower-affine,"
     "func.func(math-extend-to-supported-types,"
     "arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32},"
     "arith-expand{include-bf16=true}),"
     // math before vector: libm calls for vector math (f64 erf, tan, ...) are
     // unrolled into vector.extract / insert, which vector-to-llvm then lowers.
     // Vector reductions (a row's partial sums) may reassociate: a shuffle
     // tree instead of a lane-by-lane chain; their inputs are already
     // reassociated partial sums.
     "convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,convert-vector-to-llvm{reassociate-fp-reductions},"
     // @mpi@: in sharded programs, the mpi dialect's calls into the MPI
     // library for the ABI the module names (dlti.map).
     "finalize-memref-to-llvm,@mpi@convert-arith-to-llvm,"
     "convert-cf-to-llvm,convert-func-to-llvm,convert-ub-to-llvm,convert-openmp-to-llvm,reconcile-unrealized-casts"},
};

void register_all_once();
}  // namespace

void register_cpu_passes() {
  static const bool done = [] {
    register_radix_passes();
    mlir::registerPass(create_math_approximation_pass);
    mlir::registerPass(create_materialize_reduction_indices_pass);
    mlir::registerPass(create_strided_copies_to_loops_pass);
    mlir::registerPass(create_flat_fills_pass);
    mlir::registerPass(create_scalar_vector_transfers_pass);
    mlir::registerPass(create_stack_small_buffers_pass);
    mlir::registerPass(create_half_transposes_pass);
    mlir::registerPass(create_lower_alloca_scopes_pass);
    mlir::registerPass(create_outputs_in_place_pass);
    mlir::registerPass(create_fills_into_foralls_pass);
    mlir::registerPass(create_omp_static_chunks_pass);
    mlir::registerPass(create_accumulators_from_fill_pass);
    mlir::registerPass(create_prefetch_next_row_pass);
    mlir::registerPass(create_prefetch_next_tile_pass);
    mlir::registerPass(create_prefetch_next_batch_pass);
    mlir::registerPass(create_streaming_stores_pass);
    mlir::registerPass(create_int8_dot_kernels_pass);
    mlir::registerPass(create_bf16_dot_kernels_pass);
    mlir::registerPass(create_merge_foralls_pass);
    mlir::registerPass(create_fuse_elementwise_pass);
    mlir::registerPass(create_collectives_to_mpi_pass);
    mlir::registerPass(create_custom_calls_pass);
    return true;
  }();
  (void)done;
}

namespace {
void register_all_once() {
  static bool done = [] {
    mlir::registerAllPasses();
    register_cpu_passes();
    return true;
  }();
  (void)done;
}
}  // namespace

std::span<const PipelineStage> cpu_pipeline_stages() { return kStages; }

const std::vector<std::string>& cpu_stage_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"traced"};
    for (const auto& st : kStages) {
      if (std::string_view(st.name) == "schedule") n.push_back("schedule-script");
      n.push_back(st.name);
    }
    n.push_back("llvm-ir");
    n.push_back("asm");
    return n;
  }();
  return names;
}

namespace {
// The stage's pipeline with @threads@ replaced by the resolved thread count
// (on one thread the schedule emits no scf.forall: the OpenMP passes find
// nothing to convert) and @mpi@ by the mpi dialect's lowering in a sharded
// program (convert-to-llvm fails on a dialect never loaded), @stream@ by the
// streaming-store threshold (0 off x86: the pass emits x86's sfence), @merge@
// by radix-merge-foralls or nothing, @avx512@ and @fma@ by whether the
// target has AVX-512F and FMA.
std::string stage_pipeline(const PipelineStage& stage, const CpuOptions& options, bool partitioned,
                           const Int8Target& target) {
  const std::string threads = std::to_string(resolve_cpu_threads(options.threads));
  std::string p = replace_all(stage.pipeline, "@threads@", threads);
  static const bool x86 = llvm::Triple(llvm::sys::getProcessTriple()).isX86();
  p = replace_all(std::move(p), "@stream@",
                  std::to_string(x86 ? resolve_streaming_store_bytes(options.streaming_store_bytes) : 0));
  p = replace_all(std::move(p), "@merge@",
                  options.merge_parallel_loops
                      ? "radix-merge-foralls{threads=" + threads + "},"
                      : std::string());
  p = replace_all(std::move(p), "@avx512@", target.avx512 ? "1" : "0");
  p = replace_all(std::move(p), "@fma@", target.fma ? "1" : "0");
  return replace_all(std::move(p), "@mpi@", partitioned ? "convert-to-llvm{filter-dialects=mpi}," : "");
}

bool has_grid(mlir::ModuleOp module) {
  for (mlir::Operation& op : module.getBody()->getOperations())
    if (mlir::isa<mlir::shard::GridOp>(op)) return true;
  return false;
}

// True if some op of type Op in the module satisfies `pred`.
template <class Op, class Pred>
bool contains(mlir::ModuleOp module, Pred pred) {
  return module.walk([&](Op op) { return pred(op) ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance(); })
      .wasInterrupted();
}

bool has_custom_calls(mlir::ModuleOp module) {
  return contains<mlir::func::CallOp>(module, [](mlir::func::CallOp c) { return c->hasAttr("radix.custom_call.target"); });
}

bool has_annotations(mlir::ModuleOp module) {
  return contains<mlir::shard::ShardOp>(module, [](mlir::shard::ShardOp) { return true; });
}

// convert-to-llvm lowers the mpi dialect for the ABI the module names.
void set_mpi_implementation(mlir::ModuleOp module) {
  mlir::Attribute a = mlir::parseAttribute("#dlti.map<\"MPI:Implementation\" = \"OpenMPI\">", module.getContext());
  module->setAttr("dlti.map", a);
}

// The partitioned @main takes and returns exactly the shards the runtime
// hands it (the signature's local shapes); anything else is a partitioner
// result Radix cannot run.
Status check_partitioned_main(mlir::ModuleOp module, const Signature& local) {
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!main) return compile_error("partition: the module has no @main");
  auto matches = [](mlir::Type t, const Shape& s) {
    auto rt = mlir::dyn_cast<mlir::RankedTensorType>(t);
    return rt && rt.hasStaticShape() && rt.getShape() == llvm::ArrayRef<int64_t>(s.dims().data(), s.dims().size());
  };
  auto type_str = [](mlir::Type t) {
    std::string s;
    llvm::raw_string_ostream os(s);
    t.print(os);
    return s;
  };
  mlir::FunctionType ft = main.getFunctionType();
  for (size_t i = 0; i < ft.getNumInputs() && i < local.inputs.size(); ++i)
    if (!matches(ft.getInput(static_cast<unsigned>(i)), local.inputs[i]))
      return compile_error("partition: input " + std::to_string(i) + " became " + type_str(ft.getInput(static_cast<unsigned>(i))) +
                           ", not the shard " + local.inputs[i].to_string() + " on " + local.mesh.to_string());
  for (size_t o = 0; o < ft.getNumResults() && o < local.outputs.size(); ++o)
    if (!matches(ft.getResult(static_cast<unsigned>(o)), local.outputs[o]))
      return compile_error("partition: output " + std::to_string(o) + " became " + type_str(ft.getResult(static_cast<unsigned>(o))) +
                           ", not the shard " + local.outputs[o].to_string() + " on " + local.mesh.to_string());
  return Status();
}

// Every collective is an MPI call now; a shard op left over is a
// resharding Radix has no lowering for (all_to_all, reduce_scatter, shift,
// halo updates...): a compile error naming it. The grids go last.
Status finish_collectives(mlir::ModuleOp module) {
  std::string unsupported;
  llvm::SmallVector<mlir::Operation*> grids;
  module.walk([&](mlir::Operation* op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "shard") {
      if (mlir::isa<mlir::shard::GridOp>(op)) grids.push_back(op);
      else if (unsupported.empty()) unsupported = op->getName().getStringRef().str();
    }
  });
  if (!unsupported.empty())
    return compile_error("sharding: this partitioning needs " + unsupported +
                         ", which Radix cannot lower to MPI (supported: element-wise ops and products on split "
                         "axes, all-reduce over a split contracting axis, all-gather to a replicated or "
                         "differently split result)");
  for (mlir::Operation* g : grids) g->erase();
  return Status();
}

Status run_pipeline(mlir::ModuleOp module, const PipelineStage& stage, const CpuOptions& options,
                    detail::DiagnosticCollector& diags, bool partitioned, const Int8Target& target) {
  return run_pass_pipeline(module, "stage '" + std::string(stage.name) + "'",
                           stage_pipeline(stage, options, partitioned, target), diags);
}
}  // namespace

Status run_cpu_lowering(mlir::ModuleOp module, const CpuOptions& options, StageDumper& dumper,
                        const std::function<void(std::string_view, double)>& on_stage, const Signature* local,
                        std::string_view target_features) {
  register_all_once();
  mlir::MLIRContext* ctx = module.getContext();
  detail::DiagnosticCollector diags(ctx);
  const bool partitioned = has_grid(module);
  // The target's x86 extensions: the schedule's kernels and the math stage's exp.
  const Int8Target target = int8_target(target_features);
  for (const PipelineStage& stage : kStages) {
    auto t0 = std::chrono::steady_clock::now();
    std::string name = stage.name;
    Profiler::Span span("stage " + name, "compile");
    if (name == "custom-calls" && !has_custom_calls(module)) continue;
    if (name == "partition" || name == "collectives") {
      // A program traced per device (manual partitioning) has collectives
      // but no annotations: nothing to partition.
      if (!partitioned || (name == "partition" && !has_annotations(module))) continue;
      if (name == "collectives") set_mpi_implementation(module);
      if (Status st = run_pipeline(module, stage, options, diags, partitioned, target); !st.ok()) {
        if (name != "partition") return st;
        return compile_error(
            "sharding: MLIR's partitioner cannot split this program over its mesh (automatic partitioning "
            "covers element-wise ops, transposes, reductions and products; loops, reshapes, slices and gathers "
            "have no sharding rules in MLIR 22). Trace such a program per device instead "
            "(TraceOptions::Partitioning::kManual, with all_reduce). MLIR said:\n" + st.message());
      }
      if (name == "partition" && local) RADIX_RETURN_IF_ERROR(check_partitioned_main(module, *local));
      if (name == "collectives") RADIX_RETURN_IF_ERROR(finish_collectives(module));
    } else if (name == "schedule") {
      if (!options.vectorize) continue;
      RADIX_RETURN_IF_ERROR(run_pipeline(module, stage, options, diags, partitioned, target));
      ScheduleSummary sum;
      Int8Target int8 = target;
      if (!options.int8_kernels) int8.avx2 = int8.vnni = false;
      if (!options.bf16_kernels) int8.bf16 = false;
      std::string script =
          build_cpu_schedule(module, schedule_vector_isa(options.schedule_isa, target_features),
                             resolve_cpu_threads(options.threads), &sum, int8);
      if (!script.empty()) {
        dumper.dump("schedule-script", "// schedule: " + sum.to_string() + "\n" + script);
        RADIX_RETURN_IF_ERROR(apply_schedule(module, script));
      }
    } else {
      if (name == "math" && !options.approximate_math) continue;
      RADIX_RETURN_IF_ERROR(run_pipeline(module, stage, options, diags, partitioned, target));
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (on_stage) on_stage(name, ms);
    dumper.dump_module(name, module);
  }
  return Status();
}

}  // namespace radix
