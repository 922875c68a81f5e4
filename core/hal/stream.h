#pragma once
// An ordered queue of work on one device. On the CPU backend work runs on
// call; a GPU backend may return before the work is done, and synchronize()
// waits for it.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/hal/buffer.h"
#include "core/hal/plan.h"
#include "core/status.h"

namespace tessera {

// A Plan compiled for one device: buffers allocated, kernels chosen,
// command buffers recorded. Replayed every step, never rebuilt.
class Executable {
 public:
  virtual ~Executable() = default;
  virtual const Plan& plan() const = 0;
  // The device buffer behind a plan buffer id.
  virtual Buffer& buffer(uint32_t id) = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;
  virtual Status upload(Buffer& dst, uint64_t offset, std::span<const std::byte> src) = 0;
  virtual Status download(std::span<std::byte> dst, Buffer& src, uint64_t offset) = 0;
  // Copies the step's arrays into the plan's step_input buffers and runs every dispatch.
  virtual Status run(Executable& exe, const StepArgs& args) = 0;
  virtual Status synchronize() = 0;
};

}  // namespace tessera
