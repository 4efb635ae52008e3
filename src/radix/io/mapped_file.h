// MappedFile: a read-only, private memory mapping of a whole file (RAII).
//
// The weight stores view tensors straight in the mapping (zero-copy). The
// mapping stays valid while the MappedFile (or a shared_ptr to it) lives.
// As with any mmap, truncating the file on disk while it is mapped makes
// later reads of the lost pages fault (SIGBUS); weight files are expected to
// stay put while open (replace them with rename, as write_safetensors does).
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <cstddef>
#include <span>
#include <string>

#include "radix/core/status.h"

namespace radix::io {

class MappedFile {
 public:
  // Maps `path` read-only. Errors: kNotFound (no such file), kIoError
  // (cannot open / stat / map, or not a regular file), each naming the path.
  // An empty file maps to an empty span.
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void reset();
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace radix::io
