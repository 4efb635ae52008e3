// The custom-call registry and runtime (C++ side of radix/ffi.h): handlers
// by name and platform, the RadixFfi_Api services they get, user data for a
// run, plugins.
//
//   ffi::register_handler("scale", "cpu", RadixFfi_HandlerBundle{nullptr, nullptr, nullptr, &scale});
//   Tensor y = custom_call("scale", {x}, {x.shape()}, {{"alpha", 2.0f}})[0];   // trace/ops_custom_call.h
//
// Thread-safety: registration and lookup from any thread. User data scopes
// are per thread (custom calls run on the thread that calls the executable).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "radix/core/status.h"
#include "radix/ffi.h"

namespace radix::ffi {

// A C++ handler: the C handler's contract, as a callable that may hold state
// (what the typed binding of api/ffi_binding.h produces).
using CppHandler = std::function<RadixFfi_Error*(RadixFfi_CallFrame* frame)>;
struct CppBundle {
  CppHandler instantiate, prepare, initialize, execute;  // execute required
};

// Registers a C handler bundle under `name` for `platform` ("cpu", or "host":
// every platform). The runtime first probes `execute` for its metadata (a
// frame with the METADATA extension): a handler reporting another major API
// version is refused, naming both versions. Registering a name twice for one
// platform is kAlreadyExists... unless it is the very same bundle (no-op).
Status register_handler(const std::string& name, const std::string& platform, RadixFfi_HandlerBundle bundle,
                        RadixFfi_HandlerTraits traits = 0);
// A C++ bundle (built against this header: no probe).
Status register_handler(const std::string& name, const std::string& platform, CppBundle bundle,
                        RadixFfi_HandlerTraits traits = 0);
// Shorthand: an execute-only C++ handler for every platform.
Status register_handler(const std::string& name, CppHandler execute);

// True if `name` has a handler for `platform` (or for "host").
bool has_handler(const std::string& name, const std::string& platform);
// Registered names, sorted (for error messages).
std::vector<std::string> handler_names();

// The services table handlers receive (frame->api).
const RadixFfi_Api* api();

// A process-wide id for a user data type name (the same name, the same id).
RadixFfi_TypeId type_id(const std::string& name);

// While alive, runs on this thread see `data` under `id` (api->context_get).
// Scopes nest; the innermost wins.
class UserDataScope {
 public:
  UserDataScope(RadixFfi_TypeId id, void* data);
  ~UserDataScope();
  UserDataScope(const UserDataScope&) = delete;
  UserDataScope& operator=(const UserDataScope&) = delete;
};

// Loads a shared library and calls its radix_ffi_plugin_init(api), which
// registers its handlers. Errors name the path (dlopen's message, a missing
// init symbol, or the init's own error).
Status load_plugin(const std::string& path);

// Converts a handler error into a Status (the error's code and message) and
// destroys it; OK for nullptr.
Status to_status(RadixFfi_Error* error, const std::string& context);

namespace detail {
// The first custom-call error of the current run on this thread, taken
// (cleared) by Executable::call after the run; OK if none.
Status take_run_error();
void clear_run_error();
// Drops the parsed call sites at these descriptor addresses (their handler
// state destroyed): the executable holding them is going away.
void forget_sites(const std::vector<const void*>& descriptors);

// While alive on this thread (a backend's run), custom calls execute for
// `platform`: a handler registered for it is preferred over a host ("cpu")
// one, the execution context's stream is `stream`, and its device memory
// comes from `alloc` / `release` (when set), on device `device`. Without
// one: the CPU, device 0.
struct DeviceScope {
  DeviceScope(const char* platform, void* stream, void* (*alloc)(size_t) = nullptr, void (*release)(void*) = nullptr,
              int device = 0);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  const char* platform;
  void* stream;
  void* (*alloc)(size_t);
  void (*release)(void*);
  int device;  // the ordinal context_device_ordinal reports
  const DeviceScope* outer;
};
}  // namespace detail

}  // namespace radix::ffi
