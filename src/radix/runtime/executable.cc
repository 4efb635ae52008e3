#include "radix/runtime/executable.h"

#include <cstdio>

#include "radix/runtime/profiler.h"

namespace radix {

Executable::Executable(std::shared_ptr<Backend> backend, std::unique_ptr<BackendExecutable> exe, Signature signature)
    : backend_(std::move(backend)), exe_(std::move(exe)), sig_(std::move(signature)) {}
Executable::Executable(Executable&&) noexcept = default;
Executable& Executable::operator=(Executable&&) noexcept = default;
Executable::~Executable() = default;

Status Executable::check_inputs(std::span<const Buffer* const> inputs, size_t first) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t k = first + i;
    const Buffer* b = inputs[i];
    const Shape& want = sig_.inputs[k];
    std::string what = "argument " + std::to_string(k);
    if (k < sig_.input_names.size() && !sig_.input_names[k].empty()) what += " (" + sig_.input_names[k] + ")";
    if (!b || !b->valid()) return invalid_argument(what + ": expected " + want.to_string() + ", got an empty Buffer");
    if (b->dtype() != want.dtype() || !b->shape().same_dims(want))
      return invalid_argument(what + ": expected " + want.to_string() + ", got " + b->shape().to_string());
    // Tags are checked where both sides carry one: a [o, d] buffer for a
    // [d, o] parameter of equal sizes is a transposed weight, not a match.
    for (int a = 0; a < want.rank(); ++a) {
      Tag bt = b->shape().tag(a), wt = want.tag(a);
      if (!bt.empty() && !wt.empty() && !(bt == wt))
        return invalid_argument(what + ": expected " + want.to_string() + ", got " + b->shape().to_string() +
                                " (axis " + std::to_string(a) + " is tagged '" + std::string(bt.name()) +
                                "', the parameter's '" + std::string(wt.name()) + "')");
    }
    if (b->backend() != backend_.get())
      return invalid_argument(what + ": buffer lives on another platform (" + b->backend()->name() + ")");
  }
  return Status();
}

Result<std::vector<Buffer>> Executable::call(std::span<const Buffer* const> inputs) const {
  if (inputs.size() != sig_.inputs.size())
    return invalid_argument("executable " + sig_.to_string() + " takes " + std::to_string(sig_.inputs.size()) +
                            " buffers, got " + std::to_string(inputs.size()));
  RADIX_RETURN_IF_ERROR(check_inputs(inputs, 0));
  std::vector<Buffer> outs;
  outs.reserve(sig_.outputs.size());
  std::vector<void*> in_ptrs, out_ptrs;
  for (const Buffer* b : inputs) in_ptrs.push_back(b->device_ptr());
  for (const Shape& s : sig_.outputs) {
    RADIX_ASSIGN_OR_RETURN(Buffer o, Buffer::allocate(backend_, s));
    out_ptrs.push_back(o.device_ptr());
    outs.push_back(std::move(o));
  }
  {
    Profiler::Span span("execute " + sig_.to_string(), "execute");
    RADIX_RETURN_IF_ERROR(exe_->execute(in_ptrs, out_ptrs));
  }
  return outs;
}

Result<std::vector<Buffer>> Executable::call(
    std::initializer_list<std::reference_wrapper<const Buffer>> inputs) const {
  std::vector<const Buffer*> ptrs;
  for (const Buffer& b : inputs) ptrs.push_back(&b);
  return call(std::span<const Buffer* const>(ptrs));
}

}  // namespace radix
