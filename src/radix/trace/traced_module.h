// TracedModule: the output of tracing — an MLIR module holding func.func @main
// plus its Signature. Owns the CompilationContext (and so the MLIRContext) the
// module lives in. Move-only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "radix/core/memory_kind.h"
#include "radix/core/mesh.h"
#include "radix/core/shape.h"

namespace mlir { class ModuleOp; class MLIRContext; }

namespace radix {

class CompilationContext;

// The calling convention of @main. Arguments are the model's tensors (in the
// order the model's visit() lists them, depth first) followed by the call's
// arguments (parameter by parameter, each flattened the same way). Results
// are the returned tensors, flattened in the same order.
struct Signature {
  std::vector<Shape> inputs;
  std::vector<std::string> input_names;  // "layers.0.w", "arg0", ...
  size_t n_model = 0;                    // the first n_model inputs are weights
  std::vector<Shape> outputs;
  std::vector<int> output_donations;     // per output: donated input index or -1
  std::vector<MemoryKind> output_memory_kinds;  // per output: where to allocate it (Tensor::to_memory)
  // The devices the program is partitioned over. With several, inputs and
  // outputs are this device's shards: each partitioned dim is the global dim
  // divided by its mesh axis' size (Mesh::local_shape), partitions kept.
  Mesh mesh;

  size_t n_args() const { return inputs.size() - n_model; }
  std::string to_string() const;         // "(f32[4,8] w, f32[2,4] arg0) -> (f32[2,8])"
};

class TracedModule {
 public:
  TracedModule(std::unique_ptr<CompilationContext> ctx, Signature sig);
  TracedModule(TracedModule&&) noexcept;
  TracedModule& operator=(TracedModule&&) noexcept;
  ~TracedModule();

  const Signature& signature() const { return sig_; }
  const std::string& name() const;
  // Textual MLIR of the module (generic form off: pretty, verified form).
  std::string to_string() const;
  // The module as MLIR bytecode: what backends compile (each parses it into
  // a context of its own) and what the executable-cache key hashes. Written
  // once, on first use. Thread-safe, like to_string().
  const std::string& bytecode() const;
  mlir::ModuleOp module() const;
  mlir::MLIRContext* mlir_context() const;
  CompilationContext& context() const { return *ctx_; }

 private:
  std::unique_ptr<CompilationContext> ctx_;
  Signature sig_;
};

}  // namespace radix
