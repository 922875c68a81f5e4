#include "core/status.h"

namespace tessera {

const char* to_string(StatusCode code) {
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

Status Status::with_context(std::string_view context) const {
  if (is_ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return {code_, std::move(m)};
}

}  // namespace tessera
