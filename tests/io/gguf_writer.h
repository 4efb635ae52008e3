// A tiny GGUF v3 writer for tests, written from the format's specification
// (not from the reader): metadata values, tensor infos (ne[0] fastest), data
// aligned to `alignment`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/io_test_util.h"

namespace radix::io::testing {

inline std::string gstr(const std::string& s) {
  std::string out;
  put<uint64_t>(out, s.size());
  return out + s;
}

// An encoded metadata value: its type and payload (without the type tag).
struct V {
  uint32_t type;
  std::string bytes;
};
template <class T>
inline V scalar(uint32_t type, T x) {
  V v{type, {}};
  put<T>(v.bytes, x);
  return v;
}
inline V str(const std::string& s) { return {8, gstr(s)}; }
inline V arr(uint32_t elem_type, const std::vector<V>& items) {
  V v{9, {}};
  put<uint32_t>(v.bytes, elem_type);
  put<uint64_t>(v.bytes, items.size());
  for (const V& i : items) v.bytes += i.bytes;
  return v;
}

struct GgufFile {
  uint32_t version = 3;
  uint64_t alignment = 32;  // where the writer puts things; set general.alignment to match
  std::vector<std::pair<std::string, V>> kv;
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;  // ne[0] fastest
    uint32_t type;
    std::string data;
  };
  std::vector<Tensor> tensors;

  std::string build() const {
    std::string h = "GGUF";
    put<uint32_t>(h, version);
    put<uint64_t>(h, tensors.size());
    put<uint64_t>(h, kv.size());
    for (const auto& [k, v] : kv) {
      h += gstr(k);
      put<uint32_t>(h, v.type);
      h += v.bytes;
    }
    std::string data;
    for (const Tensor& t : tensors) {
      data.append((alignment - data.size() % alignment) % alignment, '\0');
      h += gstr(t.name);
      put<uint32_t>(h, static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne) put<uint64_t>(h, d);
      put<uint32_t>(h, t.type);
      put<uint64_t>(h, data.size());
      data += t.data;
    }
    h.append((alignment - h.size() % alignment) % alignment, '\0');
    return h + data;
  }
};

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace radix::io::testing
