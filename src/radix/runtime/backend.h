// The backend boundary: the few operations a device backend provides —
// check and fingerprint options, compile (or reload) a program, allocate,
// copy in/out/within, execute. Everything above it (Platform, Buffer, Executable,
// the executable cache) is backend-agnostic, and the runtime names backends
// only through the registry at the bottom of this file.
//
// A backend owns its lowering: it parses the traced module's bytecode into
// an MLIRContext of its own (with the dialects, passes and LLVM translations
// it needs), so several threads may compile one traced module at once.
//
// Ownership: memory returned by allocate() is owned by the caller and
// released with deallocate(); a BackendExecutable owns its compiled code.
// Thread-safety: every method may be called from several threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "radix/compiler/compile_options.h"
#include "radix/core/memory_kind.h"
#include "radix/core/shape.h"
#include "radix/core/status.h"

namespace radix {

struct Signature;

// Compile-time statistics, for progress output and benchmarks.
struct CompileStats {
  double lower_ms = 0;  // pass pipelines (incl. schedule)
  double jit_ms = 0;    // LLVM optimization + machine code
  double total_ms = 0;
  // True if the vectorizing schedule was rejected and plain loops compiled
  // instead (a warning is printed too).
  bool schedule_fell_back = false;
  // What the executable cache did (kOff when CompileOptions::cache_dir is
  // empty). kRejected: an entry existed but was corrupt, truncated or of
  // another format; it was replaced by a fresh compile.
  enum class Cache { kOff, kMiss, kHit, kRejected } cache = Cache::kOff;
  double cache_load_ms = 0;   // reading + loading a hit
  double cache_store_ms = 0;  // writing a miss
  std::string cache_entry;    // the entry's path
  std::string dump_folder;    // where this compile's dumps went ("" = none / stderr)
  std::string summary() const;
};
const char* cache_result_name(CompileStats::Cache c);  // "off", "miss", "hit", "rejected"

// One compile request, as the runtime hands it to a backend.
struct CompileJob {
  std::string name;          // the module's name
  std::string_view bytecode; // the traced module as MLIR bytecode
  const Signature* signature = nullptr;
  const CompileOptions* options = nullptr;
  std::string dump_folder;   // dumps go here; "" = standard error
};

class BackendExecutable {
 public:
  virtual ~BackendExecutable() = default;
  // Runs the program: reads `inputs` (device pointers, in Signature order),
  // writes every output into `outputs` (caller-allocated; an output may be
  // the same memory as a donated input). Shapes were checked by the caller.
  virtual Status execute(std::span<void* const> inputs, std::span<void* const> outputs) = 0;
  // The compiled program as bytes the backend's load() accepts (for the
  // executable cache); empty if it cannot be stored.
  virtual std::string serialize() const = 0;
  CompileStats stats;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // OK when this backend can run programs here; otherwise why not (e.g.
  // "no CUDA device: ..."). Compiling without running (compile_only) may
  // still work.
  virtual Status available() const { return Status(); }
  // Refuses options this backend cannot honour (naming the field and value).
  virtual Status check_options(const CompileOptions& options) const = 0;
  // Everything of `options` and the target that changes the generated code,
  // resolved ("host" becomes the CPU's name and features), as text hashed
  // into the executable-cache key.
  virtual std::string codegen_fingerprint(const CompileOptions& options) const = 0;
  // Lowers and compiles a traced module.
  virtual Result<std::unique_ptr<BackendExecutable>> compile(const CompileJob& job) = 0;
  // Lowers and code-generates a traced module without loading it (no device
  // needed): for checking a program, or dumping what a device would run.
  virtual Result<CompileStats> compile_only(const CompileJob& job) {
    RADIX_ASSIGN_OR_RETURN(std::unique_ptr<BackendExecutable> exe, compile(job));
    return exe->stats;
  }
  // Rebuilds an executable from serialize()'d bytes (an executable-cache
  // hit); an error if the bytes are unusable.
  virtual Result<std::unique_ptr<BackendExecutable>> load(std::string_view bytes, const CompileJob& job) = 0;
  virtual Result<void*> allocate(size_t bytes, MemoryKind kind) = 0;
  virtual void deallocate(void* ptr, size_t bytes, MemoryKind kind) = 0;
  virtual Status copy_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual Status copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  // Device -> device (a lent Buffer for a donated parameter is copied first).
  virtual Status copy_on_device(void* dst, const void* src, size_t bytes) = 0;
};

// ---- Registry: backends register a factory under their name (the CPU
// backend does so when libradix loads); the runtime creates each one once.
using BackendFactory = std::function<std::shared_ptr<Backend>()>;
// Registers `factory` as `name`; returns false if the name was taken.
bool register_backend(const std::string& name, BackendFactory factory);
// The backend registered as `name` (created on first use, then shared), or
// kNotFound listing the registered names.
Result<std::shared_ptr<Backend>> backend_by_name(const std::string& name);
std::vector<std::string> backend_names();

}  // namespace radix
