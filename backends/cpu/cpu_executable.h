#pragma once
// A Plan bound to host memory: every dispatch's pointers resolved once at
// compile time; run() fills the step inputs, checks them against the
// bucket, and calls the CPU kernels in order.
#include <array>
#include <memory>
#include <vector>

#include "backends/bound_dispatch.h"
#include "backends/cpu/cpu_buffer.h"
#include "core/hal/communicator.h"
#include "core/hal/stream.h"
#include "core/parallel.h"
#include "kernels/kernel_args.h"

namespace tessera::cpu {

class CpuExecutable final : public Executable {
 public:
  static Expected<std::unique_ptr<CpuExecutable>> create(const Plan& plan, std::span<Buffer* const> bound,
                                                         ParallelFor& pool, Communicator* comm = nullptr);
  const Plan& plan() const override { return plan_; }
  Buffer& buffer(uint32_t id) override { return *buffers_[id]; }
  Status run(const StepArgs& args);
  ~CpuExecutable() override;

 private:
  CpuExecutable(const Plan& plan, ParallelFor& pool, Communicator* comm) : plan_(plan), pool_(pool), comm_(comm) {}
  Status check_step(const StepArgs& args) const;
  Status run_dispatch(const BoundDispatch& d, const StepArgs& args);
  kernels::MatmulArgs matmul_args(const BoundDispatch& d, int64_t rows) const;

  Status all_gather(const BoundDispatch& d, int64_t rows);

  Plan plan_;
  ParallelFor& pool_;
  Communicator* comm_ = nullptr;  // the device's, for all_reduce and all_gather
  std::vector<Buffer*> buffers_;                 // by plan buffer id
  std::vector<std::unique_ptr<CpuBuffer>> owned_;  // arena, step inputs, scratch
  std::vector<BoundDispatch> dispatches_;
  std::vector<std::vector<uint32_t>> kv_writes_;  // by dispatch: the KV pool buffers it appends to
  std::unique_ptr<CpuBuffer> scratch_;
  std::unique_ptr<CpuBuffer> gathered_;  // all_gather's ranks' parts, rank after rank, before they are interleaved
  std::vector<size_t> gather_counts_;    // values per rank of the step's all_gather, sized at compile
  int64_t kv_slots_ = 0;    // slots in the smallest pool, bound for slot_mapping
  int64_t kv_blocks_ = 0;
  int32_t block_size_ = 0;
  int64_t rope_rows_ = 0;   // rows of the smallest folded RoPE table, bound for positions; 0: none
  // TESSERA_PROFILE=1: wall time per op kind, printed when the executable goes.
  bool profile_ = false;
  std::array<double, kOpKindCount> op_ns_{};
  std::array<uint64_t, kOpKindCount> op_calls_{};
  uint64_t steps_ = 0;
};

}  // namespace tessera::cpu
