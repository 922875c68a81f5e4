#pragma once
// The elementwise-program interpreter shared by the `elementwise` kernel and
// the matmul epilogue (kernels/cpu/elementwise_program.cpp).
#include <cstdint>

#include "kernels/kernel_args.h"

namespace tessera::kernels::cpu::detail {

// Runs the program over out[r0:r1, c0:c1] (row stride ld, as every full
// input's). inputs[i] is a full [.., ld] tensor, or one row [ld] where the
// program reads register i as a bias. out may alias a full input.
void run_program(const ElementwiseProgram& p, const float* const* inputs, float* out, int64_t ld, int64_t r0, int64_t r1,
                 int64_t c0, int64_t c1);

// The epilogue over y[r0:r1, c0:c1] of an [m, ld] product, in place.
void apply_epilogue(const EpilogueArgs& e, float* y, int64_t ld, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

}  // namespace tessera::kernels::cpu::detail
