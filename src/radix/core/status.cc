#include "radix/core/status.h"

#include <cstdio>
#include <cstdlib>

namespace radix {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "OK";
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kTraceError: return "TraceError";
    case ErrorCode::kCompileError: return "CompileError";
    case ErrorCode::kScheduleError: return "ScheduleError";
    case ErrorCode::kRuntimeError: return "RuntimeError";
    case ErrorCode::kNotFound: return "NotFound";
    case ErrorCode::kIoError: return "IoError";
    case ErrorCode::kAlreadyExists: return "AlreadyExists";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(error_code_name(code_)) + ": " + message_;
}

void die_on_bad_result(const Status& s) {
  std::fprintf(stderr, "radix: value() called on an error Result: %s\n", s.to_string().c_str());
  std::abort();
}

}  // namespace radix
