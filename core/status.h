#pragma once
// Errors are values: anything that can fail on user input returns Status or
// Expected<T>, with a message that names the file, the field and what was
// expected. Assertions are kept for our own bugs.
#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tessera {

enum class StatusCode {
  ok,
  invalid_argument,  // the caller's input (file, flag, request) is malformed
  not_found,         // a file, key, tensor or backend that is not there
  out_of_range,      // an index or size beyond what the object holds
  io_error,          // the operating system refused (open, mmap, read, write)
  unsupported,       // valid input this build or device cannot run
  resource_exhausted,// out of memory, KV blocks or context
  internal,          // our own bug, reported rather than crashing
};

const char* to_string(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "context: message" — used to add the file name as an error bubbles up.
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::invalid_argument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::not_found, std::move(m)}; }
inline Status out_of_range(std::string m) { return {StatusCode::out_of_range, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::io_error, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::unsupported, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {StatusCode::resource_exhausted, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::internal, std::move(m)}; }

// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).is_ok()); }

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { assert(has_value()); return std::get<T>(v_); }
  const T& value() const& { assert(has_value()); return std::get<T>(v_); }
  T&& value() && { assert(has_value()); return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // Ok when a value is held.
  Status status() const { return has_value() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tessera

#define TS_CONCAT_INNER(a, b) a##b
#define TS_CONCAT(a, b) TS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when it is not ok.
#define TS_TRY(expr)                                        \
  do {                                                      \
    ::tessera::Status ts_status_ = (expr);                  \
    if (!ts_status_.is_ok()) return ts_status_;             \
  } while (0)

// `TS_ASSIGN_OR_RETURN(auto x, make_x());` — binds the value or returns the Status.
#define TS_ASSIGN_OR_RETURN(lhs, expr) TS_ASSIGN_OR_RETURN_IMPL(TS_CONCAT(ts_expected_, __LINE__), lhs, expr)
#define TS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.has_value()) return tmp.status();     \
  lhs = std::move(tmp).value()
