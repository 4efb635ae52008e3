// The stories260K files in the repository, the generator options the
// model tests share, and a variant of the model with a narrower feed-forward.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "radix/models/llama/generator.h"

namespace radix::testing {

inline const std::string kModel = std::string(RADIX_SOURCE_DIR) + "/models/stories260K/stories260K.bin";
inline const std::string kTok = std::string(RADIX_SOURCE_DIR) + "/models/stories260K/tok512.bin";

// Each test runs in its own process: they share compiled steps through the
// executable cache (keyed by this build of libradix too).
inline models::LlamaGenerator::Options stories_options() {
  models::LlamaGenerator::Options o;
  o.compile.cache_dir = RADIX_TEST_CACHE_DIR;
  return o;
}

// stories260K with its feed-forward cut to the first `hidden` units (the Q
// formats need a multiple of 32; the model has 172): a llama2.c checkpoint
// written next to the test's temporary files.
inline std::string write_narrower_ffn(int hidden) {
  std::ifstream f(kModel, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  int32_t h[7];
  std::memcpy(h, bytes.data(), sizeof h);
  const size_t dim = size_t(h[0]), old_hidden = size_t(h[1]), layers = size_t(h[2]);
  const size_t kv_dim = dim * size_t(h[4]) / size_t(h[3]), vocab = size_t(std::abs(h[5]));
  const float* p = reinterpret_cast<const float*>(bytes.data() + sizeof h);
  std::vector<float> out;
  auto copy = [&](size_t n) { out.insert(out.end(), p, p + n); p += n; };
  copy(vocab * dim + layers * dim + layers * dim * dim * 2 + layers * dim * kv_dim * 2 + layers * dim);
  for (size_t l = 0; l < layers; ++l, p += old_hidden * dim)  // w1 [hidden, dim]: the first rows
    out.insert(out.end(), p, p + size_t(hidden) * dim);
  for (size_t l = 0; l < layers; ++l)  // w2 [dim, hidden]: the first columns of each row
    for (size_t r = 0; r < dim; ++r, p += old_hidden) out.insert(out.end(), p, p + hidden);
  for (size_t l = 0; l < layers; ++l, p += old_hidden * dim) out.insert(out.end(), p, p + size_t(hidden) * dim);
  const float* end = reinterpret_cast<const float*>(bytes.data() + bytes.size());
  out.insert(out.end(), p, end);  // rms_final and whatever follows, as they are
  h[1] = hidden;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("radix-stories-ffn" + std::to_string(hidden) + "-" + std::to_string(::getpid()) + ".bin"))
                               .string();
  std::ofstream o(path, std::ios::binary);
  o.write(reinterpret_cast<const char*>(h), sizeof h);
  o.write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size() * sizeof(float)));
  return path;
}

}  // namespace radix::testing
