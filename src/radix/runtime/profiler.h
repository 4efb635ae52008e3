// Profiler: named spans (tracing, each pipeline stage, LLVM code generation,
// every execution) collected process-wide and written as Chrome / Perfetto
// trace-event JSON ({"traceEvents": [{"ph": "X", "name", "cat", "ts", "dur",
// "pid", "tid"}, ...]}), which chrome://tracing and ui.perfetto.dev open.
//
//   Profiler::start("out.json");   // or the CLI's --profile out.json
//   ... compile and run ...
//   Status s = Profiler::stop();   // writes the file
//
// Off by default: a disabled span costs one relaxed atomic load. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "radix/core/status.h"

namespace radix {

class Profiler {
 public:
  // Starts recording; `path` is where stop() writes the JSON. Clears earlier spans.
  static void start(const std::string& path);
  // Stops recording, writes the file (an IoError naming the path if it
  // cannot) and drops the recorded spans.
  static Status stop();
  static bool enabled();
  // Spans recorded since start() and not yet written (for tests and tools).
  static size_t span_count();

  // RAII span: records [construction, destruction) under `name` and
  // `category` ("trace", "compile", "execute", ...) when profiling is on.
  class Span {
   public:
    // The name is copied only when profiling is on; a caller whose name is
    // costly to build should build it once (see Executable).
    Span(std::string_view name, const char* category);
    ~Span();
    Span(const Span&) = delete;
    Span& operator=(const Span&) = delete;

   private:
    bool active_;
    std::string name_;
    const char* category_;
    std::chrono::steady_clock::time_point t0_;
  };
};

}  // namespace radix
