#pragma once
// ParallelFor::run takes a std::function, which heap-allocates for a lambda
// with more than two captures. Kernels must not allocate, so they hand it a
// reference to a lambda that lives on their own stack frame instead.
#include <cstdint>
#include <functional>

#include "core/parallel.h"

namespace tessera::kernels::cpu::detail {

template <typename Body>
void parallel_for(ParallelFor& pf, int64_t n, int64_t grain, const Body& body) {
  pf.run(n, grain, std::cref(body));
}

}  // namespace tessera::kernels::cpu::detail
