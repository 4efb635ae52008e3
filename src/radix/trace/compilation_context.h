// CompilationContext: owns everything tracing needs — the MLIRContext (with the
// dialects Radix emits), the module being built, the builder and its block
// stack, and the canonicalize -> cse -> canonicalize clean-up pipeline.
//
// Threading: a context is used by one thread at a time. While a function is
// traced, the context is *active* on that thread (CompilationContext::current);
// activations nest as a stack, and every op checks that its operands belong to
// the active context, so tensors from two traces are never silently mixed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "radix/core/mesh.h"
#include "radix/core/shape.h"
#include "radix/core/status.h"
#include "radix/trace/tensor.h"
#include "radix/trace/traced_module.h"

namespace mlir { class MLIRContext; class OpBuilder; class ModuleOp; class Location; class Block; class Operation; }

namespace radix {

// One func.func emitted from a Body (see CompilationContext::emit_function).
struct EmittedFunction {
  mlir::Operation* op = nullptr;          // the mlir::func::FuncOp
  std::vector<Shape> outputs;             // result shapes, tags included
  std::vector<int> output_donations;      // per result: donated argument or -1
  std::vector<MemoryKind> output_memory_kinds;
};

// A function call() traced into the module, cached per context: the key is
// the callee's identity plus its arguments' shapes and plain values.
struct CachedFunction {
  std::string symbol;                     // the private func.func's name
  EmittedFunction fn;                     // donations name the callee's parameters
  std::shared_ptr<const void> result;     // the callee's typed result from its one trace
};

struct TraceOptions {
  std::string name = "radix";         // module name (sym_name)
  bool canonicalize = true;           // run canonicalize,cse,canonicalize after emission
  // The devices the program is partitioned over (core/mesh.h). With more
  // than one, arguments are split as their Shapes' partitions say, results
  // are replicated unless shard() pins them, and the compiled executable is
  // one device's part of the program (see the README's "Sharding").
  Mesh mesh;
  // How the program splits over `mesh`:
  //  * kAutomatic: traced on whole tensors; MLIR's partitioner derives each
  //    device's program and its collectives from the partitions.
  //  * kManual: traced as one device's program (JAX's shard_map): argument
  //    shapes are the device's own, nothing is annotated, and the program
  //    communicates through explicit collectives (all_reduce).
  enum class Partitioning { kAutomatic, kManual };
  Partitioning partitioning = Partitioning::kAutomatic;
};

class CompilationContext {
 public:
  explicit CompilationContext(const TraceOptions& options = {});
  ~CompilationContext();
  CompilationContext(const CompilationContext&) = delete;
  CompilationContext& operator=(const CompilationContext&) = delete;

  // The active context on this thread, or nullptr.
  static CompilationContext* current();
  // The active context; TraceError naming `what` if none is active.
  static CompilationContext& require_current(const char* what);

  // RAII activation; nests.
  class Activation {
   public:
    explicit Activation(CompilationContext& ctx);
    ~Activation();
    Activation(const Activation&) = delete;
    Activation& operator=(const Activation&) = delete;
   private:
    CompilationContext* ctx_;
  };

  const TraceOptions& options() const { return options_; }
  // Traced on whole tensors for MLIR's partitioner: a mesh of several
  // devices and TraceOptions::Partitioning::kAutomatic.
  bool automatic_partitioning() const {
    return !options_.mesh.single_device() && options_.partitioning == TraceOptions::Partitioning::kAutomatic;
  }
  mlir::MLIRContext& mlir_context();
  mlir::OpBuilder& builder();
  mlir::ModuleOp module();
  mlir::Location loc();
  // Module text / bytecode, serialized under a lock (readers on several
  // threads at once are fine); see TracedModule.
  std::string module_text();
  const std::string& module_bytecode();
  uint64_t next_id() { return next_id_++; }
  // Identifies the function being traced: drawn from a process-wide counter
  // when a function's emission starts (@main and each call()ee get their
  // own), so no two traces (even of contexts that reuse one address) share
  // it. Tensors carry it; ops refuse tensors of other traces.
  uint64_t trace_id() const { return trace_id_; }

  // Block stack: ops are emitted at the end of the top block.
  void push_block(mlir::Block* block);
  void pop_block(mlir::Block* block);
  mlir::Block* current_block() const;

  // Body of a traced function: receives one Tensor per input (model tensors
  // then call arguments, as block arguments of @main) and returns the result
  // tensors. Throws TraceError on misuse.
  using Body = std::function<std::vector<Tensor>(std::span<const Tensor> inputs)>;

  // Emits func.func @name(inputs...) -> (results...), public or private, by
  // running body on one Tensor per argument. A function emitted while
  // another is being traced (a call()ee) lands before that one, at module
  // level; the builder, block stack and trace id are the caller's again on
  // return. The body gets a fresh trace id, so the caller's tensors are
  // refused inside it (func.func is isolated from above). Writes no
  // attributes. Throws TraceError (the half-built function is erased).
  EmittedFunction emit_function(const std::string& name, bool is_public, const std::vector<Shape>& inputs,
                                const Body& body);

  // Emits func.func @main(inputs...) -> (results...) into this context's
  // module with its attributes (names, donations, memory kinds), verifies
  // it, runs the clean-up pipeline. Errors (TraceError thrown by ops,
  // verifier failures) come back as a Status.
  Status emit_main(const std::vector<Shape>& inputs, const std::vector<std::string>& input_names,
                   size_t n_model, const Body& body, Signature* signature);

  // The call() cache of this module (see api/call.h); nullptr if absent.
  const CachedFunction* cached_function(const std::string& key) const;
  const CachedFunction& add_cached_function(const std::string& key, CachedFunction f);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  TraceOptions options_;
  uint64_t next_id_ = 1;
  uint64_t trace_id_;
  std::vector<mlir::Block*> blocks_;
  std::unordered_map<std::string, CachedFunction> functions_;
};

// Traces `body` into a fresh module: the non-template core of compile_fn /
// compile_model.
Result<TracedModule> trace(const TraceOptions& options, const std::vector<Shape>& inputs,
                           const std::vector<std::string>& input_names, size_t n_model,
                           const CompilationContext::Body& body);

}  // namespace radix
