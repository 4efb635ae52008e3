#include "radix/backends/cpu/cpu_options.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace radix {

int64_t host_last_level_cache_bytes() {
  static const int64_t bytes = [] {
    int64_t best = 0;
    for (int i = 0; i < 8; ++i) {
      std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
      std::string v;
      if (!(in >> v) || v.empty()) continue;
      int64_t n = std::strtoll(v.c_str(), nullptr, 10);
      if (v.back() == 'K') n <<= 10;
      else if (v.back() == 'M') n <<= 20;
      best = std::max(best, n);
    }
    return best;
  }();
  return bytes;
}

int64_t resolve_streaming_store_bytes(int64_t bytes) {
  if (bytes >= 0) return bytes;
  const int64_t llc = host_last_level_cache_bytes();
  return llc > 0 ? llc / 2 : int64_t{16} << 20;
}

}  // namespace radix
