// The stories260K files in the repository and the generator options the
// model tests share.
#pragma once

#include <string>

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

}  // namespace radix::testing
