#pragma once
// The main job of a fresh machine: prefill and decode a model (by default a
// synthetic llama far larger than any cache) and report the speeds against
// the read bandwidth measured right before and right after decoding.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/hal/device_info.h"
#include "core/status.h"

namespace tessera {

struct BenchOptions {
  std::string model_path;  // empty: the synthetic bench model
  std::string backend = "cpu";
  DType synthetic_type = DType::q8_0;
  int32_t prompt_tokens = 128;
  int32_t gen_tokens = 32;
  uint64_t seed = 1;
  std::string passes = "default";  // graph passes (docs/ir.md)
  std::string tile;                // tile overrides (docs/ir.md)
  std::string place;   // --place: nodes pinned to a device
  std::string weight_layout = "auto";  // --weight-layout (docs/ir.md)
};

struct BenchReport {
  DeviceInfo device;
  std::string model;        // the file, or the synthetic shape
  std::string weight_type;  // of the matmul weights
  uint64_t weight_bytes = 0;
  int32_t prompt_tokens = 0, gen_tokens = 0;
  double prefill_tok_s = 0, decode_tok_s = 0, ttft_ms = 0, tpot_ms = 0;
  // Decode measured two ways in one run, alternating A B A B (engine/bench/decode_loop.h):
  // decode_tok_s / tpot_ms are the overlapped loop's (device greedy, next step
  // prepared while one runs), decode_tok_s_serial the serial loop's (logits to
  // the host, sampled there, then the next step built).
  double decode_tok_s_serial = 0;
  double host_gap_us = 0, host_gap_serial_us = 0;  // medians: host time from one step's end to the next's submit
  uint64_t bytes_per_token = 0;  // weights + the KV cache read by one decode step, averaged
  double read_GBps_before = 0, read_GBps_after = 0;
  double mbu = 0;  // bytes_per_token * decode_tok_s / max(read_GBps_before, read_GBps_after)
  uint64_t bandwidth_bytes = 0;
  size_t nodes_per_decode_step = 0;  // ModelRunner::nodes_per_step: not kernel launches on every backend
  uint64_t peak_activation_bytes = 0, activation_lower_bound_bytes = 0;
  double model_build_s = 0;
  double read_GBps() const { return read_GBps_before > read_GBps_after ? read_GBps_before : read_GBps_after; }
};

// One report per device of the backend. Progress lines go to `log` (stderr).
Expected<std::vector<BenchReport>> run_bench(const BenchOptions& o, void (*log)(const std::string&));

}  // namespace tessera
