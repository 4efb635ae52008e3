#include "radix/runtime/platform.h"

#include "radix/runtime/ffi_registry.h"

#include <chrono>
#include <iterator>

#include <dlfcn.h>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "radix/backends/cuda/cuda_backend.h"
#include "radix/runtime/executable_cache.h"
#include "radix/runtime/profiler.h"
#include "radix/trace/traced_module.h"

#ifndef RADIX_VERSION
#define RADIX_VERSION "dev"
#endif

namespace radix {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// This build of libradix, as the hash of its own file: any rebuild (a
// changed pass, schedule or emitter) makes new keys, so a development build
// never loads code an older build of the same version compiled.
const std::string& build_id() {
  static const std::string id = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&build_id), &info) || !info.dli_fname) return std::string("unknown");
    std::ifstream f(info.dli_fname, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    return CacheKey::hex(xxhash64(bytes));
  }();
  return id;
}

// The seeds' computeModuleHash: everything that decides the native code.
uint64_t module_key(const Backend& backend, const TracedModule& module, const CompileOptions& options) {
  CacheKey key;
  key.add("radix", RADIX_VERSION)
      .add("build", build_id())
      .add("module", module.bytecode())
      .add("backend", backend.name())
      .add("codegen", backend.codegen_fingerprint(options));
  return key.digest();
}
}  // namespace

Result<Platform> Platform::get(const std::string& name) {
  RADIX_ASSIGN_OR_RETURN(std::shared_ptr<Backend> b, backend_by_name(name));
  RADIX_RETURN_IF_ERROR(b->available());
  return Platform(std::move(b));
}

Result<Platform> Platform::for_compiling(const std::string& name) {
  RADIX_ASSIGN_OR_RETURN(std::shared_ptr<Backend> b, backend_by_name(name));
  return Platform(std::move(b));
}

Result<Platform> Platform::cuda(int ordinal) {
  if (ordinal == 0) return get("cuda");
  std::shared_ptr<Backend> b = cuda_backend(ordinal);
  RADIX_RETURN_IF_ERROR(b->available());
  return Platform(std::move(b));
}

Platform Platform::cpu() {
  static Platform p = [] {
    auto r = get("cpu");
    if (!r.ok()) {
      std::fprintf(stderr, "radix: %s\n", r.status().to_string().c_str());
      std::abort();  // libradix always carries the cpu backend: this is a broken build
    }
    return std::move(r).value();
  }();
  return p;
}

Result<std::string> Platform::cache_key(const TracedModule& module, const CompileOptions& options) const {
  RADIX_RETURN_IF_ERROR(backend_->check_options(options));
  return CacheKey::hex(module_key(*backend_, module, options));
}

Result<std::string> Platform::dump_folder(const TracedModule& module, const CompileOptions& options, uint64_t key) const {
  if (options.diagnostics.dump_dir.empty()) return std::string();
  std::filesystem::path dir = std::filesystem::path(options.diagnostics.dump_dir) / backend_->name() /
                              (module.name() + "_" + CacheKey::hex(key));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status(ErrorCode::kIoError, "cannot create the dump folder " + dir.string() + ": " + ec.message());
  std::ofstream(dir / "module.mlir") << module.to_string();
  return dir.string();
}

Result<CompileStats> Platform::compile_only(const TracedModule& module, const CompileOptions& options) const {
  Profiler::Span span("compile (only) " + module.name() + " on " + backend_->name(), "compile");
  RADIX_RETURN_IF_ERROR(backend_->check_options(options));
  const uint64_t key = module_key(*backend_, module, options);
  CompileJob job{module.name(), module.bytecode(), &module.signature(), &options, ""};
  RADIX_ASSIGN_OR_RETURN(job.dump_folder, dump_folder(module, options, key));
  return backend_->compile_only(job);
}

Result<Executable> Platform::compile(const TracedModule& module, const CompileOptions& options) const {
  Profiler::Span span("compile " + module.name() + " on " + backend_->name(), "compile");
  RADIX_RETURN_IF_ERROR(backend_->check_options(options));
  // A backend that cannot run here says why before any work.
  RADIX_RETURN_IF_ERROR(backend_->available());
  const bool verbose = options.diagnostics.verbose;
  const uint64_t key = module_key(*backend_, module, options);
  CompileJob job{module.name(), module.bytecode(), &module.signature(), &options, ""};
  RADIX_ASSIGN_OR_RETURN(job.dump_folder, dump_folder(module, options, key));

  std::optional<ExecutableCache> cache;
  CompileStats::Cache outcome = CompileStats::Cache::kOff;
  if (!options.cache_dir.empty()) {
    cache.emplace(options.cache_dir);
    auto t0 = std::chrono::steady_clock::now();
    CacheLookup found;
    {
      Profiler::Span lookup_span("cache lookup " + CacheKey::hex(key), "cache");
      found = cache->load(key);
    }
    outcome = CompileStats::Cache::kMiss;
    if (found.kind == CacheLookup::Kind::kHit) {
      Profiler::Span load_span("cache load " + CacheKey::hex(key), "cache");
      auto loaded = backend_->load(found.payload, job);
      if (loaded.ok()) {
        std::unique_ptr<BackendExecutable> exe = std::move(loaded).value();
        exe->stats.cache = CompileStats::Cache::kHit;
        exe->stats.cache_load_ms = ms_since(t0);
        exe->stats.cache_entry = found.path;
        exe->stats.dump_folder = job.dump_folder;
        if (verbose)
          std::fprintf(stderr, "[radix] cache hit %s (%.1f ms)\n", found.path.c_str(), exe->stats.cache_load_ms);
        return Executable(backend_, std::move(exe), module.signature());
      }
      found.kind = CacheLookup::Kind::kRejected;
      found.reason = found.path + ": " + loaded.status().message();
    }
    if (found.kind == CacheLookup::Kind::kRejected) {
      outcome = CompileStats::Cache::kRejected;
      if (verbose) std::fprintf(stderr, "[radix] cache entry rejected, recompiling: %s\n", found.reason.c_str());
      cache->remove(key);
    } else if (verbose) {
      std::fprintf(stderr, "[radix] cache miss %s\n", found.path.c_str());
    }
  }

  RADIX_ASSIGN_OR_RETURN(std::unique_ptr<BackendExecutable> exe, backend_->compile(job));
  exe->stats.cache = outcome;
  if (cache) {
    std::string bytes = exe->serialize();
    exe->stats.cache_entry = cache->entry_path(key);
    if (!bytes.empty()) {
      auto t0 = std::chrono::steady_clock::now();
      Profiler::Span store_span("cache store " + CacheKey::hex(key), "cache");
      Status st = cache->store(key, bytes);
      exe->stats.cache_store_ms = ms_since(t0);
      // A cache that cannot be written costs speed, not correctness.
      if (!st.ok()) std::fprintf(stderr, "radix: warning: executable cache: %s\n", st.message().c_str());
      else if (verbose) std::fprintf(stderr, "[radix] cache store %s (%zu bytes)\n", exe->stats.cache_entry.c_str(), bytes.size());
    }
  }
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

Status Platform::load_plugin(const std::string& path) const { return ffi::load_plugin(path); }

}  // namespace radix
