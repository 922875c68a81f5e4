#pragma once
// Status and Expected are public types (include/tessera/status.h); this adds
// the macros the library's own code propagates them with. Assertions are kept
// for our own bugs.
#include "tessera/status.h"

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
