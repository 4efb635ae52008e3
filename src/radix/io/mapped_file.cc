#include "radix/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace radix::io {

namespace {
Status file_error(const std::string& path, const std::string& what, int err) {
  ErrorCode code = (err == ENOENT || err == ENOTDIR) ? ErrorCode::kNotFound : ErrorCode::kIoError;
  return {code, path + ": " + what + ": " + std::strerror(err)};
}
}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return file_error(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return file_error(path, "cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(ErrorCode::kIoError, path + ": not a regular file");
  }
  MappedFile m;
  m.path_ = path;
  m.size_ = static_cast<size_t>(st.st_size);
  if (m.size_ > 0) {
    void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      m.size_ = 0;
      return file_error(path, "cannot map " + std::to_string(st.st_size) + " bytes", err);
    }
    m.data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping keeps the file referenced
  return m;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), path_(std::move(o.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    path_ = std::move(o.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace radix::io
