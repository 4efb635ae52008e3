// safetensors reader: single files and sharded indexes. The writer is in
// safetensors_writer.cc.
#include "radix/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "radix/io/mapped_file.h"

static_assert(std::endian::native == std::endian::little, "radix::io reads little-endian files in place");

namespace radix::io {

namespace {

using nlohmann::json;

constexpr std::pair<std::string_view, DType> kDTypes[] = {
    {"BOOL", DType::kBool}, {"U8", DType::kU8},   {"I8", DType::kI8},   {"I16", DType::kI16},  {"U16", DType::kU16},
    {"I32", DType::kI32},   {"U32", DType::kU32}, {"I64", DType::kI64}, {"U64", DType::kU64},  {"F16", DType::kF16},
    {"BF16", DType::kBF16}, {"F32", DType::kF32}, {"F64", DType::kF64},
};

constexpr int kMaxJsonDepth = 64;

Status bad(const std::string& path, const std::string& msg) { return invalid_argument(path + ": " + msg); }

struct JsonReject {
  std::string message;
};

// Parses `text` as JSON, rejecting duplicate keys in any object (nlohmann
// would silently keep the last) and nesting deeper than kMaxJsonDepth.
Result<json> parse_json(std::string_view text, const std::string& path, const char* what) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  auto cb = [&keys](int depth, json::parse_event_t ev, json& parsed) -> bool {
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth) throw JsonReject{"nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
        if (ev == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
          throw JsonReject{"duplicate key '" + parsed.get<std::string>() + "'"};
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const JsonReject& e) {
    return bad(path, std::string(what) + ": " + e.message);
  } catch (const json::exception& e) {
    return bad(path, std::string(what) + " is not valid JSON: " + e.what());
  }
}

// A non-negative JSON integer, or nullopt.
std::optional<uint64_t> json_uint(const json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0) return static_cast<uint64_t>(j.get<int64_t>());
  return std::nullopt;
}

struct Entry {
  std::string name;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

Result<Entry> parse_entry(const std::string& path, const std::string& name, const json& v, uint64_t data_size) {
  std::string where = "tensor '" + name + "'";
  if (name.empty()) return bad(path, "empty tensor name");
  if (!is_valid_utf8(name)) return bad(path, "tensor name is not valid UTF-8");
  if (!v.is_object()) return bad(path, where + ": entry is not a JSON object");
  auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string()) return bad(path, where + ": missing or non-string \"dtype\"");
  std::string dname = dt->get<std::string>();
  std::optional<DType> dtype = dtype_from_safetensors(dname);
  if (!dtype) {
    if (dname.rfind("F8", 0) == 0) return bad(path, where + ": unsupported dtype " + dname + " (8-bit floats)");
    return bad(path, where + ": unknown dtype '" + dname + "'");
  }
  auto sh = v.find("shape");
  if (sh == v.end() || !sh->is_array()) return bad(path, where + ": missing or non-array \"shape\"");
  if (sh->size() > static_cast<size_t>(kMaxRank))
    return bad(path, where + ": rank " + std::to_string(sh->size()) + " exceeds the maximum of " + std::to_string(kMaxRank));
  std::vector<int64_t> dims;
  for (const json& d : *sh) {
    std::optional<uint64_t> u = json_uint(d);
    if (!u || *u > static_cast<uint64_t>(INT64_MAX))
      return bad(path, where + ": shape entry " + d.dump() + " is not a non-negative 64-bit integer");
    dims.push_back(static_cast<int64_t>(*u));
  }
  RADIX_ASSIGN_OR_RETURN(Shape shape, make_shape(*dtype, dims, path + ": " + where));
  auto off = v.find("data_offsets");
  if (off == v.end() || !off->is_array() || off->size() != 2)
    return bad(path, where + ": \"data_offsets\" must be an array [begin, end]");
  std::optional<uint64_t> b = json_uint((*off)[0]), e = json_uint((*off)[1]);
  if (!b || !e) return bad(path, where + ": data_offsets " + off->dump() + " are not non-negative integers");
  if (*b > *e) return bad(path, where + ": data_offsets begin " + std::to_string(*b) + " > end " + std::to_string(*e));
  if (*e > data_size)
    return bad(path, where + ": data_offsets [" + std::to_string(*b) + ", " + std::to_string(*e) +
                         "] out of the data region of " + std::to_string(data_size) + " bytes (file truncated?)");
  if (*e - *b != shape.byte_size())
    return bad(path, where + ": data_offsets span " + std::to_string(*e - *b) + " bytes but dtype " + dname +
                         " x shape " + sh->dump() + " needs " + std::to_string(shape.byte_size()));
  return Entry{name, shape, *b, *e};
}

Result<std::unique_ptr<BasicWeightStore>> open_single(const std::string& path) {
  RADIX_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  auto file = std::make_shared<MappedFile>(std::move(mapped));
  std::span<const std::byte> b = file->bytes();
  if (b.size() < 8)
    return bad(path, "file of " + std::to_string(b.size()) + " bytes is too short for a safetensors header (needs 8)");
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  if (n > kMaxSafetensorsHeaderBytes)
    return bad(path, "header length " + std::to_string(n) + " exceeds the limit of " +
                         std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  if (n > b.size() - 8)
    return bad(path, "header length " + std::to_string(n) + " is larger than the file allows (file has " +
                         std::to_string(b.size()) + " bytes, so at most " + std::to_string(b.size() - 8) + ")");
  std::string_view text(reinterpret_cast<const char*>(b.data() + 8), n);
  if (text.empty() || text[0] != '{') return bad(path, "header does not start with '{'");
  RADIX_ASSIGN_OR_RETURN(json header, parse_json(text, path, "header"));
  if (!header.is_object()) return bad(path, "header is not a JSON object");

  const uint64_t data_size = b.size() - 8 - n;
  const std::byte* data = b.data() + 8 + n;
  auto store = std::make_unique<BasicWeightStore>(path, "safetensors");
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return bad(path, "\"__metadata__\" is not a JSON object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) return bad(path, "\"__metadata__\" value of '" + m.key() + "' is not a string");
        store->mutable_metadata()[m.key()] = m->get<std::string>();
      }
      continue;
    }
    RADIX_ASSIGN_OR_RETURN(Entry e, parse_entry(path, it.key(), *it, data_size));
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& x, const Entry& y) { return x.begin != y.begin ? x.begin < y.begin : x.end < y.end; });
  const Entry* prev = nullptr;  // the last non-empty range
  for (const Entry& e : entries) {
    if (e.begin == e.end) continue;
    if (prev != nullptr && e.begin < prev->end)
      return bad(path, "tensors '" + prev->name + "' [" + std::to_string(prev->begin) + ", " + std::to_string(prev->end) +
                           ") and '" + e.name + "' [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                           ") have overlapping data_offsets");
    prev = &e;
  }
  for (Entry& e : entries)
    RADIX_RETURN_IF_ERROR(store->add_view(e.name, e.shape, {data + e.begin, data + e.end}));
  store->keep_alive(file);
  return store;
}

// Rejects shard paths that could leave the index's folder.
bool safe_shard_path(const std::string& s) {
  if (s.empty() || s[0] == '/' || !is_valid_utf8(s)) return false;
  for (const auto& part : std::filesystem::path(s))
    if (part == "..") return false;
  return true;
}

Result<std::unique_ptr<WeightStore>> open_index(const std::string& path, std::span<const std::byte> b) {
  if (b.size() > kMaxSafetensorsHeaderBytes)
    return bad(path, "index of " + std::to_string(b.size()) + " bytes exceeds the limit of " +
                         std::to_string(kMaxSafetensorsHeaderBytes));
  RADIX_ASSIGN_OR_RETURN(json index, parse_json({reinterpret_cast<const char*>(b.data()), b.size()}, path, "index"));
  if (!index.is_object()) return bad(path, "index is not a JSON object");
  auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object()) return bad(path, "index has no \"weight_map\" object");

  std::map<std::string, std::vector<std::string>> by_shard;  // shard file -> tensor names
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it->is_string()) return bad(path, "weight_map entry of '" + it.key() + "' is not a string");
    std::string shard = it->get<std::string>();
    if (!safe_shard_path(shard)) return bad(path, "weight_map entry of '" + it.key() + "' names a bad shard path '" + shard + "'");
    by_shard[shard].push_back(it.key());
  }

  auto store = std::make_unique<BasicWeightStore>(path, "safetensors");
  if (auto md = index.find("metadata"); md != index.end()) {
    if (!md->is_object()) return bad(path, "index \"metadata\" is not a JSON object");
    for (auto m = md->begin(); m != md->end(); ++m)
      store->mutable_metadata()[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
  }
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  for (const auto& [shard, names] : by_shard) {
    std::string shard_path = (dir / shard).string();
    auto opened = open_single(shard_path);
    if (!opened.ok())
      return Status(opened.status().code(), path + ": shard '" + shard + "' (holding '" + names.front() +
                                                "'): " + opened.status().message());
    std::shared_ptr<BasicWeightStore> s = std::move(opened).value();
    std::set<std::string_view> wanted(names.begin(), names.end());
    for (const std::string& name : names)
      if (s->find(name) == nullptr) return bad(path, "tensor '" + name + "' listed in weight_map is not in shard " + shard_path);
    for (const TensorInfo& t : s->tensors()) {
      if (wanted.count(t.name) == 0) continue;
      RADIX_RETURN_IF_ERROR(store->add_view(t.name, t.shape, *s->bytes(t.name)));
    }
    for (const auto& [k, v] : s->metadata()) store->mutable_metadata().emplace(k, v);
    store->keep_alive(s);
  }
  return std::unique_ptr<WeightStore>(std::move(store));
}

}  // namespace

std::string_view safetensors_dtype_name(DType d) {
  for (const auto& [name, dt] : kDTypes)
    if (dt == d) return name;
  return "?";
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (const auto& [n, dt] : kDTypes)
    if (n == name) return dt;
  return std::nullopt;
}

Result<std::unique_ptr<WeightStore>> open_safetensors(const std::string& path) {
  {
    RADIX_ASSIGN_OR_RETURN(MappedFile f, MappedFile::open(path));
    if (!looks_like_safetensors(f.bytes()) && looks_like_json(f.bytes())) return open_index(path, f.bytes());
  }
  RADIX_ASSIGN_OR_RETURN(auto store, open_single(path));
  return std::unique_ptr<WeightStore>(std::move(store));
}

bool looks_like_safetensors(std::span<const std::byte> b) {
  if (b.size() < 9 || static_cast<char>(b[8]) != '{') return false;
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  return n <= kMaxSafetensorsHeaderBytes && n <= b.size() - 8;
}

bool looks_like_json(std::span<const std::byte> b) {
  size_t i = 0;
  auto c = [&] { return static_cast<char>(b[i]); };
  while (i < b.size() && i < 4096 && (c() == ' ' || c() == '\t' || c() == '\n' || c() == '\r')) ++i;
  return i < b.size() && c() == '{';
}

}  // namespace radix::io
