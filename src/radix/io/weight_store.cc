#include "radix/io/weight_store.h"

#include <cstring>
#include <stdexcept>
#include <utility>

#include "radix/io/gguf.h"
#include "radix/io/llama2c.h"
#include "radix/io/mapped_file.h"
#include "radix/io/safetensors.h"

namespace radix::io {

WeightStore::~WeightStore() = default;

uint64_t WeightStore::total_bytes() const {
  uint64_t total = 0;
  for (const TensorInfo& t : tensors()) total += t.shape.byte_size();
  return total;
}

BasicWeightStore::BasicWeightStore(std::string path, std::string format)
    : path_(std::move(path)), format_(std::move(format)) {}

Status BasicWeightStore::add_deferred(std::string name, Shape shape, std::function<void(std::span<std::byte>)> fill) {
  if (index_.count(name) != 0) return invalid_argument(path_ + ": duplicate tensor name '" + name + "'");
  Deferred& d = deferred_.emplace_back();
  d.fill = std::move(fill);
  deferred_of_.emplace(infos_.size(), &d);
  index_.emplace(name, infos_.size());
  infos_.push_back(TensorInfo{std::move(name), shape});
  data_.emplace_back();
  return Status::ok_status();
}

bool BasicWeightStore::materialized(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return false;
  auto d = deferred_of_.find(it->second);
  return d != deferred_of_.end() && d->second->done.load();
}

Status BasicWeightStore::add(std::string name, Shape shape, std::span<const std::byte> data) {
  if (index_.count(name) != 0) return invalid_argument(path_ + ": duplicate tensor name '" + name + "'");
  if (data.size() != shape.byte_size())
    return invalid_argument(path_ + ": tensor '" + name + "' of shape " + shape.to_string() + " needs " +
                            std::to_string(shape.byte_size()) + " bytes, got " + std::to_string(data.size()));
  index_.emplace(name, infos_.size());
  infos_.push_back(TensorInfo{std::move(name), shape});
  data_.push_back(data);
  return Status::ok_status();
}

Status BasicWeightStore::add_view(std::string name, Shape shape, std::span<const std::byte> data) {
  return add(std::move(name), shape, data);
}

Status BasicWeightStore::add_owned(std::string name, Shape shape, std::vector<std::byte> data) {
  // Check before taking ownership so a rejected tensor leaves no trace.
  if (index_.count(name) != 0 || data.size() != shape.byte_size()) return add(std::move(name), shape, data);
  owned_.push_back(std::move(data));
  return add(std::move(name), shape, owned_.back());
}

const TensorInfo* BasicWeightStore::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &infos_[it->second];
}

Result<std::span<const std::byte>> BasicWeightStore::bytes(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end())
    return Status(ErrorCode::kNotFound, path_ + ": no tensor named '" + std::string(name) + "'");
  auto d = deferred_of_.find(it->second);
  if (d == deferred_of_.end()) return data_[it->second];
  Deferred& def = *d->second;
  std::call_once(def.once, [&] {
    def.data.assign(infos_[it->second].shape.byte_size(), std::byte{0});
    def.fill(def.data);
    def.done.store(true);
  });
  return std::span<const std::byte>(def.data);
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) { ++i; continue; }
    int len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return false;
    if (n - i < static_cast<size_t>(len)) return false;
    for (int k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<size_t>(len);
  }
  return true;
}

Result<Shape> make_shape(DType dtype, std::span<const int64_t> dims, const std::string& what) {
  try {
    return Shape(dtype, dims);
  } catch (const std::invalid_argument& e) {
    return invalid_argument(what + ": " + e.what());
  }
}

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

template <class Store>
Result<std::unique_ptr<WeightStore>> upcast(Result<std::unique_ptr<Store>> r) {
  if (!r.ok()) return r.status();
  return std::unique_ptr<WeightStore>(std::move(r).value());
}

std::string hex_prefix(std::span<const std::byte> b) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < b.size() && i < 8; ++i) {
    auto v = static_cast<unsigned>(b[i]);
    s += (i ? " " : "");
    s += kHex[v >> 4];
    s += kHex[v & 15];
  }
  return s.empty() ? "(empty file)" : s;
}

}  // namespace

Result<std::unique_ptr<WeightStore>> open_weights(const std::string& path) {
  std::string reason;
  {
    RADIX_ASSIGN_OR_RETURN(MappedFile f, MappedFile::open(path));
    std::span<const std::byte> b = f.bytes();
    if (b.size() >= 4 && std::memcmp(b.data(), "GGUF", 4) == 0) return upcast(open_gguf(path));
    if (looks_like_safetensors(b)) return open_safetensors(path);
    if (looks_like_json(b)) return open_safetensors(path);  // a sharded index
    if (b.size() >= kLlama2cHeaderBytes) {
      auto cfg = parse_llama2c_header(b.first(kLlama2cHeaderBytes), path);
      if (cfg.ok()) return upcast(open_llama2c(path));
      reason = cfg.status().message();
      if (reason.rfind(path + ": ", 0) == 0) reason.erase(0, path.size() + 2);
    }
    reason = "first bytes " + hex_prefix(b) + (reason.empty() ? "" : "; as llama2.c: " + reason);
  }
  // Content fits nothing: let the extension pick the reader whose error is most telling.
  if (ends_with(path, ".gguf")) return upcast(open_gguf(path));
  if (ends_with(path, ".safetensors") || ends_with(path, ".json")) return open_safetensors(path);
  return invalid_argument(path + ": unrecognized weight file format (not GGUF, safetensors or a llama2.c checkpoint): " +
                          reason);
}

}  // namespace radix::io
