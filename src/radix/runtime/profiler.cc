#include "radix/runtime/profiler.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace radix {

namespace {
struct Event {
  std::string name;
  const char* category;
  double ts_us, dur_us;
  uint64_t tid;
};
struct State {
  std::atomic<bool> on{false};
  std::mutex mu;
  std::string path;
  std::vector<Event> events;
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
};
State& state() {
  static State* s = new State();  // never destroyed: spans may end during exit
  return *s;
}

// JSON string body with the characters JSON requires escaped.
std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      o += buf;
    } else {
      o += c;
    }
  }
  return o;
}
}  // namespace

void Profiler::start(const std::string& path) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.path = path;
  s.events.clear();
  s.origin = std::chrono::steady_clock::now();
  s.on.store(true, std::memory_order_relaxed);
}

bool Profiler::enabled() { return state().on.load(std::memory_order_relaxed); }

size_t Profiler::span_count() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.events.size();
}

Status Profiler::stop() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.on.exchange(false)) return Status();
  std::ofstream f(s.path);
  if (!f) {
    s.events.clear();
    return Status(ErrorCode::kIoError, "profiler: cannot write the trace file '" + s.path + "'");
  }
  f << "{\"traceEvents\": [\n";
  for (size_t i = 0; i < s.events.size(); ++i) {
    const Event& e = s.events[i];
    char times[96];
    std::snprintf(times, sizeof(times), "\"ts\": %.3f, \"dur\": %.3f", e.ts_us, e.dur_us);
    f << "  {\"ph\": \"X\", \"name\": \"" << escape(e.name) << "\", \"cat\": \"" << e.category << "\", " << times
      << ", \"pid\": 1, \"tid\": " << e.tid << "}" << (i + 1 < s.events.size() ? ",\n" : "\n");
  }
  f << "], \"displayTimeUnit\": \"ms\"}\n";
  f.close();
  s.events.clear();
  if (!f) return Status(ErrorCode::kIoError, "profiler: writing '" + s.path + "' failed");
  return Status();
}

Profiler::Span::Span(std::string_view name, const char* category)
    : active_(Profiler::enabled()), category_(category) {
  if (!active_) return;
  name_ = std::string(name);
  t0_ = std::chrono::steady_clock::now();
}

Profiler::Span::~Span() {
  if (!active_) return;
  const auto t1 = std::chrono::steady_clock::now();
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.on.load(std::memory_order_relaxed)) return;
  using us = std::chrono::duration<double, std::micro>;
  s.events.push_back({std::move(name_), category_, us(t0_ - s.origin).count(), us(t1 - t0_).count(),
                      static_cast<uint64_t>(std::hash<std::thread::id>()(std::this_thread::get_id()) % 100000)});
}

}  // namespace radix
