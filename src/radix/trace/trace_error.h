// TraceError: thrown the moment traced code misuses an op (mismatched shapes,
// unknown axis tag, wrong dtype). The message names the op and every shape
// involved. compile_fn / compile_model catch it and return it as a Status.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <stdexcept>
#include <string>

namespace radix {

class TraceError : public std::runtime_error {
 public:
  explicit TraceError(const std::string& msg) : std::runtime_error(msg) {}
};

}  // namespace radix
