// Executable: a compiled program plus its Signature. Move-only.
//
// call() takes one Buffer per @main argument (model weights first, then the
// call's arguments; see trace/traced_module.h), checks their count, dtypes and
// dims against the signature, allocates the outputs (in the memory kind each
// result asked for, Tensor::to_memory) and runs the program.
//
// Donation (Tensor::reuse_buffer): a Buffer *moved in* for a donated
// parameter becomes the result it is donated to — the program writes that
// result into its memory, with no allocation and no copy — and is left empty
// (using it again is an error naming it). A donated parameter given a Buffer
// that is only lent (an lvalue) is copied first, so the caller's Buffer never
// changes. A Buffer moved in for a parameter that is not donated is released
// after the call.
//
// Ownership: the caller keeps the Buffers it lends and owns the returned
// outputs. Thread-safety: call() is const and may run from several threads
// at once (donated Buffers belong to one caller).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "radix/runtime/backend.h"
#include "radix/runtime/buffer.h"
#include "radix/trace/traced_module.h"

namespace radix {

// One argument of Executable::call: a Buffer lent (read only) or moved in
// (std::move(buffer): the call may consume it; see donation above).
class CallArg {
 public:
  CallArg(const Buffer& b) : buffer_(const_cast<Buffer*>(&b)), moved_(false) {}  // NOLINT: implicit by design
  CallArg(Buffer&& b) : buffer_(&b), moved_(true) {}                             // NOLINT
  const Buffer* buffer() const { return buffer_; }
  Buffer* moved() const { return moved_ ? buffer_ : nullptr; }

 private:
  Buffer* buffer_;
  bool moved_;
};

class Executable {
 public:
  Executable(std::shared_ptr<Backend> backend, std::unique_ptr<BackendExecutable> exe, Signature signature);
  Executable(Executable&&) noexcept;
  Executable& operator=(Executable&&) noexcept;
  ~Executable();

  const Signature& signature() const { return sig_; }
  const CompileStats& stats() const { return exe_->stats; }
  const std::shared_ptr<Backend>& backend() const { return backend_; }

  // All inputs, in signature order. `moved` (empty, or one entry per input)
  // marks the inputs moved in: moved[i] == inputs[i] for those, null for
  // lent ones.
  Result<std::vector<Buffer>> call(std::span<const Buffer* const> inputs,
                                   std::span<Buffer* const> moved = {}) const;
  // Convenience: exe.call({weights, std::move(cache), x}).
  Result<std::vector<Buffer>> call(std::initializer_list<CallArg> inputs) const;

  // Checks `inputs[first..]` against signature inputs [first, first + n).
  Status check_inputs(std::span<const Buffer* const> inputs, size_t first) const;

 private:
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<BackendExecutable> exe_;
  Signature sig_;
  std::string span_name_;  // "execute <signature>", built once
};

}  // namespace radix
