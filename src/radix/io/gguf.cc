#include "radix/io/gguf.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "radix/core/half.h"
#include "radix/io/mapped_file.h"

static_assert(std::endian::native == std::endian::little, "radix::io reads little-endian files in place");

namespace radix::io {

namespace {

constexpr uint64_t kMaxString = uint64_t{1} << 20;
constexpr uint64_t kMaxName = uint64_t{1} << 16;
constexpr int kMaxArrayDepth = 8;
constexpr uint64_t kMaxArrayElements = uint64_t{1} << 23;
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kDefaultAlignment = 32;

size_t fixed_size(GgufType t) {  // 0 for string / array / unknown
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    default: return 0;
  }
}

// A bounds-checked little-endian cursor over the file.
class Reader {
 public:
  Reader(std::span<const std::byte> b, const std::string& path) : b_(b), path_(path) {}
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }
  Status bad(const std::string& msg) const { return invalid_argument(path_ + ": GGUF: " + msg); }
  Status need(uint64_t n, const std::string& what) const {
    if (n <= left()) return Status::ok_status();
    return bad("truncated: " + what + " needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
               ", only " + std::to_string(left()) + " left");
  }
  template <class T>
  Result<T> read(const std::string& what) {
    RADIX_RETURN_IF_ERROR(need(sizeof(T), what));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  Result<std::string> string(const std::string& what, uint64_t max_len) {
    RADIX_ASSIGN_OR_RETURN(uint64_t n, read<uint64_t>(what + " length"));
    if (n > max_len)
      return bad(what + " length " + std::to_string(n) + " exceeds the limit of " + std::to_string(max_len));
    RADIX_RETURN_IF_ERROR(need(n, what));
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  std::span<const std::byte> b_;
  const std::string& path_;
  size_t pos_ = 0;
};

struct MetadataParser {
  Reader& r;
  uint64_t elements = 0;  // array elements read so far, all arrays together

  Result<GgufValue> value(GgufType t, const std::string& key, int depth) {
    GgufValue out;
    switch (t) {
      case GgufType::kU8: return scalar<uint8_t>(key);
      case GgufType::kI8: return scalar<int8_t>(key);
      case GgufType::kU16: return scalar<uint16_t>(key);
      case GgufType::kI16: return scalar<int16_t>(key);
      case GgufType::kU32: return scalar<uint32_t>(key);
      case GgufType::kI32: return scalar<int32_t>(key);
      case GgufType::kF32: return scalar<float>(key);
      case GgufType::kU64: return scalar<uint64_t>(key);
      case GgufType::kI64: return scalar<int64_t>(key);
      case GgufType::kF64: return scalar<double>(key);
      case GgufType::kBool: {
        RADIX_ASSIGN_OR_RETURN(uint8_t b, r.read<uint8_t>("value of '" + key + "'"));
        if (b > 1) return r.bad("bool value of '" + key + "' is " + std::to_string(b) + ", not 0 or 1");
        out.v.emplace<bool>(b != 0);
        return out;
      }
      case GgufType::kString: {
        RADIX_ASSIGN_OR_RETURN(std::string s, r.string("string value of '" + key + "'", kMaxString));
        out.v.emplace<std::string>(std::move(s));
        return out;
      }
      case GgufType::kArray: return array(key, depth);
    }
    return r.bad("value type " + std::to_string(static_cast<uint32_t>(t)) + " of '" + key + "' is unknown");
  }

  template <class T>
  Result<GgufValue> scalar(const std::string& key) {
    RADIX_ASSIGN_OR_RETURN(T x, r.read<T>("value of '" + key + "'"));
    GgufValue out;
    out.v.emplace<T>(x);
    return out;
  }

  Result<GgufValue> array(const std::string& key, int depth) {
    if (depth >= kMaxArrayDepth)
      return r.bad("arrays in '" + key + "' nest deeper than " + std::to_string(kMaxArrayDepth) + " levels");
    RADIX_ASSIGN_OR_RETURN(uint32_t et, r.read<uint32_t>("array type of '" + key + "'"));
    if (et > static_cast<uint32_t>(GgufType::kF64))
      return r.bad("array of '" + key + "' has unknown element type " + std::to_string(et));
    auto type = static_cast<GgufType>(et);
    RADIX_ASSIGN_OR_RETURN(uint64_t n, r.read<uint64_t>("array length of '" + key + "'"));
    // Each element takes at least this many bytes of the file.
    size_t min_size = type == GgufType::kString ? 8 : type == GgufType::kArray ? 12 : fixed_size(type);
    if (n > r.left() / min_size)
      return r.bad("array of '" + key + "' claims " + std::to_string(n) + " elements of type " +
                   std::string(gguf_type_name(type)) + " but only " + std::to_string(r.left()) + " bytes are left");
    elements += n;
    if (elements > kMaxArrayElements)
      return r.bad("metadata arrays hold more than " + std::to_string(kMaxArrayElements) + " elements (at '" + key + "')");
    GgufValue out;
    GgufArray& a = out.v.emplace<GgufArray>();
    a.type = type;
    a.items.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      RADIX_ASSIGN_OR_RETURN(GgufValue item, value(type, key, depth + 1));
      a.items.push_back(std::move(item));
    }
    return out;
  }
};

struct TensorEntry {
  std::string name;
  GgmlType type;
  std::vector<int64_t> dims;  // row-major (ne reversed)
  int64_t count = 1;
  uint64_t offset = 0, size = 0;
};

const char* ggml_type_name(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return "F32";
    case GgmlType::kF16: return "F16";
    case GgmlType::kQ4_0: return "Q4_0";
    case GgmlType::kQ8_0: return "Q8_0";
    case GgmlType::kBF16: return "BF16";
  }
  return "?";
}

Result<TensorEntry> read_tensor_info(Reader& r, uint64_t index) {
  std::string what = "tensor #" + std::to_string(index);
  TensorEntry e;
  RADIX_ASSIGN_OR_RETURN(e.name, r.string(what + " name", kMaxName));
  if (e.name.empty()) return r.bad(what + " has an empty name");
  if (!is_valid_utf8(e.name)) return r.bad(what + " name is not valid UTF-8");
  what = "tensor '" + e.name + "'";
  RADIX_ASSIGN_OR_RETURN(uint32_t n_dims, r.read<uint32_t>(what + " n_dims"));
  if (n_dims < 1 || n_dims > kMaxDims)
    return r.bad(what + " has n_dims " + std::to_string(n_dims) + ", not in [1, " + std::to_string(kMaxDims) + "]");
  std::vector<int64_t> ne;
  for (uint32_t i = 0; i < n_dims; ++i) {
    RADIX_ASSIGN_OR_RETURN(uint64_t d, r.read<uint64_t>(what + " dims"));
    if (d > static_cast<uint64_t>(INT64_MAX)) return r.bad(what + " dim " + std::to_string(d) + " exceeds int64");
    if (__builtin_mul_overflow(e.count, static_cast<int64_t>(d), &e.count))
      return r.bad(what + " element count overflows int64");
    ne.push_back(static_cast<int64_t>(d));
  }
  e.dims.assign(ne.rbegin(), ne.rend());
  RADIX_ASSIGN_OR_RETURN(uint32_t type, r.read<uint32_t>(what + " type"));
  switch (type) {
    case 0: case 1: case 2: case 8: case 30: e.type = static_cast<GgmlType>(type); break;
    default:
      return r.bad(what + " has unsupported ggml type " + std::to_string(type) +
                   " (supported: F32=0, F16=1, Q4_0=2, Q8_0=8, BF16=30)");
  }
  RADIX_ASSIGN_OR_RETURN(e.offset, r.read<uint64_t>(what + " offset"));
  bool quantized = e.type == GgmlType::kQ4_0 || e.type == GgmlType::kQ8_0;
  // Byte sizes fit: count < 2^63 and a block of 32 takes <= 34 bytes.
  const auto ucount = static_cast<uint64_t>(e.count);
  if (quantized) {
    if (ne[0] % 32 != 0)
      return r.bad(what + " of type " + ggml_type_name(e.type) + " has ne0 = " + std::to_string(ne[0]) +
                   ", not a multiple of the block size 32");
    e.size = ucount / 32 * (e.type == GgmlType::kQ8_0 ? 34 : 18);
  } else {
    if (__builtin_mul_overflow(ucount, e.type == GgmlType::kF32 ? 4u : 2u, &e.size) || e.size > INT64_MAX)
      return r.bad(what + " byte size overflows");
  }
  return e;
}

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  static constexpr std::string_view kNames[] = {"u8",  "i8",   "u16",    "i16",   "u32", "i32", "f32",
                                                "bool", "string", "array", "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(t);
  return i < std::size(kNames) ? kNames[i] : "?";
}

void dequantize_q8_0(std::span<const std::byte> blocks, std::span<float> out) {
  const size_t n = std::min(blocks.size() / 34, out.size() / 32);
  for (size_t b = 0; b < n; ++b) {
    const std::byte* p = blocks.data() + 34 * b;
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    float d = f16_to_float(bits);
    for (size_t j = 0; j < 32; ++j) out[32 * b + j] = d * static_cast<float>(static_cast<int8_t>(p[2 + j]));
  }
}

void dequantize_q4_0(std::span<const std::byte> blocks, std::span<float> out) {
  const size_t n = std::min(blocks.size() / 18, out.size() / 32);
  for (size_t b = 0; b < n; ++b) {
    const std::byte* p = blocks.data() + 18 * b;
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    float d = f16_to_float(bits);
    for (size_t j = 0; j < 16; ++j) {
      auto q = static_cast<unsigned>(p[2 + j]);
      out[32 * b + j] = d * static_cast<float>(static_cast<int>(q & 15) - 8);
      out[32 * b + j + 16] = d * static_cast<float>(static_cast<int>(q >> 4) - 8);
    }
  }
}

Result<std::unique_ptr<GgufStore>> open_gguf(const std::string& path) {
  RADIX_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  auto file = std::make_shared<MappedFile>(std::move(mapped));
  std::span<const std::byte> b = file->bytes();
  Reader r(b, path);
  if (b.size() < 4 || std::memcmp(b.data(), "GGUF", 4) != 0) return r.bad("no GGUF magic at the start of the file");
  r.read<uint32_t>("magic").value();
  RADIX_ASSIGN_OR_RETURN(uint32_t version, r.read<uint32_t>("version"));
  if (version != 3) return r.bad("version " + std::to_string(version) + " is not supported (only 3)");
  RADIX_ASSIGN_OR_RETURN(uint64_t n_tensors, r.read<uint64_t>("tensor_count"));
  RADIX_ASSIGN_OR_RETURN(uint64_t n_kv, r.read<uint64_t>("metadata_kv_count"));
  // A pair takes >= 13 bytes (key length, type, 1-byte value); a tensor info >= 32.
  if (n_kv > r.left() / 13)
    return r.bad("metadata_kv_count " + std::to_string(n_kv) + " is more than the " + std::to_string(r.left()) +
                 " bytes left can hold");
  if (n_tensors > r.left() / 32)
    return r.bad("tensor_count " + std::to_string(n_tensors) + " is more than the " + std::to_string(r.left()) +
                 " bytes left can hold");

  auto store = std::make_unique<GgufStore>(path);
  store->version_ = version;
  MetadataParser mp{r};
  for (uint64_t i = 0; i < n_kv; ++i) {
    RADIX_ASSIGN_OR_RETURN(std::string key, r.string("metadata key #" + std::to_string(i), kMaxName));
    if (key.empty() || !is_valid_utf8(key))
      return r.bad("metadata key #" + std::to_string(i) + " is empty or not valid UTF-8");
    RADIX_ASSIGN_OR_RETURN(uint32_t t, r.read<uint32_t>("value type of '" + key + "'"));
    if (t > static_cast<uint32_t>(GgufType::kF64))
      return r.bad("value type " + std::to_string(t) + " of '" + key + "' is unknown");
    RADIX_ASSIGN_OR_RETURN(GgufValue v, mp.value(static_cast<GgufType>(t), key, 0));
    if (store->values_.count(key) != 0) return r.bad("duplicate metadata key '" + key + "'");
    store->mutable_metadata()[key] = v.to_string();
    store->values_.emplace(std::move(key), std::move(v));
  }
  store->alignment_ = kDefaultAlignment;
  if (const GgufValue* a = store->value("general.alignment")) {
    std::optional<uint64_t> al = a->as_uint();
    if (!al || *al == 0 || (*al & (*al - 1)) != 0)
      return r.bad("general.alignment " + a->to_string() + " is not a positive integer power of two");
    store->alignment_ = *al;
  }
  const uint64_t align = store->alignment_;

  std::vector<TensorEntry> entries;
  std::set<std::string_view> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    RADIX_ASSIGN_OR_RETURN(TensorEntry e, read_tensor_info(r, i));
    entries.push_back(std::move(e));
  }
  for (const TensorEntry& e : entries)
    if (!names.insert(e.name).second) return r.bad("duplicate tensor name '" + e.name + "'");

  // The data section starts at the next multiple of the alignment.
  const uint64_t header_end = r.pos();
  const uint64_t data_start = header_end + (align - header_end % align) % align;
  if (!entries.empty() && (data_start < header_end || data_start > b.size()))
    return r.bad("data section would start at " + std::to_string(data_start) + " (alignment " + std::to_string(align) +
                 "), past the end of the " + std::to_string(b.size()) + "-byte file (truncated?)");
  const uint64_t data_size = entries.empty() ? 0 : b.size() - data_start;
  for (const TensorEntry& e : entries) {
    std::string what = "tensor '" + e.name + "'";
    if (e.offset % align != 0)
      return r.bad(what + " offset " + std::to_string(e.offset) + " is not a multiple of the alignment " +
                   std::to_string(align));
    if (e.offset > data_size || e.size > data_size - e.offset)
      return r.bad(what + " bytes [" + std::to_string(e.offset) + ", +" + std::to_string(e.size) +
                   ") lie outside the data section of " + std::to_string(data_size) + " bytes (truncated?)");
  }
  std::vector<const TensorEntry*> by_offset;
  for (const TensorEntry& e : entries)
    if (e.size > 0) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorEntry* x, const TensorEntry* y) { return x->offset < y->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->offset < by_offset[i - 1]->offset + by_offset[i - 1]->size)
      return r.bad("tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap");

  const std::byte* data = b.data() + data_start;
  for (const TensorEntry& e : entries) {
    std::span<const std::byte> raw(data + e.offset, e.size);
    store->file_types_[e.name] = e.type;
    switch (e.type) {
      case GgmlType::kF32:
      case GgmlType::kF16:
      case GgmlType::kBF16: {
        DType dt = e.type == GgmlType::kF32 ? DType::kF32 : e.type == GgmlType::kF16 ? DType::kF16 : DType::kBF16;
        RADIX_ASSIGN_OR_RETURN(Shape shape, make_shape(dt, e.dims, path + ": GGUF: tensor '" + e.name + "'"));
        RADIX_RETURN_IF_ERROR(store->add_view(e.name, shape, raw));
        break;
      }
      case GgmlType::kQ4_0:
      case GgmlType::kQ8_0: {
        RADIX_ASSIGN_OR_RETURN(Shape shape, make_shape(DType::kF32, e.dims, path + ": GGUF: tensor '" + e.name + "'"));
        // Dequantized on first use: a model keeping the blocks never pays
        // for (or holds) the f32 copy (stories110M Q4_0: 512 MiB, 2 s).
        const GgmlType type = e.type;
        const size_t count = static_cast<size_t>(e.count);
        RADIX_RETURN_IF_ERROR(store->add_deferred(e.name, shape, [raw, type, count](std::span<std::byte> out) {
          std::span<float> f(reinterpret_cast<float*>(out.data()), count);
          if (type == GgmlType::kQ8_0) dequantize_q8_0(raw, f);
          else dequantize_q4_0(raw, f);
        }));
        store->blocks_.emplace(e.name, raw);
        break;
      }
    }
  }
  store->keep_alive(file);
  return store;
}

Result<std::span<const std::byte>> GgufStore::blocks(std::string_view name) const {
  auto it = blocks_.find(name);
  if (it != blocks_.end()) return it->second;
  if (!find(name)) return Status(ErrorCode::kNotFound, path() + ": no tensor named '" + std::string(name) + "'");
  return invalid_argument(path() + ": tensor '" + std::string(name) + "' is not Q4_0 or Q8_0: it has no blocks");
}

}  // namespace radix::io
