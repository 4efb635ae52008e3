// Native objects for the CPU backend: compile an LLVM-dialect module to a
// relocatable ELF object, and load such bytes (fresh or from an on-disk
// cache written by another process) into an ORC JIT.
//
// Unlike mlir::ExecutionEngine, the two halves are independent: the object
// is plain bytes that can be stored, and loading needs no MLIR at all.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "radix/core/status.h"
#include "radix/runtime/host_symbols.h"

namespace mlir {
class ModuleOp;
}

namespace radix {

struct ObjectCodegenOptions {
  // 0..3: both the LLVM IR optimization level and the codegen level. Out of
  // range, or an unknown target_cpu, is kInvalidArgument naming the value.
  int opt_level = 3;
  // "host": this machine's CPU name and features. Otherwise an LLVM CPU name
  // such as "znver3", "skylake-avx512" or "x86-64-v3" (with its default
  // features).
  std::string target_cpu = "host";
  // Called with the optimized LLVM IR text if set (for dumps).
  std::function<void(const std::string&)> on_llvm_ir;
  // Called with the native assembly of the object if set (for dumps; the
  // code is generated a second time, from a copy of the optimized IR).
  std::function<void(const std::string&)> on_asm;
  // Called after each step with its name ("translate", "llvm-opt",
  // "codegen") and milliseconds, if set (verbose compiles print them).
  std::function<void(std::string_view, double)> on_step;
};

// Prefix of the packed entry points emit_object adds: "_radix_packed_<name>"
// takes void** args, args[i] pointing at the i-th argument of the C wrapper
// "_mlir_ciface_<name>"; a non-void result is stored through args[n].
inline constexpr std::string_view kPackedPrefix = "_radix_packed_";

// Translates `module` (LLVM dialect only) to LLVM IR, adds a packed entry for
// every function defined with the `llvm.emit_c_interface` attribute (the
// function and its C wrapper become internal, inlined into that entry: the
// object exports only the packed entries), optimizes for the target CPU and
// returns the bytes of a position independent ELF relocatable object. Static
// constructors and destructors (llvm.global_ctors / dtors) become the
// functions LoadedObject calls.
Result<std::string> emit_object(mlir::ModuleOp module, const ObjectCodegenOptions& options);

// What `target_cpu` resolves to, "<cpu name> <feature string>" ("host"
// becomes this machine's CPU and features): part of the executable-cache
// key. kInvalidArgument naming an unknown CPU.
Result<std::string> resolve_target_cpu(const std::string& target_cpu);

// One object loaded into its own LLJIT. Different LoadedObjects may be
// loaded and used from different threads at once.
class LoadedObject {
 public:
  // A symbol the object may call besides those of the process (libc, libm,
  // ...), matched by its name as the object spells it.
  using HostSymbol = radix::HostSymbol;

  // Copies `object`, links it (every undefined symbol must resolve to a host
  // symbol or to one of the process) and runs its static constructors.
  // Garbage, truncated bytes, an object for another architecture or an
  // unresolved symbol are a compile_error("cannot load object: ..."). Bytes
  // corrupted inside a valid ELF layout can still crash the linker: a cache
  // should checksum what it stores.
  static Result<std::unique_ptr<LoadedObject>> load(std::string_view object,
                                                    std::span<const HostSymbol> host_symbols);

  // The packed entry "_radix_packed_<function_name>", or a kNotFound error
  // naming it. Safe to call from any thread.
  Result<void (*)(void**)> packed_entry(std::string_view function_name) const;

  // The addresses of the object's symbols whose names start with `prefix`.
  std::vector<const void*> symbols_with_prefix(std::string_view prefix) const;

  // Runs the static destructors and frees the code (leaked instead when the
  // process is already exiting).
  ~LoadedObject();
  LoadedObject(const LoadedObject&) = delete;
  LoadedObject& operator=(const LoadedObject&) = delete;

 private:
  struct Impl;
  explicit LoadedObject(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace radix
