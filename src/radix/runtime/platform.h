// Platform: a device backend plus the operations users need from it — compile
// a traced module into an Executable, and move data in and out of Buffers.
// Cheap to copy (shares the backend); every method is thread-safe.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "radix/compiler/compile_options.h"
#include "radix/runtime/backend.h"
#include "radix/runtime/buffer.h"
#include "radix/runtime/executable.h"

namespace radix {

class TracedModule;

class Platform {
 public:
  explicit Platform(std::shared_ptr<Backend> backend) : backend_(std::move(backend)) {}
  // The backend registered as `name` ("cpu", "cuda"; see backend_names()),
  // or kNotFound listing the registered ones. A backend that cannot run here
  // (cuda without a GPU or driver) is an error saying why ("no CUDA device:
  // ..."); compile_only() needs no device: use for_compiling(name).
  static Result<Platform> get(const std::string& name);
  // The backend `name` whether or not it can run here: only compile_only()
  // and cache_key() are sure to work on it.
  static Result<Platform> for_compiling(const std::string& name);
  // The embedded CPU backend (LLVM ORC JIT); always registered.
  static Platform cpu();
  // NVIDIA GPU `ordinal` through the CUDA driver (loaded at run time):
  // kNotFound "no CUDA device: <why>" without a driver or a device.
  static Result<Platform> cuda(int ordinal = 0);

  std::string name() const { return backend_->name(); }
  const std::shared_ptr<Backend>& backend() const { return backend_; }

  // Compiles `module` for this backend. With options.cache_dir set, looks
  // the program up in the on-disk executable cache first (key: the module's
  // bytecode, the backend, its resolved target and code-generating options,
  // Radix's version and the hash of this libradix build) and stores it there
  // after a miss; a corrupt, truncated
  // or foreign entry is reported (verbose) and replaced. Executable::stats()
  // says what happened. With options.diagnostics.dump_dir set, writes
  // <dump_dir>/<backend>/<name>_<key>/module.mlir and the dumped stages.
  // Thread-safe: one traced module may be compiled from several threads.
  Result<Executable> compile(const TracedModule& module, const CompileOptions& options = {}) const;
  // Lowers and code-generates `module` without loading or running it, so it
  // works without a device (CUDA: the kernels' PTX; dump them with
  // options.diagnostics.dump = {"ptx"} and a dump_dir). Returns the timings.
  Result<CompileStats> compile_only(const TracedModule& module, const CompileOptions& options = {}) const;
  // Loads a custom-call plugin: a shared library whose
  // radix_ffi_plugin_init(api) registers its handlers (radix/ffi.h). The
  // handlers serve every platform they were registered for.
  Status load_plugin(const std::string& path) const;
  // The executable-cache key compile() would use (16 hex digits).
  Result<std::string> cache_key(const TracedModule& module, const CompileOptions& options = {}) const;

  // Host -> device. `data.size()` must equal shape.count() and T match the
  // dtype (uint8_t for bool, uint16_t raw bits for f16 / bf16).
  template <class T>
  Result<Buffer> buffer(const Shape& shape, std::span<const T> data) const;
  template <class T>
  Result<Buffer> buffer(const Shape& shape, const std::vector<T>& data) const {
    return buffer(shape, std::span<const T>(data));
  }
  template <class T, size_t N>
  Result<Buffer> buffer(const Shape& shape, const std::array<T, N>& data) const {
    return buffer(shape, std::span<const T>(data));
  }
  template <class T>
  Result<Buffer> buffer(const Shape& shape, std::initializer_list<T> data) const {
    return buffer(shape, std::span<const T>(data.begin(), data.size()));
  }
  // A scalar (rank-0) buffer.
  template <class T>
  Result<Buffer> scalar(T value) const { return buffer(Shape(dtype_v<T>), std::span<const T>(&value, 1)); }
  Result<Buffer> bytes(const Shape& shape, std::span<const std::byte> data) const {
    return Buffer::from_bytes(backend_, shape, data);
  }

 private:
  // This compile's dump folder (created, with module.mlir), or "" for none.
  Result<std::string> dump_folder(const TracedModule& module, const CompileOptions& options, uint64_t key) const;
  static Status check_host_data(const Shape& shape, DType host, size_t elem_size, size_t count);
  std::shared_ptr<Backend> backend_;
};

template <class T>
Result<Buffer> Platform::buffer(const Shape& shape, std::span<const T> data) const {
  static_assert(!std::is_same_v<T, bool>, "use uint8_t for bool buffers");
  if (Status s = check_host_data(shape, dtype_v<T>, sizeof(T), data.size()); !s.ok()) return s;
  return Buffer::from_bytes(backend_, shape, std::as_bytes(data));
}

}  // namespace radix
