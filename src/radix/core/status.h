// Status and Result<T>: errors as values at the runtime boundary.
//
// Runtime APIs (compile, buffer transfers, execute) return Result<T>. Misuse
// while tracing throws radix::TraceError at once (see trace/trace_error.h);
// compile entry points catch it and hand it back as a Status.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace radix {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // wrong shapes, dtypes, counts, options
  kTraceError,       // the traced function misused an op
  kCompileError,     // a pass pipeline or the JIT failed
  kScheduleError,    // the CPU's vectorizing schedule was rejected (a Radix bug; the
                     // backend then compiles plain loops and says so)
  kRuntimeError,     // execution or transfer failed
  kNotFound,
  kIoError,
  kAlreadyExists,    // a name registered twice (custom calls, host symbols)
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: <message>"
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string msg) { return {ErrorCode::kInvalidArgument, std::move(msg)}; }
inline Status compile_error(std::string msg) { return {ErrorCode::kCompileError, std::move(msg)}; }
inline Status runtime_error(std::string msg) { return {ErrorCode::kRuntimeError, std::move(msg)}; }

// Either a value or a non-ok Status. Move-friendly so it can carry move-only
// types such as Buffer and Executable.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { check(); return std::get<T>(v_); }
  const T& value() const& { check(); return std::get<T>(v_); }
  // On an rvalue Result the value is moved out and returned by value, so
  // `for (float x : *buf.to_host<float>())` owns what it iterates (a T&&
  // would dangle once the temporary Result dies).
  T value() && { check(); return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::move(*this).value(); }

 private:
  void check() const;
  std::variant<T, Status> v_;
};

[[noreturn]] void die_on_bad_result(const Status& s);

template <class T>
void Result<T>::check() const {
  if (!ok()) die_on_bad_result(std::get<Status>(v_));
}

}  // namespace radix

// Propagates a non-ok Status from an expression returning Status.
#define RADIX_RETURN_IF_ERROR(expr)            \
  do {                                         \
    ::radix::Status _st = (expr);              \
    if (!_st.ok()) return _st;                 \
  } while (0)

#define RADIX_CONCAT_INNER(a, b) a##b
#define RADIX_CONCAT(a, b) RADIX_CONCAT_INNER(a, b)
// RADIX_ASSIGN_OR_RETURN(auto x, make_x());
#define RADIX_ASSIGN_OR_RETURN(lhs, expr) \
  RADIX_ASSIGN_OR_RETURN_IMPL(RADIX_CONCAT(_res_, __LINE__), lhs, expr)
#define RADIX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
