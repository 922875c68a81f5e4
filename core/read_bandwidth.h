#pragma once
// The machine's memory-read roof, the one probe of it: the CPU backend's
// roofs at device open (backends/cpu/cpu_roofs.cpp) and `tessera bench`
// (MBU, --op) both call measure_read_bandwidth, so that `tessera devices`
// and bench report the same figure. Measured, never taken from a spec sheet.
#include <cstdint>

#include "core/parallel.h"

namespace tessera {

struct BandwidthResult {
  double read_GBps = 0;      // 1e9 bytes per second, median of reps
  double best_GBps = 0;      // the fastest rep: the roof on a shared host, where a neighbour slows some passes
  uint64_t bytes = 0;        // bytes read per rep (the request rounded down to 256)
  int reps = 0;
  const char* kernel = "";   // the read loop used: "avx512f", "avx2" or "portable"
};

// Streaming-read bandwidth over one buffer of `bytes`, every thread of pf
// reading disjoint chunks with the widest loads the CPU has; the median of
// `reps` timed passes after one untimed warm-up. The buffer is allocated and
// touched once, before timing. `bytes` must exceed the last-level cache
// (bench passes max(4 × LLC, 1 GiB), device open read_probe_bytes), or
// this measures the cache.
// read_GBps stays 0 when the buffer cannot be allocated.
BandwidthResult measure_read_bandwidth(ParallelFor& pf, uint64_t bytes, int reps = 5);

// One streaming-read pass over [p, p + bytes) with measure_read_bandwidth's
// read loop and threading, in seconds. p 64-byte aligned, bytes a multiple
// of 256. For callers that alternate reads with other work on one buffer
// they allocated and touched beforehand.
double time_read_pass(ParallelFor& pf, const std::byte* p, uint64_t bytes);

// The buffer the probe at device open reads: 4x the last-level cache
// (2x is not enough: the memset before timing leaves up to one LLC of it
// cached), at least 64 MiB, so one pass takes milliseconds, not hundreds.
uint64_t read_probe_bytes(uint64_t last_level_cache_bytes);
inline constexpr int kReadProbeReps = 3;  // passes the device-open probe and `bench --op` take the best of (after a warm-up)

// The largest cache size listed under /sys/devices/system/cpu/cpu0/cache
// (as seen by cpu0: on parts with several L3 slices, one slice); 32 MiB when
// that is not readable.
uint64_t last_level_cache_bytes();

}  // namespace tessera
