// MemoryKind: where a Buffer's memory lives (the seeds' Buffer.Memory /
// mhlo.memory_kind). A traced result may ask for a kind (Tensor::to_memory);
// the executable then allocates that output there.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <string_view>

namespace radix {

enum class MemoryKind {
  kDevice,      // the device's own memory (the default)
  kPinnedHost,  // page-locked host memory the device can reach directly
};

// "device" / "pinned_host": the names the seeds give the mhlo.memory_kind
// attribute.
constexpr std::string_view memory_kind_name(MemoryKind k) {
  return k == MemoryKind::kDevice ? "device" : "pinned_host";
}

}  // namespace radix
