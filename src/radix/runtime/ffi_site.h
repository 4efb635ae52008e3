// Internal: a custom call site as the compiled code describes it to the
// runtime. The CPU backend's radix-custom-calls pass writes one descriptor
// per call site into the object (a constant byte string) and passes its
// address to radix_ffi_call with the buffers; the runtime parses it once
// into a Site (the attribute tables of radix/ffi.h, owned) and reuses it.
//
// Format (little-endian): "RFFI", u32 version (1), u64 hash of the body,
// u32 body length, then the body: str target, u32 n_args, per arg {u32 dtype (RadixFfi_DataType), u32 rank,
// i64 dims[rank]}, the same for results, then the attribute dictionary:
// u32 n, per entry sorted by name {str name, u32 kind (RadixFfi_AttrType),
// scalar: u32 dtype + 8 bytes (the value in its own type, zero padded);
// array: u32 dtype, u64 count, count elements; string: str; dictionary:
// nested}. str = u32 length + bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace radix::ffi::detail {

inline constexpr uint32_t kSiteFormatVersion = 1;
// The descriptors' symbol names in an object: this prefix and the site's number.
inline constexpr const char* kSiteSymbolPrefix = "__radix_ffi_site_";

// Appends the format's primitives.
struct SiteWriter {
  std::string out;
  template <class T> void pod(T v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(std::string_view s) {
    pod(static_cast<uint32_t>(s.size()));
    out.append(s);
  }
};

// Reads them; `ok` turns false past the end (a corrupt descriptor).
struct SiteReader {
  const char* p;
  const char* end;
  bool ok = true;
  template <class T> T pod() {
    T v{};
    if (static_cast<size_t>(end - p) < sizeof v) { ok = false; return v; }
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  std::string_view str() {
    const uint32_t n = pod<uint32_t>();
    if (!ok || static_cast<size_t>(end - p) < n) { ok = false; return {}; }
    std::string_view s(p, n);
    p += n;
    return s;
  }
};

// FNV-1a over the descriptor's body (after the header).
inline uint64_t site_hash(std::string_view body) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : body) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
  return h;
}

}  // namespace radix::ffi::detail
