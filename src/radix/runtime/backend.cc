#include "radix/runtime/backend.h"

#include <cstdio>
#include <map>
#include <mutex>

namespace radix {

namespace {
struct Entry {
  BackendFactory factory;
  std::shared_ptr<Backend> instance;  // created on first use
};
std::mutex g_mu;
std::map<std::string, Entry>& registry() {
  static auto* r = new std::map<std::string, Entry>();  // leaked: backends outlive static destruction
  return *r;
}
}  // namespace

bool register_backend(const std::string& name, BackendFactory factory) {
  std::lock_guard<std::mutex> lock(g_mu);
  return registry().emplace(name, Entry{std::move(factory), nullptr}).second;
}

Result<std::shared_ptr<Backend>> backend_by_name(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& [n, e] : registry()) known += (known.empty() ? "" : ", ") + n;
    return Status(ErrorCode::kNotFound, "no backend named '" + name + "' (registered: " + known + ")");
  }
  if (!it->second.instance) it->second.instance = it->second.factory();
  return it->second.instance;
}

std::vector<std::string> backend_names() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> names;
  for (const auto& [n, e] : registry()) names.push_back(n);
  return names;
}

const char* cache_result_name(CompileStats::Cache c) {
  switch (c) {
    case CompileStats::Cache::kOff: return "off";
    case CompileStats::Cache::kMiss: return "miss";
    case CompileStats::Cache::kHit: return "hit";
    case CompileStats::Cache::kRejected: return "rejected";
  }
  return "?";
}

std::string CompileStats::summary() const {
  char buf[200];
  if (cache == Cache::kHit)
    std::snprintf(buf, sizeof(buf), "loaded from the executable cache in %.1f ms", cache_load_ms);
  else
    std::snprintf(buf, sizeof(buf), "lower %.1f ms, jit %.1f ms, total %.1f ms", lower_ms, jit_ms, total_ms);
  return buf;
}

}  // namespace radix
