#pragma once
// The disaggregation cases need a build with UCX; without it they are
// Skipped (CI and the quickstart install libucx-dev, so there they run).
#include "engine/disagg/ucx_transport.h"
#include "support/requirements.h"

namespace tessera::testing {

inline const Requirement& ucx_build() {
  static const Requirement r =
      announce({"the disaggregation tests", disagg::ucx_available() ? "" : "built without UCX (install libucx-dev and configure again)"});
  return r;
}

}  // namespace tessera::testing
