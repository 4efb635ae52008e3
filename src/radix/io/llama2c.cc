#include "radix/io/llama2c.h"

#include <cstring>
#include <utility>
#include <vector>

#include "radix/io/mapped_file.h"

namespace radix::io {

namespace {

constexpr int32_t kMaxField = 1 << 24;

Status bad(const std::string& path, const std::string& msg) {
  return invalid_argument(path + ": llama2.c checkpoint: " + msg);
}

// Sizes of the f32 arrays, in file order. 128-bit: with fields up to 2^24,
// n_layers * hidden * dim alone may pass 2^64.
using u128 = unsigned __int128;
struct Layout {
  u128 embed, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, freq_cis, classifier;
};

Layout layout(const Llama2cConfig& c) {
  u128 L = static_cast<u128>(c.n_layers), d = static_cast<u128>(c.dim);
  u128 h = static_cast<u128>(c.hidden_dim), kv = static_cast<u128>(c.kv_dim());
  u128 v = static_cast<u128>(c.vocab_size);
  Layout l{};
  l.embed = v * d;
  l.rms_att = L * d;
  l.wq = L * d * d;
  l.wk = L * kv * d;
  l.wv = L * kv * d;
  l.wo = L * d * d;
  l.rms_ffn = L * d;
  l.w1 = L * h * d;
  l.w2 = L * d * h;
  l.w3 = L * h * d;
  l.rms_final = d;
  // As llama2.c's run.c skips it: seq_len * head_size / 2 floats, twice.
  l.freq_cis = 2 * (static_cast<u128>(c.seq_len) * static_cast<u128>(c.head_size()) / 2);
  l.classifier = c.shared_classifier ? 0 : v * d;
  return l;
}

}  // namespace

Result<Llama2cConfig> parse_llama2c_header(std::span<const std::byte> header, const std::string& path) {
  if (header.size() < kLlama2cHeaderBytes)
    return bad(path, "file of " + std::to_string(header.size()) + " bytes is too short for the 28-byte header");
  int32_t f[7];
  std::memcpy(f, header.data(), sizeof f);
  static const char* kNames[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  for (int i = 0; i < 7; ++i) {
    int64_t v = f[i];
    if (i == 5 && v < 0) v = -v;  // negative vocab_size: unshared classifier
    if (v < 1 || v > kMaxField)
      return bad(path, std::string("header field ") + kNames[i] + " = " + std::to_string(f[i]) + " is not in [1, " +
                           std::to_string(kMaxField) + "]" + (i == 5 ? " in magnitude" : ""));
  }
  Llama2cConfig c;
  c.dim = f[0];
  c.hidden_dim = f[1];
  c.n_layers = f[2];
  c.n_heads = f[3];
  c.n_kv_heads = f[4];
  c.shared_classifier = f[5] > 0;
  c.vocab_size = f[5] > 0 ? f[5] : -f[5];
  c.seq_len = f[6];
  if (c.dim % c.n_heads != 0)
    return bad(path, "dim " + std::to_string(c.dim) + " is not divisible by n_heads " + std::to_string(c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0)
    return bad(path, "n_heads " + std::to_string(c.n_heads) + " is not divisible by n_kv_heads " +
                         std::to_string(c.n_kv_heads));
  return c;
}

uint64_t llama2c_file_bytes(const Llama2cConfig& c) {
  Layout l = layout(c);
  u128 floats = l.embed + l.rms_att + l.wq + l.wk + l.wv + l.wo + l.rms_ffn + l.w1 + l.w2 + l.w3 + l.rms_final +
                l.freq_cis + l.classifier;
  u128 bytes = kLlama2cHeaderBytes + 4 * floats;
  return bytes > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

void add_llama2c_metadata(const Llama2cConfig& c, std::map<std::string, std::string>& md) {
  md["llama2c.dim"] = std::to_string(c.dim);
  md["llama2c.hidden_dim"] = std::to_string(c.hidden_dim);
  md["llama2c.n_layers"] = std::to_string(c.n_layers);
  md["llama2c.n_heads"] = std::to_string(c.n_heads);
  md["llama2c.n_kv_heads"] = std::to_string(c.n_kv_heads);
  md["llama2c.vocab_size"] = std::to_string(c.vocab_size);
  md["llama2c.seq_len"] = std::to_string(c.seq_len);
  md["llama2c.shared_classifier"] = c.shared_classifier ? "true" : "false";
}

Result<std::unique_ptr<Llama2cStore>> open_llama2c(const std::string& path) {
  RADIX_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  auto file = std::make_shared<MappedFile>(std::move(mapped));
  std::span<const std::byte> b = file->bytes();
  RADIX_ASSIGN_OR_RETURN(Llama2cConfig c, parse_llama2c_header(b, path));
  uint64_t expected = llama2c_file_bytes(c);
  if (b.size() != expected)
    return bad(path, "expected " + std::to_string(expected) + " bytes for dim=" + std::to_string(c.dim) +
                         " hidden_dim=" + std::to_string(c.hidden_dim) + " n_layers=" + std::to_string(c.n_layers) +
                         " n_heads=" + std::to_string(c.n_heads) + " n_kv_heads=" + std::to_string(c.n_kv_heads) +
                         " vocab_size=" + std::to_string(c.shared_classifier ? c.vocab_size : -c.vocab_size) +
                         " seq_len=" + std::to_string(c.seq_len) + ", but the file has " + std::to_string(b.size()) +
                         (b.size() < expected ? " (truncated)" : " (trailing bytes)"));

  auto store = std::make_unique<Llama2cStore>(path, c);
  add_llama2c_metadata(c, store->mutable_metadata());

  const std::byte* p = b.data() + kLlama2cHeaderBytes;
  const int64_t d = c.dim, h = c.hidden_dim, kv = c.kv_dim(), v = c.vocab_size;
  // Adds one array of `count` tensors of `dims` each (count 0: a single
  // tensor named `name`), advancing p.
  auto add = [&](const std::string& name, int count, std::vector<int64_t> dims) -> Status {
    Shape shape(DType::kF32, dims);
    size_t n = shape.byte_size();
    if (count == 0) {
      RADIX_RETURN_IF_ERROR(store->add_view(name, shape, {p, n}));
      p += n;
      return Status::ok_status();
    }
    for (int i = 0; i < count; ++i, p += n)
      RADIX_RETURN_IF_ERROR(store->add_view("layers." + std::to_string(i) + "." + name, shape, {p, n}));
    return Status::ok_status();
  };
  const int L = c.n_layers;
  const std::byte* embed = p;
  RADIX_RETURN_IF_ERROR(add("tok_embeddings", 0, {v, d}));
  RADIX_RETURN_IF_ERROR(add("attention_norm", L, {d}));
  RADIX_RETURN_IF_ERROR(add("attention.wq", L, {d, d}));
  RADIX_RETURN_IF_ERROR(add("attention.wk", L, {kv, d}));
  RADIX_RETURN_IF_ERROR(add("attention.wv", L, {kv, d}));
  RADIX_RETURN_IF_ERROR(add("attention.wo", L, {d, d}));
  RADIX_RETURN_IF_ERROR(add("ffn_norm", L, {d}));
  RADIX_RETURN_IF_ERROR(add("feed_forward.w1", L, {h, d}));
  RADIX_RETURN_IF_ERROR(add("feed_forward.w2", L, {d, h}));
  RADIX_RETURN_IF_ERROR(add("feed_forward.w3", L, {h, d}));
  RADIX_RETURN_IF_ERROR(add("norm", 0, {d}));
  p += static_cast<size_t>(4 * layout(c).freq_cis);
  if (c.shared_classifier) {
    RADIX_RETURN_IF_ERROR(store->add_view("output", Shape(DType::kF32, {v, d}), {embed, static_cast<size_t>(4 * v * d)}));
  } else {
    RADIX_RETURN_IF_ERROR(add("output", 0, {v, d}));
  }
  if (p != b.data() + b.size()) return bad(path, "internal layout mismatch");  // cannot happen: sizes checked above
  store->keep_alive(file);
  return store;
}

}  // namespace radix::io
