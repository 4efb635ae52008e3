// Executable: a compiled program plus its Signature. Move-only.
//
// call() takes one Buffer per @main argument (model weights first, then the
// call's arguments; see trace/traced_module.h), checks their count, dtypes and
// dims against the signature, allocates the outputs and runs the program.
//
// Ownership: the caller keeps its input Buffers (they are only read) and owns
// the returned outputs. Thread-safety: call() is const and may run from
// several threads at once.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "radix/runtime/backend.h"
#include "radix/runtime/buffer.h"
#include "radix/trace/traced_module.h"

namespace radix {

class Executable {
 public:
  Executable(std::shared_ptr<Backend> backend, std::unique_ptr<BackendExecutable> exe, Signature signature);
  Executable(Executable&&) noexcept;
  Executable& operator=(Executable&&) noexcept;
  ~Executable();

  const Signature& signature() const { return sig_; }
  const CompileStats& stats() const { return exe_->stats; }
  const std::shared_ptr<Backend>& backend() const { return backend_; }

  // All inputs, in signature order.
  Result<std::vector<Buffer>> call(std::span<const Buffer* const> inputs) const;
  // Convenience: inputs as a braced list of references.
  Result<std::vector<Buffer>> call(std::initializer_list<std::reference_wrapper<const Buffer>> inputs) const;

  // Checks `inputs[first..]` against signature inputs [first, first + n).
  Status check_inputs(std::span<const Buffer* const> inputs, size_t first) const;

 private:
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<BackendExecutable> exe_;
  Signature sig_;
};

}  // namespace radix
