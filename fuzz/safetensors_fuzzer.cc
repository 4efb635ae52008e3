// libFuzzer target: safetensors files and sharded indexes (open_safetensors,
// open_weights, the content sniffers), then a write_safetensors round trip of
// every accepted single file.
//
// The input is written to <work dir>/input. Two fixed shards sit next to it
// (shard-1.safetensors: "a" F32 [2], "b" I8 [3]; shard-2.safetensors: "c"
// F16 [2, 2]) so that a fuzzed index ({"weight_map": {"a":
// "shard-1.safetensors", ...}}) can open.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "radix/io/safetensors.h"
#include "radix/io/weight_store.h"

namespace {

using radix::fuzz::FuzzMapGuard;

std::vector<uint8_t> safetensors_bytes(const std::string& header, size_t data_bytes) {
  std::string h = header;
  while (h.size() % 8 != 0) h += ' ';
  std::vector<uint8_t> out(8 + h.size() + data_bytes);
  const uint64_t n = h.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, h.data(), h.size());
  for (size_t i = 0; i < data_bytes; ++i) out[8 + h.size() + i] = static_cast<uint8_t>(i * 7 + 1);
  return out;
}

void write_shards() {
  auto s1 = safetensors_bytes(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I8","shape":[3],"data_offsets":[8,11]},"__metadata__":{"shard":"1"}})",
      11);
  radix::fuzz::write_file("shard-1.safetensors", s1.data(), s1.size());
  auto s2 = safetensors_bytes(R"({"c":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}})", 8);
  radix::fuzz::write_file("shard-2.safetensors", s2.data(), s2.size());
}

bool same_bytes(const radix::io::WeightStore& a, const radix::io::WeightStore& b, const std::string& name) {
  auto x = a.bytes(name);
  auto y = b.bytes(name);
  return x.ok() && y.ok() && x->size() == y->size() &&
         (x->empty() || std::memcmp(x->data(), y->data(), x->size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  write_shards();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  const bool sniffed_st = radix::io::looks_like_safetensors(bytes);
  const bool sniffed_json = radix::io::looks_like_json(bytes);
  (void)sniffed_st;
  (void)sniffed_json;

  const std::string path = radix::fuzz::write_file("input", data, size);
  FuzzMapGuard guard;
  auto store = radix::io::open_safetensors(path);
  if (store.ok()) {
    FUZZ_CHECK((*store)->format() == "safetensors", "format() is " + (*store)->format());
    radix::fuzz::exercise_store(**store);
  }
  auto any = radix::io::open_weights(path);
  if (any.ok()) radix::fuzz::exercise_store(**any);
  if (store.ok() && sniffed_st) {
    FUZZ_CHECK(any.ok(), "open_safetensors accepts what open_weights rejects: " + any.status().to_string());
  }

  // Round trip: what was read can be written, and reads back the same.
  if (store.ok() && !sniffed_json) {
    const radix::io::WeightStore& in = **store;
    const std::string out_path = radix::fuzz::work_dir() + "/roundtrip.safetensors";
    const radix::Status st = radix::io::write_safetensors(out_path, in);
    FUZZ_CHECK(st.ok(), "write_safetensors of an accepted file failed: " + st.to_string());
    auto back = radix::io::open_safetensors(out_path);
    FUZZ_CHECK(back.ok(), "reading back the written file failed: " + back.status().to_string());
    FUZZ_CHECK((*back)->tensors().size() == in.tensors().size(), "round trip changed the tensor count");
    FUZZ_CHECK((*back)->metadata() == in.metadata(), "round trip changed the metadata");
    for (const radix::io::TensorInfo& t : in.tensors()) {
      const radix::io::TensorInfo* b = (*back)->find(t.name);
      FUZZ_CHECK(b != nullptr && b->shape == t.shape, "round trip lost or reshaped '" + t.name + "'");
      FUZZ_CHECK(same_bytes(in, **back, t.name), "round trip changed the bytes of '" + t.name + "'");
    }
  }
  return 0;
}
