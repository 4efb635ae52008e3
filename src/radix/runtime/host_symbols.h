// Host symbols: C functions of this process that JIT-compiled code may call
// by name — runtime helpers (bf16 conversions), custom-call handlers, the
// thread pool's entry points. One registry for all of them, so a backend
// links whatever has been registered instead of a hard-coded list.
//
// Thread-safety: registering and snapshotting may happen from any thread.
#pragma once

#include <string>
#include <vector>

#include "radix/core/status.h"

namespace radix {

struct HostSymbol {
  std::string name;  // the C symbol name the generated code calls
  void* address = nullptr;
};

// Registers `name` -> `address`. Registering the same pair again is a no-op;
// the same name with another address is kInvalidArgument (naming it), since
// code already compiled against the first would silently change meaning.
Status register_host_symbol(const std::string& name, void* address);

// Every registered symbol, in registration order.
std::vector<HostSymbol> host_symbols();

}  // namespace radix
