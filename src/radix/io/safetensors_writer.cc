// write_safetensors: builds the header with nlohmann::json and writes the
// file atomically (O_EXCL temp file in the same folder, fsync, rename).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "radix/io/safetensors.h"

namespace radix::io {

namespace {

Status io_error(const std::string& path, const std::string& what, int err) {
  return {ErrorCode::kIoError, path + ": " + what + ": " + std::strerror(err)};
}

int write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

std::string temp_path(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

Status validate(const std::string& path, std::span<const TensorData> tensors,
                const std::map<std::string, std::string>& metadata) {
  std::set<std::string_view> names;
  for (const TensorData& t : tensors) {
    if (t.name.empty()) return invalid_argument(path + ": empty tensor name");
    if (!is_valid_utf8(t.name)) return invalid_argument(path + ": tensor name is not valid UTF-8");
    if (t.name == "__metadata__") return invalid_argument(path + ": '__metadata__' cannot name a tensor");
    if (!names.insert(t.name).second) return invalid_argument(path + ": duplicate tensor name '" + t.name + "'");
    if (t.data.size() != t.shape.byte_size())
      return invalid_argument(path + ": tensor '" + t.name + "' of shape " + t.shape.to_string() + " needs " +
                              std::to_string(t.shape.byte_size()) + " bytes, got " + std::to_string(t.data.size()));
  }
  for (const auto& [k, v] : metadata)
    if (!is_valid_utf8(k) || !is_valid_utf8(v))
      return invalid_argument(path + ": metadata key or value is not valid UTF-8 (key '" + k + "')");
  return Status::ok_status();
}

}  // namespace

Status write_safetensors(const std::string& path, std::span<const TensorData> tensors,
                         const std::map<std::string, std::string>& metadata) {
  RADIX_RETURN_IF_ERROR(validate(path, tensors, metadata));
  std::vector<const TensorData*> order;
  for (const TensorData& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TensorData* a, const TensorData* b) { return a->name < b->name; });

  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorData* t : order) {
    std::vector<int64_t> dims(t->shape.dims().begin(), t->shape.dims().end());
    uint64_t end = offset + t->data.size();
    header[t->name] = {{"dtype", std::string(safetensors_dtype_name(t->shape.dtype()))},
                       {"shape", dims},
                       {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data region starts 8-byte aligned
  if (text.size() > kMaxSafetensorsHeaderBytes)
    return invalid_argument(path + ": header of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                            std::to_string(kMaxSafetensorsHeaderBytes));
  uint64_t n = text.size();

  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = temp_path(path);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return io_error(path, "cannot create temp file " + tmp, errno);
  auto fail = [&](const std::string& what, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return io_error(path, what + " (temp file " + tmp + ")", err);
  };
  if (int err = write_all(fd, &n, 8)) return fail("write failed", err);
  if (int err = write_all(fd, text.data(), text.size())) return fail("write failed", err);
  for (const TensorData* t : order)
    if (int err = write_all(fd, t->data.data(), t->data.size())) return fail("write failed", err);
  if (::fsync(fd) != 0) return fail("fsync failed", errno);
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0) return fail("close failed", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename the temp file into place", errno);
  return Status::ok_status();
}

Status write_safetensors(const std::string& path, const WeightStore& store,
                         const std::map<std::string, std::string>& metadata) {
  std::vector<TensorData> tensors;
  for (const TensorInfo& t : store.tensors()) {
    RADIX_ASSIGN_OR_RETURN(std::span<const std::byte> data, store.bytes(t.name));
    tensors.push_back(TensorData{t.name, t.shape, data});
  }
  return write_safetensors(path, tensors, metadata);
}

Status write_safetensors(const std::string& path, const WeightStore& store) {
  return write_safetensors(path, store, store.metadata());
}

}  // namespace radix::io
