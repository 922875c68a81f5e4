#pragma once
// Errors are values: anything that can fail on user input returns Status or
// Expected<T>, with a message that names the file, the field and what was
// expected. Nothing in the public API throws on bad input.
#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "tessera/export.h"

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

inline const char* to_string(StatusCode code) {
  switch (code) {
    case StatusCode::ok: return "ok";
    case StatusCode::invalid_argument: return "invalid argument";
    case StatusCode::not_found: return "not found";
    case StatusCode::out_of_range: return "out of range";
    case StatusCode::io_error: return "I/O error";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::resource_exhausted: return "resource exhausted";
    case StatusCode::internal: return "internal error";
  }
  return "unknown";
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "context: message" — used to add the file name as an error bubbles up.
  Status with_context(std::string_view context) const {
    if (is_ok()) return *this;
    std::string m(context);
    m += ": ";
    m += message_;
    return {code_, std::move(m)};
  }

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
