// Tests of radix::io weight stores: safetensors (reader, sharded index,
// writer, malformed headers), llama2.c checkpoints and open_weights.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "io_test_util.h"
#include "radix/io/llama2c.h"
#include "radix/io/safetensors.h"
#include "radix/io/weight_store.h"

namespace radix::io {
namespace {

using testing::put;
using testing::read_file;
using testing::write_file;

class SafetensorsTest : public testing::TempDirTest {};
class Llama2cTest : public testing::TempDirTest {};
class OpenWeightsTest : public testing::TempDirTest {};

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng() & 0xFF);
  return v;
}

std::string span_str(std::span<const std::byte> s) { return std::string(reinterpret_cast<const char*>(s.data()), s.size()); }

// A store holding one [2, 3] tensor per dtype, plus a scalar and an empty tensor.
std::unique_ptr<BasicWeightStore> every_dtype_store() {
  auto store = std::make_unique<BasicWeightStore>();
  uint32_t seed = 1;
  for (DType d : kAllDTypes) {
    Shape s(d, {2, 3});
    EXPECT_TRUE(store->add_owned("t_" + std::string(dtype_name(d)), s, random_bytes(s.byte_size(), seed++)).ok());
  }
  Shape scalar(DType::kF64);
  EXPECT_TRUE(store->add_owned("scalar", scalar, random_bytes(8, 99)).ok());
  EXPECT_TRUE(store->add_owned("empty", Shape(DType::kF32, {0, 4}), {}).ok());
  store->mutable_metadata() = {{"format", "pt"}, {"note", "h\xc3\xa9llo \"quoted\""}};
  return store;
}

// A safetensors file from a header string and a data region.
std::string st_file(const std::string& header, const std::string& data) {
  std::string f;
  put<uint64_t>(f, header.size());
  return f + header + data;
}

// Expects opening `path` to fail with kInvalidArgument and a message naming the file and containing `fact`.
void expect_rejected(const std::string& path, const std::string& fact) {
  auto r = open_safetensors(path);
  ASSERT_FALSE(r.ok()) << "accepted: " << fact;
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << r.status().to_string();
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(fact), std::string::npos) << "missing '" << fact << "' in: " << r.status().message();
  EXPECT_FALSE(open_weights(path).ok());
}

TEST_F(SafetensorsTest, RoundTripEveryDType) {
  auto store = every_dtype_store();
  std::string p = path("model.safetensors");
  ASSERT_TRUE(write_safetensors(p, *store).ok());

  auto r = open_safetensors(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const WeightStore& back = **r;
  EXPECT_EQ(back.format(), "safetensors");
  EXPECT_EQ(back.path(), p);
  EXPECT_EQ(back.metadata(), store->metadata());
  ASSERT_EQ(back.tensors().size(), store->tensors().size());
  EXPECT_EQ(back.total_bytes(), store->total_bytes());
  // Written and listed in sorted name order.
  for (size_t i = 1; i < back.tensors().size(); ++i) EXPECT_LT(back.tensors()[i - 1].name, back.tensors()[i].name);
  for (const TensorInfo& t : store->tensors()) {
    const TensorInfo* b = back.find(t.name);
    ASSERT_NE(b, nullptr) << t.name;
    EXPECT_EQ(b->shape, t.shape) << t.name;
    EXPECT_EQ(b->shape.dtype(), t.shape.dtype()) << t.name;
    EXPECT_EQ(span_str(*back.bytes(t.name)), span_str(*store->bytes(t.name))) << t.name;
  }
  // Header padded with spaces so data starts 8-byte aligned.
  std::string raw = read_file(p);
  uint64_t n;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw.size(), 8 + n + store->total_bytes());
  EXPECT_EQ(raw[8], '{');
  EXPECT_NE(raw.find("\"dtype\":\"BF16\""), std::string::npos);

  auto missing = back.bytes("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  EXPECT_EQ(back.find("nope"), nullptr);

  // Explicit metadata replaces the store's; a second write replaces the file.
  ASSERT_TRUE(write_safetensors(p, *store, {{"k", "v"}}).ok());
  auto again = open_weights(p);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ((*again)->metadata(), (std::map<std::string, std::string>{{"k", "v"}}));
  EXPECT_EQ((*again)->format(), "safetensors");
  // Nothing but the file is left in the folder (temp files renamed away).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1);
}

TEST_F(SafetensorsTest, WriterRejectsBadInput) {
  std::vector<std::byte> four(4), eight(8);
  std::string p = path("bad.safetensors");
  Shape s(DType::kF32, {1});
  std::vector<TensorData> dup = {{"a", s, four}, {"a", s, four}};
  std::vector<TensorData> size = {{"a", s, eight}};
  std::vector<TensorData> meta = {{"__metadata__", s, four}};
  std::vector<TensorData> empty = {{"", s, four}};
  for (const auto& [tensors, fact] : {std::pair{dup, "duplicate"}, std::pair{size, "needs 4 bytes, got 8"},
                                      std::pair{meta, "__metadata__"}, std::pair{empty, "empty"}}) {
    Status st = write_safetensors(p, tensors);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << fact;
    EXPECT_NE(st.message().find(fact), std::string::npos) << st.message();
  }
  EXPECT_FALSE(std::filesystem::exists(p));
  Status st = write_safetensors(path("no/such/dir/x.safetensors"), std::vector<TensorData>{{"a", s, four}});
  EXPECT_EQ(st.code(), ErrorCode::kIoError) << st.to_string();
  EXPECT_NE(st.message().find("no/such/dir/x.safetensors"), std::string::npos);
}

TEST_F(SafetensorsTest, ShardedIndex) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8}, c = {9};
  auto as_bytes = [](const std::vector<float>& v) { return std::as_bytes(std::span(v)); };
  ASSERT_TRUE(write_safetensors(path("model-00001-of-00002.safetensors"),
                                std::vector<TensorData>{{"layers.0.w", Shape(DType::kF32, {2, 3}), as_bytes(a)},
                                                        {"embed", Shape(DType::kF32, {2}), as_bytes(b)}},
                                {{"format", "pt"}})
                  .ok());
  ASSERT_TRUE(write_safetensors(path("model-00002-of-00002.safetensors"),
                                std::vector<TensorData>{{"norm", Shape(DType::kF32, {1}), as_bytes(c)}})
                  .ok());
  std::string index = path("model.safetensors.index.json");
  write_file(index, R"({
    "metadata": {"total_size": 36},
    "weight_map": {"layers.0.w": "model-00001-of-00002.safetensors",
                   "embed": "model-00001-of-00002.safetensors",
                   "norm": "model-00002-of-00002.safetensors"}
  })");
  for (int via_open_weights = 0; via_open_weights < 2; ++via_open_weights) {
    auto r = via_open_weights ? open_weights(index) : open_safetensors(index);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const WeightStore& s = **r;
    EXPECT_EQ(s.format(), "safetensors");
    EXPECT_EQ(s.path(), index);
    ASSERT_EQ(s.tensors().size(), 3u);
    EXPECT_EQ(s.tensors()[0].name, "embed");  // shard 1 in file order, then shard 2
    EXPECT_EQ(s.tensors()[1].name, "layers.0.w");
    EXPECT_EQ(s.tensors()[2].name, "norm");
    EXPECT_EQ(s.find("layers.0.w")->shape, Shape(DType::kF32, {2, 3}));
    EXPECT_EQ(span_str(*s.bytes("layers.0.w")), span_str(as_bytes(a)));
    EXPECT_EQ(span_str(*s.bytes("norm")), span_str(as_bytes(c)));
    EXPECT_EQ(s.metadata().at("total_size"), "36");
    EXPECT_EQ(s.metadata().at("format"), "pt");
    EXPECT_EQ(s.total_bytes(), 36u);
  }
}

TEST_F(SafetensorsTest, ShardedIndexErrors) {
  std::vector<float> a = {1};
  ASSERT_TRUE(write_safetensors(path("s1.safetensors"),
                                std::vector<TensorData>{{"a", Shape(DType::kF32, {1}), std::as_bytes(std::span(a))}})
                  .ok());
  std::string index = path("model.safetensors.index.json");
  write_file(index, R"({"weight_map": {"a": "s1.safetensors", "b": "missing-shard.safetensors"}})");
  auto r = open_weights(index);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound) << r.status().to_string();
  EXPECT_NE(r.status().message().find("missing-shard.safetensors"), std::string::npos) << r.status().message();

  write_file(index, R"({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}})");
  r = open_safetensors(index);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'b'"), std::string::npos) << r.status().message();

  write_file(index, R"({"weight_map": {"a": "../s1.safetensors"}})");
  EXPECT_NE(open_safetensors(index).status().message().find("bad shard path"), std::string::npos);
  write_file(index, R"({"weight_map": {"a": "/etc/passwd"}})");
  EXPECT_NE(open_safetensors(index).status().message().find("bad shard path"), std::string::npos);
  write_file(index, R"({"metadata": {}})");
  EXPECT_NE(open_safetensors(index).status().message().find("weight_map"), std::string::npos);
  write_file(index, R"({"weight_map": {"a": "s1.safetensors", "a": "s1.safetensors"}})");
  EXPECT_NE(open_safetensors(index).status().message().find("duplicate key 'a'"), std::string::npos);
}

TEST_F(SafetensorsTest, MaliciousHeadersRejected) {
  const std::string data(16, '\0');
  auto one = [](const std::string& entry) { return "{\"a\":" + entry + "}"; };
  struct Case {
    std::string name, file, fact;
  };
  std::string huge;
  put<uint64_t>(huge, uint64_t{1} << 60);
  huge += "{}";
  std::string too_long;
  put<uint64_t>(too_long, 100);
  too_long += "{\"a\":1}";
  std::string deep = std::string(100, '[') + std::string(100, ']');
  std::vector<Case> cases = {
      {"short", "abc", "too short"},
      {"length_past_file", too_long, "larger than the file"},
      {"huge_length", huge, "exceeds the limit"},
      {"invalid_json", st_file("{\"a\": {", data), "not valid JSON"},
      {"not_object", st_file("{\"a\": 1}", data), "not a JSON object"},
      {"offsets_out_of_file", st_file(one(R"({"dtype":"F32","shape":[8],"data_offsets":[0,32]})"), data),
       "out of the data region of 16 bytes"},
      {"begin_after_end", st_file(one(R"({"dtype":"F32","shape":[1],"data_offsets":[8,4]})"), data),
       "begin 8 > end 4"},
      {"size_mismatch", st_file(one(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,16]})"), data),
       "needs 24"},
      {"overlap",
       st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[2],"data_offsets":[4,12]}})",
               data),
       "overlapping"},
      {"duplicate_names",
       st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
               data),
       "duplicate key 'a'"},
      {"unknown_dtype", st_file(one(R"({"dtype":"Q7","shape":[1],"data_offsets":[0,4]})"), data), "unknown dtype 'Q7'"},
      {"f8_dtype", st_file(one(R"({"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]})"), data),
       "unsupported dtype F8_E4M3"},
      {"negative_dim", st_file(one(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})"), data), "shape entry -1"},
      {"float_dim", st_file(one(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})"), data), "shape entry 1.5"},
      {"rank_9", st_file(one(R"({"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]})"), data), "rank 9"},
      {"dims_overflow",
       st_file(one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})"), data), "tensor 'a'"},
      {"missing_offsets", st_file(one(R"({"dtype":"F32","shape":[1]})"), data), "data_offsets"},
      {"negative_offset", st_file(one(R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})"), data), "data_offsets"},
      {"metadata_not_string", st_file(R"({"__metadata__":{"k":3}})", data), "not a string"},
      {"empty_name", st_file(R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data), "empty tensor name"},
      {"bad_utf8", st_file("{\"\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", data), "JSON"},
      {"deep_nesting", st_file("{\"a\":" + deep + "}", data), "nested deeper"},
      {"no_brace", st_file("[1]     ", data), "does not start with '{'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string p = path(c.name + ".safetensors");
    write_file(p, c.file);
    expect_rejected(p, c.fact);
  }
}

TEST_F(SafetensorsTest, TruncatedAtEveryLength) {
  auto store = every_dtype_store();
  std::string p = path("full.safetensors");
  ASSERT_TRUE(write_safetensors(p, *store).ok());
  std::string full = read_file(p);
  ASSERT_TRUE(open_safetensors(p).ok());
  uint64_t n;
  std::memcpy(&n, full.data(), 8);
  std::string cut = path("cut.safetensors");
  for (size_t len = 0; len < full.size(); ++len) {
    write_file(cut, full.substr(0, len));
    auto r = open_safetensors(cut);
    ASSERT_FALSE(r.ok()) << "accepted a file cut to " << len << " of " << full.size() << " bytes";
    if (len >= 8 + n) {
      EXPECT_NE(r.status().message().find("out of the data region"), std::string::npos) << r.status().message();
    }
  }
}

// ---- llama2.c ---------------------------------------------------------------

const char* kStories = "/work/shared/models/stories260K/stories260K.bin";

TEST_F(Llama2cTest, Stories260K) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not present";
  auto r = open_llama2c(kStories);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const Llama2cStore& s = **r;
  Llama2cConfig want{64, 172, 5, 8, 4, 512, 512, true};
  EXPECT_EQ(s.config(), want);
  EXPECT_EQ(s.config().kv_dim(), 32);
  EXPECT_EQ(s.format(), "llama2c");
  EXPECT_EQ(s.metadata().at("llama2c.dim"), "64");
  EXPECT_EQ(s.metadata().at("llama2c.n_kv_heads"), "4");
  EXPECT_EQ(s.metadata().at("llama2c.vocab_size"), "512");
  EXPECT_EQ(s.metadata().at("llama2c.shared_classifier"), "true");
  EXPECT_EQ(s.tensors().size(), 1u + 5 * 9 + 2);
  EXPECT_EQ(s.tensors().front().name, "tok_embeddings");
  EXPECT_EQ(s.tensors().back().name, "output");
  EXPECT_EQ(s.find("tok_embeddings")->shape, Shape(DType::kF32, {512, 64}));
  EXPECT_EQ(s.find("layers.0.attention_norm")->shape, Shape(DType::kF32, {64}));
  EXPECT_EQ(s.find("layers.0.attention.wq")->shape, Shape(DType::kF32, {64, 64}));
  EXPECT_EQ(s.find("layers.0.attention.wk")->shape, Shape(DType::kF32, {32, 64}));
  EXPECT_EQ(s.find("layers.4.attention.wv")->shape, Shape(DType::kF32, {32, 64}));
  EXPECT_EQ(s.find("layers.4.attention.wo")->shape, Shape(DType::kF32, {64, 64}));
  EXPECT_EQ(s.find("layers.1.ffn_norm")->shape, Shape(DType::kF32, {64}));
  EXPECT_EQ(s.find("layers.2.feed_forward.w1")->shape, Shape(DType::kF32, {172, 64}));
  EXPECT_EQ(s.find("layers.2.feed_forward.w2")->shape, Shape(DType::kF32, {64, 172}));
  EXPECT_EQ(s.find("layers.2.feed_forward.w3")->shape, Shape(DType::kF32, {172, 64}));
  EXPECT_EQ(s.find("norm")->shape, Shape(DType::kF32, {64}));
  EXPECT_EQ(s.find("output")->shape, Shape(DType::kF32, {512, 64}));
  EXPECT_EQ(s.find("layers.5.ffn_norm"), nullptr);
  EXPECT_EQ(s.find("freq_cis_real"), nullptr);

  // layers.2.feed_forward.w1, located from the README's layout by hand.
  const size_t dim = 64, hidden = 172, L = 5, vocab = 512, kv = 32;
  size_t floats = vocab * dim + L * dim + L * dim * dim + 2 * L * kv * dim + L * dim * dim + L * dim + 2 * hidden * dim;
  std::string file = read_file(kStories);
  ASSERT_EQ(file.size(), 1056540u);
  std::string want_w1 = file.substr(28 + 4 * floats, 4 * hidden * dim);
  EXPECT_EQ(span_str(*s.bytes("layers.2.feed_forward.w1")), want_w1);
  // norm: right after w3; the embedding right after the header.
  size_t norm_at = 28 + 4 * (vocab * dim + 2 * L * dim + 2 * L * dim * dim + 2 * L * kv * dim + 3 * L * hidden * dim);
  EXPECT_EQ(span_str(*s.bytes("norm")), file.substr(norm_at, 4 * dim));
  EXPECT_EQ(span_str(*s.bytes("tok_embeddings")), file.substr(28, 4 * vocab * dim));
  // Shared classifier: the very same bytes.
  EXPECT_EQ(s.bytes("output")->data(), s.bytes("tok_embeddings")->data());

  auto w = open_weights(kStories);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ((*w)->format(), "llama2c");

  // A truncated copy: the error states expected and actual sizes.
  std::string cut = path("cut.bin");
  write_file(cut, file.substr(0, file.size() - 4));
  auto bad = open_llama2c(cut);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("expected 1056540 bytes"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("has 1056536"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find(cut), std::string::npos);
  EXPECT_FALSE(open_weights(cut).ok());
}

// A small checkpoint written here: dim 8, hidden 12, 2 layers, 4 heads, 2 kv heads, vocab 10 (negative: untied), seq 6.
std::string tiny_checkpoint(int32_t vocab_field, std::vector<float>* values) {
  std::string f;
  for (int32_t v : {8, 12, 2, 4, 2, vocab_field, 6}) put<int32_t>(f, v);
  const size_t d = 8, h = 12, L = 2, kv = 4, v = 10, head = 2;
  size_t n = v * d + L * d + L * d * d + 2 * L * kv * d + L * d * d + L * d + 3 * L * h * d + d + 2 * 6 * head / 2;
  if (vocab_field < 0) n += v * d;
  values->resize(n);
  for (size_t i = 0; i < n; ++i) (*values)[i] = static_cast<float>(i);
  f.append(reinterpret_cast<const char*>(values->data()), 4 * n);
  return f;
}

TEST_F(Llama2cTest, UntiedClassifierAndBadHeaders) {
  std::vector<float> vals;
  std::string p = path("untied.bin");
  write_file(p, tiny_checkpoint(-10, &vals));
  auto r = open_weights(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const WeightStore& s = **r;
  EXPECT_EQ(s.metadata().at("llama2c.shared_classifier"), "false");
  EXPECT_EQ(s.metadata().at("llama2c.vocab_size"), "10");
  auto out = *s.bytes("output");
  ASSERT_EQ(out.size(), 4u * 10 * 8);
  float first;
  std::memcpy(&first, out.data(), 4);
  EXPECT_EQ(first, static_cast<float>(vals.size() - 80));  // the trailing array
  EXPECT_NE(out.data(), s.bytes("tok_embeddings")->data());
  EXPECT_EQ(s.find("layers.1.attention.wk")->shape, Shape(DType::kF32, {4, 8}));
  auto typed = open_llama2c(p);
  ASSERT_TRUE(typed.ok());
  EXPECT_FALSE((*typed)->config().shared_classifier);

  struct Case {
    std::vector<int32_t> header;
    std::string fact;
  };
  std::vector<Case> cases = {
      {{8, 12, 2, 3, 1, 10, 6}, "dim 8 is not divisible by n_heads 3"},
      {{8, 12, 2, 4, 3, 10, 6}, "n_heads 4 is not divisible by n_kv_heads 3"},
      {{0, 12, 2, 4, 2, 10, 6}, "dim = 0"},
      {{8, -12, 2, 4, 2, 10, 6}, "hidden_dim = -12"},
      {{8, 12, 2, 4, 2, 10, 1 << 30}, "seq_len = 1073741824"},
      {{1 << 24, 1 << 24, 1 << 24, 1 << 24, 1 << 24, 1 << 24, 1 << 24}, "expected"},  // sizes past 2^64
  };
  for (const Case& c : cases) {
    std::string f;
    for (int32_t v : c.header) put<int32_t>(f, v);
    f += std::string(64, '\0');
    write_file(p, f);
    auto bad = open_llama2c(p);
    ASSERT_FALSE(bad.ok()) << c.fact;
    EXPECT_NE(bad.status().message().find(c.fact), std::string::npos) << bad.status().message();
    EXPECT_FALSE(open_weights(p).ok());
  }
  // Trailing bytes are rejected too.
  write_file(p, tiny_checkpoint(10, &vals) + "xxxx");
  EXPECT_NE(open_llama2c(p).status().message().find("trailing"), std::string::npos);
}

// ---- open_weights -----------------------------------------------------------

TEST_F(OpenWeightsTest, UnknownAndMissing) {
  auto r = open_weights(path("absent.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status().message().find("absent.bin"), std::string::npos);

  std::string p = path("junk.bin");
  write_file(p, std::string(100, '\x07'));
  r = open_weights(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unrecognized"), std::string::npos) << r.status().message();
  write_file(p, "");
  EXPECT_NE(open_weights(p).status().message().find("unrecognized"), std::string::npos);

  // Content that fits nothing: the extension picks the reader whose error is shown.
  std::string st = path("x.safetensors");
  std::string f;
  put<uint64_t>(f, uint64_t{1} << 60);
  write_file(st, f + "{}");
  EXPECT_NE(open_weights(st).status().message().find("exceeds the limit"), std::string::npos);

  EXPECT_EQ(open_weights(dir_.string()).status().code(), ErrorCode::kIoError);
}

}  // namespace
}  // namespace radix::io
