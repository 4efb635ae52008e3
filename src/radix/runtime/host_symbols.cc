#include "radix/runtime/host_symbols.h"

#include <mutex>

namespace radix {

namespace {
std::mutex g_mu;
std::vector<HostSymbol>& table() {
  static auto* t = new std::vector<HostSymbol>();  // leaked: JIT code may run during exit
  return *t;
}
}  // namespace

Status register_host_symbol(const std::string& name, void* address) {
  if (name.empty() || !address) return invalid_argument("register_host_symbol: needs a name and an address");
  std::lock_guard<std::mutex> lock(g_mu);
  for (const HostSymbol& s : table()) {
    if (s.name != name) continue;
    if (s.address == address) return Status();
    return invalid_argument("register_host_symbol: '" + name + "' is already registered at another address");
  }
  table().push_back({name, address});
  return Status();
}

std::vector<HostSymbol> host_symbols() {
  std::lock_guard<std::mutex> lock(g_mu);
  return table();
}

}  // namespace radix
