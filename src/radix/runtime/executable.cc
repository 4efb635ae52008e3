#include "radix/runtime/executable.h"

#include <cstdio>

#include "llvm/ADT/SmallVector.h"

#include "radix/runtime/ffi_registry.h"
#include "radix/runtime/profiler.h"

namespace radix {

Executable::Executable(std::shared_ptr<Backend> backend, std::unique_ptr<BackendExecutable> exe, Signature signature)
    : backend_(std::move(backend)), exe_(std::move(exe)), sig_(std::move(signature)),
      span_name_("execute " + sig_.to_string()) {}
Executable::Executable(Executable&&) noexcept = default;
Executable& Executable::operator=(Executable&&) noexcept = default;
Executable::~Executable() = default;

Status Executable::check_inputs(std::span<const Buffer* const> inputs, size_t first) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t k = first + i;
    const Buffer* b = inputs[i];
    const Shape& want = sig_.inputs[k];
    // Named only on error: a model's call checks hundreds of weights, and
    // building each name cost string allocations on every call.
    auto what = [&] {
      std::string w = "argument " + std::to_string(k);
      if (k < sig_.input_names.size() && !sig_.input_names[k].empty()) w += " (" + sig_.input_names[k] + ")";
      return w;
    };
    if (!b || !b->valid())
      return invalid_argument(what() + ": expected " + want.to_string() +
                              ", got an empty Buffer (default-constructed, or moved from: e.g. donated to an "
                              "earlier call, whose result now owns its memory)");
    if (b->dtype() != want.dtype() || !b->shape().same_dims(want))
      return invalid_argument(what() + ": expected " + want.to_string() + ", got " + b->shape().to_string());
    // Tags are checked where both sides carry one: a [o, d] buffer for a
    // [d, o] parameter of equal sizes is a transposed weight, not a match.
    for (int a = 0; a < want.rank(); ++a) {
      Tag bt = b->shape().tag(a), wt = want.tag(a);
      if (!bt.empty() && !wt.empty() && !(bt == wt))
        return invalid_argument(what() + ": expected " + want.to_string() + ", got " + b->shape().to_string() +
                                " (axis " + std::to_string(a) + " is tagged '" + std::string(bt.name()) +
                                "', the parameter's '" + std::string(wt.name()) + "')");
    }
    if (b->backend() != backend_.get())
      return invalid_argument(what() + ": buffer lives on another platform (" + b->backend()->name() + ")");
  }
  return Status();
}

Result<std::vector<Buffer>> Executable::call(std::span<const Buffer* const> inputs,
                                             std::span<Buffer* const> moved) const {
  if (inputs.size() != sig_.inputs.size())
    return invalid_argument("executable " + sig_.to_string() + " takes " + std::to_string(sig_.inputs.size()) +
                            " buffers, got " + std::to_string(inputs.size()));
  if (!moved.empty() && moved.size() != inputs.size())
    return invalid_argument("Executable::call: " + std::to_string(moved.size()) + " 'moved' entries for " +
                            std::to_string(inputs.size()) + " inputs");
  RADIX_RETURN_IF_ERROR(check_inputs(inputs, 0));
  auto moved_in = [&](size_t i) -> Buffer* { return moved.empty() ? nullptr : moved[i]; };
  // A Buffer moved in is consumed: it may not also be lent or moved as
  // another argument (the program would read memory it overwrites).
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!moved_in(i)) continue;
    for (size_t j = 0; j < inputs.size(); ++j)
      if (j != i && inputs[j] == moved_in(i))
        return invalid_argument("argument " + std::to_string(i) + " (" + inputs[i]->shape().to_string() +
                                ") is moved into the call and also passed as argument " + std::to_string(j));
  }

  // On the stack for the usual argument counts: no allocation per call.
  llvm::SmallVector<const Buffer*, 64> in(inputs.begin(), inputs.end());
  llvm::SmallVector<void*, 64> in_ptrs, out_ptrs;
  std::vector<Buffer> outs;
  outs.reserve(sig_.outputs.size());
  for (size_t o = 0; o < sig_.outputs.size(); ++o) {
    const int a = o < sig_.output_donations.size() ? sig_.output_donations[o] : -1;
    const MemoryKind kind = o < sig_.output_memory_kinds.size() ? sig_.output_memory_kinds[o] : MemoryKind::kDevice;
    if (a >= 0 && moved_in(static_cast<size_t>(a))) {
      // Donated: the output is the input's memory.
      Buffer b = std::move(*moved_in(static_cast<size_t>(a)));
      b.shape_ = sig_.outputs[o];  // same dtype and dims; the result's tags
      outs.push_back(std::move(b));
    } else {
      RADIX_ASSIGN_OR_RETURN(Buffer b, Buffer::allocate(backend_, sig_.outputs[o], kind));
      if (a >= 0)  // donated parameter but lent buffer: work on a copy
        RADIX_RETURN_IF_ERROR(backend_->copy_on_device(b.device_ptr(), in[a]->device_ptr(), b.byte_size()));
      outs.push_back(std::move(b));
    }
    if (a >= 0) in[static_cast<size_t>(a)] = &outs.back();
  }
  for (const Buffer* b : in) in_ptrs.push_back(b->device_ptr());
  for (const Buffer& b : outs) out_ptrs.push_back(b.device_ptr());
  {
    Profiler::Span span(span_name_, "execute");
    ffi::detail::clear_run_error();
    RADIX_RETURN_IF_ERROR(exe_->execute(in_ptrs, out_ptrs));
    // A custom call that failed: the run's results are discarded (and
    // freed); the handler's code and message reach the caller.
    RADIX_RETURN_IF_ERROR(ffi::detail::take_run_error());
  }
  // Moved-in Buffers not donated to a result are the caller's no more.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (Buffer* m = moved_in(i); m && m->valid()) *m = Buffer();
  return outs;
}

Result<std::vector<Buffer>> Executable::call(std::initializer_list<CallArg> inputs) const {
  std::vector<const Buffer*> ptrs;
  std::vector<Buffer*> moved;
  for (const CallArg& a : inputs) {
    ptrs.push_back(a.buffer());
    moved.push_back(a.moved());
  }
  return call(std::span<const Buffer* const>(ptrs), std::span<Buffer* const>(moved));
}

}  // namespace radix
