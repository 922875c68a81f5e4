#pragma once
// Operator benchmarks on any device through the HAL (`tessera bench --op
// matmul|attention --backend B` for a backend other than the CPU, whose
// GEMVs have their own in engine/bench/matmul_roofs.h): each op a one-node
// plan compiled on the device, run in batches of back-to-back steps on one
// stream, timed on the host around each batch (so that a microsecond kernel
// is not measured as a synchronization), the median over batches. The
// device's copy bandwidth, measured the same way, is the roof a GEMV is
// held to: a device-to-device copy of `bytes`, counted as the bytes read
// plus the bytes written, as CUDA's bandwidthTest counts it.
#include <string>
#include <vector>

#include "core/hal/device.h"
#include "tessera/bench.h"

namespace tessera {

struct DeviceOpOptions {
  std::string op = "matmul";  // "matmul" (GEMVs at m = 1 and a prefill GEMM) or "attention" (a prefill)
  int batches = 7;            // timed batches; the median is reported
  int runs_per_batch = 20;
  uint64_t copy_bytes = uint64_t{1} << 30;
  // The shapes: llama-3-8B's ffn_down (n = 4096 outputs, k = 14336) as GEMVs
  // for gemv_types and as prefill GEMMs of gemm_rows rows for gemm_types;
  // its attention (32 heads, 8 KV heads, head_dim 128) over prefills of
  // attention_tokens. Tests shrink them.
  int64_t n = 4096, k = 14336;
  std::vector<DType> gemv_types = {DType::q4_0, DType::q8_0, DType::q4_K, DType::q6_K, DType::f16};
  std::vector<DType> gemm_types = {DType::f16, DType::q4_K};
  std::vector<int64_t> gemm_rows = {512, 4096};
  AttentionParams attention{32, 8, 128, 16, 0.0f, true};
  std::vector<int32_t> attention_tokens = {1024, 8192};
};

// Device-to-device copy bandwidth in GB/s (read plus write), the median of `batches`.
Expected<double> measure_copy_GBps(Device& device, uint64_t bytes, int batches);

Expected<DeviceOpReport> bench_device_ops(Device& device, const DeviceInfo& info, const DeviceOpOptions& o);

}  // namespace tessera
