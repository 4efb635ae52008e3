// Tests of the GGUF v3 reader: files are built here by a tiny writer that
// follows the spec, and expected values come straight from the format's
// definition (f16 scales written as hand-picked exact bit patterns).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "io/gguf_writer.h"
#include "io_test_util.h"
#include "radix/io/gguf.h"
#include "radix/io/weight_store.h"

namespace radix::io {
namespace {

using testing::arr;
using testing::GgufFile;
using testing::gstr;
using testing::put;
using testing::raw;
using testing::read_file;
using testing::scalar;
using testing::str;
using testing::V;
using testing::write_file;

class GgufTest : public testing::TempDirTest {};

// Exact f16 scales (bits, value).
constexpr std::pair<uint16_t, float> kScales[] = {
    {0x3800, 0.5f}, {0x3400, 0.25f}, {0xBE00, -1.5f}, {0x4000, 2.0f}, {0x1400, 1.0f / 1024}, {0x0000, 0.0f}};

// Q8_0 blocks with a q pattern covering -128..127; fills `want` from x = d * q.
std::string q8_0_data(size_t blocks, std::vector<float>* want) {
  std::string out;
  for (size_t b = 0; b < blocks; ++b) {
    auto [bits, d] = kScales[b % std::size(kScales)];
    put<uint16_t>(out, bits);
    for (int j = 0; j < 32; ++j) {
      auto q = static_cast<int8_t>(static_cast<int>((b * 32 + static_cast<size_t>(j)) * 37 % 256) - 128);
      out.push_back(static_cast<char>(q));
      want->push_back(d * static_cast<float>(q));
    }
  }
  return out;
}

// Q4_0 blocks: value j in the low nibble of byte j, value j + 16 in its high nibble; x = d * (nibble - 8).
std::string q4_0_data(size_t blocks, std::vector<float>* want) {
  std::string out;
  for (size_t b = 0; b < blocks; ++b) {
    auto [bits, d] = kScales[(b + 1) % std::size(kScales)];
    put<uint16_t>(out, bits);
    int nib[32];
    for (int j = 0; j < 32; ++j) nib[j] = static_cast<int>((b * 7 + static_cast<size_t>(j) * 5) % 16);
    for (int j = 0; j < 16; ++j) out.push_back(static_cast<char>(nib[j] | (nib[j + 16] << 4)));
    for (int j = 0; j < 32; ++j) want->push_back(d * static_cast<float>(nib[j] - 8));
  }
  return out;
}

struct Fixture {
  GgufFile file;
  std::vector<float> f32, q8, q4;
  std::vector<uint16_t> f16, bf16;
};

Fixture make_fixture(uint64_t alignment) {
  Fixture fx;
  GgufFile& g = fx.file;
  g.alignment = alignment;
  g.kv = {
      {"general.architecture", str("llama")},
      {"t.u8", scalar<uint8_t>(0, 200)},
      {"t.i8", scalar<int8_t>(1, -100)},
      {"t.u16", scalar<uint16_t>(2, 60000)},
      {"t.i16", scalar<int16_t>(3, -30000)},
      {"t.u32", scalar<uint32_t>(4, 4000000000u)},
      {"t.i32", scalar<int32_t>(5, -2000000000)},
      {"t.f32", scalar<float>(6, 0.5f)},
      {"t.bool", scalar<uint8_t>(7, 1)},
      {"t.u64", scalar<uint64_t>(10, 18000000000000000000ull)},
      {"t.i64", scalar<int64_t>(11, -9000000000000000000ll)},
      {"t.f64", scalar<double>(12, 0.1)},
      {"t.ints", arr(5, {scalar<int32_t>(5, 1), scalar<int32_t>(5, -2), scalar<int32_t>(5, 3)})},
      {"t.strings", arr(8, {str("a"), str("b\"c"), str("")})},
      {"t.nested", arr(9, {arr(0, {scalar<uint8_t>(0, 1), scalar<uint8_t>(0, 2)}), arr(0, {})})},
      {"t.empty", arr(12, {})},
  };
  if (alignment != 32) g.kv.push_back({"general.alignment", scalar<uint32_t>(4, static_cast<uint32_t>(alignment))});
  for (int i = 0; i < 12; ++i) fx.f32.push_back(static_cast<float>(i) * 0.25f - 1.0f);
  fx.f16 = {0x3C00, 0xC000, 0x3555, 0x7C00, 0x0001, 0x8000};  // 1, -2, ~1/3, inf, tiny, -0
  fx.bf16 = {0x3F80, 0xC040, 0x4049, 0x0000};               // 1, -3, ~3.14, 0
  g.tensors = {
      {"f32", {4, 3}, 0, raw(fx.f32)},
      {"f16", {6}, 1, raw(fx.f16)},
      {"bf16", {2, 2}, 30, raw(fx.bf16)},
      {"q8", {64, 3}, 8, q8_0_data(6, &fx.q8)},
      {"q4", {32, 2, 2}, 2, q4_0_data(4, &fx.q4)},
  };
  return fx;
}

std::vector<float> floats(std::span<const std::byte> b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

void check_fixture(const GgufStore& s, const Fixture& fx) {
  EXPECT_EQ(s.format(), "gguf");
  EXPECT_EQ(s.version(), 3u);
  ASSERT_EQ(s.tensors().size(), 5u);
  EXPECT_EQ(s.tensors()[0].name, "f32");  // file order
  EXPECT_EQ(s.tensors()[4].name, "q4");
  EXPECT_EQ(s.find("f32")->shape, Shape(DType::kF32, {3, 4}));  // ne reversed
  EXPECT_EQ(s.find("f16")->shape, Shape(DType::kF16, {6}));
  EXPECT_EQ(s.find("bf16")->shape, Shape(DType::kBF16, {2, 2}));
  EXPECT_EQ(s.find("q8")->shape, Shape(DType::kF32, {3, 64}));
  EXPECT_EQ(s.find("q4")->shape, Shape(DType::kF32, {2, 2, 32}));
  EXPECT_EQ(s.file_type("q8"), GgmlType::kQ8_0);
  EXPECT_EQ(s.file_type("q4"), GgmlType::kQ4_0);
  EXPECT_EQ(s.file_type("f32"), GgmlType::kF32);
  auto str_of = [&](const char* n) {
    auto b = *s.bytes(n);
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  };
  EXPECT_EQ(str_of("f32"), raw(fx.f32));
  EXPECT_EQ(str_of("f16"), raw(fx.f16));
  EXPECT_EQ(str_of("bf16"), raw(fx.bf16));
  // Quantized tensors: their blocks as stored, dequantized only once asked.
  EXPECT_EQ(s.dequantized("q8"), false);
  const std::string q8_blocks = fx.file.tensors[3].data, q4_blocks = fx.file.tensors[4].data;
  auto blocks_of = [&](const char* n) {
    auto b = *s.blocks(n);
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  };
  EXPECT_EQ(blocks_of("q8"), q8_blocks);
  EXPECT_EQ(blocks_of("q4"), q4_blocks);
  EXPECT_EQ(s.blocks("f32").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.blocks("f32").status().message().find("'f32' is not Q4_0 or Q8_0"), std::string::npos);
  EXPECT_EQ(s.blocks("nope").status().code(), ErrorCode::kNotFound);
  std::vector<float> q8 = floats(*s.bytes("q8")), q4 = floats(*s.bytes("q4"));
  EXPECT_TRUE(s.dequantized("q8"));
  EXPECT_FALSE(s.dequantized("f32"));
  ASSERT_EQ(q8.size(), fx.q8.size());
  ASSERT_EQ(q4.size(), fx.q4.size());
  for (size_t i = 0; i < q8.size(); ++i) ASSERT_EQ(q8[i], fx.q8[i]) << "q8 element " << i;
  for (size_t i = 0; i < q4.size(); ++i) ASSERT_EQ(q4[i], fx.q4[i]) << "q4 element " << i;
  EXPECT_EQ(q8[1], 0.5f * -91);  // block 0: d = 0.5, q[1] = 37 - 128
  EXPECT_EQ(q4[16], 0.25f * (0 - 8));  // block 0: d = 0.25, value 16 = high nibble of byte 0 = 80 % 16

  // Typed metadata.
  EXPECT_EQ(*s.value("general.architecture")->as_string(), "llama");
  EXPECT_EQ(s.value("t.u8")->type(), GgufType::kU8);
  EXPECT_EQ(s.value("t.u8")->as_int(), 200);
  EXPECT_EQ(s.value("t.i8")->as_int(), -100);
  EXPECT_EQ(s.value("t.u16")->as_int(), 60000);
  EXPECT_EQ(s.value("t.i16")->as_int(), -30000);
  EXPECT_EQ(s.value("t.u32")->as_uint(), 4000000000u);
  EXPECT_EQ(s.value("t.i32")->as_int(), -2000000000);
  EXPECT_EQ(s.value("t.f32")->as_float(), 0.5);
  EXPECT_EQ(s.value("t.f32")->type(), GgufType::kF32);
  EXPECT_EQ(s.value("t.bool")->as_bool(), true);
  EXPECT_EQ(s.value("t.bool")->as_int(), std::nullopt);
  EXPECT_EQ(s.value("t.u64")->as_uint(), 18000000000000000000ull);
  EXPECT_EQ(s.value("t.u64")->as_int(), std::nullopt);  // does not fit
  EXPECT_EQ(s.value("t.i64")->as_int(), -9000000000000000000ll);
  EXPECT_EQ(s.value("t.f64")->as_float(), 0.1);
  EXPECT_EQ(s.value("t.f64")->type(), GgufType::kF64);
  const GgufArray* ints = s.value("t.ints")->as_array();
  ASSERT_NE(ints, nullptr);
  EXPECT_EQ(ints->type, GgufType::kI32);
  ASSERT_EQ(ints->items.size(), 3u);
  EXPECT_EQ(ints->items[1].as_int(), -2);
  const GgufArray* nested = s.value("t.nested")->as_array();
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->type, GgufType::kArray);
  EXPECT_EQ(nested->items[0].as_array()->items[1].as_int(), 2);
  EXPECT_EQ(s.value("absent"), nullptr);

  // The string view.
  const auto& md = s.metadata();
  EXPECT_EQ(md.at("general.architecture"), "llama");
  EXPECT_EQ(md.at("t.u8"), "200");
  EXPECT_EQ(md.at("t.i8"), "-100");
  EXPECT_EQ(md.at("t.u64"), "18000000000000000000");
  EXPECT_EQ(md.at("t.i64"), "-9000000000000000000");
  EXPECT_EQ(md.at("t.f32"), "0.5");
  EXPECT_EQ(md.at("t.f64"), "0.1");
  EXPECT_EQ(md.at("t.bool"), "true");
  EXPECT_EQ(md.at("t.ints"), "[1,-2,3]");
  EXPECT_EQ(md.at("t.strings"), R"(["a","b\"c",""])");
  EXPECT_EQ(md.at("t.nested"), "[[1,2],[]]");
  EXPECT_EQ(md.at("t.empty"), "[]");
}

TEST_F(GgufTest, ReadsEveryValueAndTensorType) {
  Fixture fx = make_fixture(32);
  std::string p = path("m.gguf");
  write_file(p, fx.file.build());
  auto r = open_gguf(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)->alignment(), 32u);
  check_fixture(**r, fx);

  auto w = open_weights(p);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ((*w)->format(), "gguf");
  EXPECT_EQ((*w)->tensors().size(), 5u);
}

TEST_F(GgufTest, Alignment64) {
  Fixture fx = make_fixture(64);
  std::string bytes = fx.file.build();
  std::string p = path("a64.gguf");
  write_file(p, bytes);
  auto r = open_gguf(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)->alignment(), 64u);
  EXPECT_EQ((*r)->value("general.alignment")->as_uint(), 64u);
  check_fixture(**r, fx);

  // Not a power of two / zero / a string: rejected naming it.
  for (V bad : {scalar<uint32_t>(4, 48), scalar<uint32_t>(4, 0), str("64")}) {
    Fixture f = make_fixture(32);
    f.file.kv.push_back({"general.alignment", bad});
    write_file(p, f.file.build());
    auto e = open_gguf(p);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().message().find("general.alignment"), std::string::npos) << e.status().message();
  }
}

// Opening must fail with kInvalidArgument naming the file and `fact`.
void expect_rejected(const std::string& p, const std::string& bytes, const std::string& fact) {
  write_file(p, bytes);
  auto r = open_gguf(p);
  ASSERT_FALSE(r.ok()) << "accepted; expected: " << fact;
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(p), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(fact), std::string::npos) << "missing '" << fact << "' in: " << r.status().message();
  EXPECT_FALSE(open_weights(p).ok());
}

TEST_F(GgufTest, RejectsBadFiles) {
  std::string p = path("bad.gguf");
  auto with = [](auto edit) {
    Fixture fx = make_fixture(32);
    edit(fx.file);
    return fx.file.build();
  };
  expect_rejected(p, with([](GgufFile& g) { g.version = 2; }), "version 2");
  expect_rejected(p, with([](GgufFile& g) { g.tensors[1].type = 12; }), "unsupported ggml type 12");
  expect_rejected(p, with([](GgufFile& g) { g.tensors[3].ne = {48, 4}; g.tensors[3].data.resize(34 * 6); }),
                  "ne0 = 48, not a multiple of the block size 32");
  expect_rejected(p, with([](GgufFile& g) { g.tensors[0].ne = {4, 3, 1, 1, 1}; }), "n_dims 5");
  expect_rejected(p, with([](GgufFile& g) { g.tensors[0].ne = {uint64_t{1} << 32, uint64_t{1} << 32}; }), "overflow");
  expect_rejected(p, with([](GgufFile& g) { g.tensors[0].ne = {uint64_t{1} << 63}; }), "exceeds int64");
  expect_rejected(p, with([](GgufFile& g) { g.tensors[4].ne = {32, 2, 100}; }), "outside the data section");
  expect_rejected(p, with([](GgufFile& g) { g.tensors[1].name = "f32"; }), "duplicate tensor name 'f32'");
  expect_rejected(p, with([](GgufFile& g) { g.tensors[1].name = ""; }), "empty name");
  expect_rejected(p, with([](GgufFile& g) { g.kv.push_back({"t.u8", scalar<uint8_t>(0, 1)}); }),
                  "duplicate metadata key 't.u8'");
  expect_rejected(p, with([](GgufFile& g) { g.kv[1].second.type = 13; }), "value type 13 of 't.u8' is unknown");
  expect_rejected(p, with([](GgufFile& g) { g.kv[8].second = scalar<uint8_t>(7, 2); }), "bool value of 't.bool' is 2");
  expect_rejected(p, with([](GgufFile& g) { g.kv[12].second = arr(13, {}); }), "unknown element type 13");
  expect_rejected(p, with([](GgufFile& g) {
                    V deep = arr(0, {});
                    for (int i = 0; i < 9; ++i) deep = arr(9, {deep});
                    g.kv.push_back({"t.deep", deep});
                  }),
                  "nest deeper than 8");
  expect_rejected(p, "GGU", "no GGUF magic");
  expect_rejected(p, "", "no GGUF magic");

  // Misaligned offset: patch the first tensor's offset field by hand.
  {
    Fixture fx = make_fixture(32);
    fx.file.tensors.resize(1);
    std::string b = fx.file.build();
    size_t off = b.find(std::string("\x03\0\0\0\0\0\0\0f32", 11)) + 11 + 4 + 16 + 4;  // name, n_dims, ne, type
    uint64_t bad = 8;
    std::memcpy(&b[off], &bad, 8);
    expect_rejected(p, b, "offset 8 is not a multiple of the alignment 32");
  }
  // Overlapping tensors: point the second at the first's bytes.
  {
    Fixture fx = make_fixture(32);
    fx.file.tensors.resize(2);
    fx.file.tensors[1] = {"f32b", {4, 3}, 0, raw(fx.f32)};
    std::string b = fx.file.build();
    size_t off = b.find(std::string("\x04\0\0\0\0\0\0\0f32b", 12)) + 12 + 4 + 16 + 4;
    uint64_t zero = 0;
    std::memcpy(&b[off], &zero, 8);
    expect_rejected(p, b, "overlap");
  }
}

TEST_F(GgufTest, HugeCountsAndLengths) {
  std::string p = path("huge.gguf");
  auto header = [](uint64_t n_tensors, uint64_t n_kv) {
    std::string h = "GGUF";
    put<uint32_t>(h, 3);
    put<uint64_t>(h, n_tensors);
    put<uint64_t>(h, n_kv);
    return h;
  };
  expect_rejected(p, header(uint64_t{1} << 62, 0) + std::string(64, '\0'), "tensor_count 4611686018427387904");
  expect_rejected(p, header(0, ~uint64_t{0}) + std::string(64, '\0'), "metadata_kv_count 18446744073709551615");
  std::string key_len = header(0, 1);
  put<uint64_t>(key_len, uint64_t{1} << 63);
  expect_rejected(p, key_len + std::string(64, 'k'), "length 9223372036854775808 exceeds the limit");
  std::string key_past_end = header(0, 1);
  put<uint64_t>(key_past_end, 1000);
  expect_rejected(p, key_past_end + std::string(64, 'k'), "truncated");
  std::string big_array = header(0, 1) + gstr("k");
  put<uint32_t>(big_array, 9);
  put<uint32_t>(big_array, 6);
  put<uint64_t>(big_array, uint64_t{1} << 61);
  expect_rejected(p, big_array + std::string(64, '\0'), "claims 2305843009213693952 elements");
  std::string big_string = header(0, 1) + gstr("k");
  put<uint32_t>(big_string, 8);
  put<uint64_t>(big_string, ~uint64_t{0});
  expect_rejected(p, big_string + std::string(64, '\0'), "exceeds the limit");
  // Many small arrays beyond the total element budget (2^23): one u8 array of 2^23 + 1.
  std::string many = header(0, 1) + gstr("k");
  put<uint32_t>(many, 9);
  put<uint32_t>(many, 0);
  put<uint64_t>(many, (uint64_t{1} << 23) + 1);
  expect_rejected(p, many + std::string((size_t{1} << 23) + 1, '\0'), "more than 8388608 elements");
}

TEST_F(GgufTest, TruncatedAtEveryLength) {
  Fixture fx = make_fixture(32);
  std::string full = fx.file.build();
  std::string p = path("cut.gguf");
  write_file(p, full);
  ASSERT_TRUE(open_gguf(p).ok());
  for (size_t len = 0; len < full.size(); ++len) {
    write_file(p, full.substr(0, len));
    auto r = open_gguf(p);
    ASSERT_FALSE(r.ok()) << "accepted a file cut to " << len << " of " << full.size() << " bytes";
    ASSERT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << r.status().to_string();
    ASSERT_FALSE(open_weights(p).ok());
  }
}

TEST_F(GgufTest, RandomCorruptionNeverCrashes) {
  Fixture fx = make_fixture(32);
  const std::string full = fx.file.build();
  std::string p = path("fuzz.gguf");
  std::mt19937 rng(7);
  int accepted = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string b = full;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      size_t at = rng() % b.size();
      b[at] = static_cast<char>(rng() % 3 == 0 ? 0xFF : rng() & 0xFF);
    }
    write_file(p, b);
    auto r = open_gguf(p);
    if (r.ok()) {
      ++accepted;
      for (const TensorInfo& t : (*r)->tensors()) ASSERT_EQ((*r)->bytes(t.name)->size(), t.shape.byte_size());
    }
  }
  SUCCEED() << accepted << " of 400 corrupted files still parsed";
}

}  // namespace
}  // namespace radix::io
