#include "radix/runtime/platform.h"

#include "radix/runtime/profiler.h"

#include "radix/backends/cpu/cpu_backend.h"
#include "radix/trace/traced_module.h"

namespace radix {

Platform Platform::cpu() {
  static std::shared_ptr<Backend> backend = make_cpu_backend();
  return Platform(backend);
}

Result<Executable> Platform::compile(const TracedModule& module, const CompileOptions& options) const {
  Profiler::Span span("compile " + module.name() + " on " + backend_->name(), "compile");
  RADIX_ASSIGN_OR_RETURN(auto exe, backend_->compile(module, options));
  return Executable(backend_, std::move(exe), module.signature());
}

Status Platform::check_host_data(const Shape& shape, DType host, size_t elem_size, size_t count) {
  DType d = shape.dtype();
  if (!host_type_matches(d, host) || elem_size != dtype_size(d))
    return invalid_argument("buffer " + shape.to_string() + " cannot be filled from " +
                            std::string(dtype_name(host)) + " host data");
  if (count != static_cast<size_t>(shape.count()))
    return invalid_argument("buffer " + shape.to_string() + " needs " + std::to_string(shape.count()) +
                            " elements, got " + std::to_string(count));
  return Status();
}

}  // namespace radix
