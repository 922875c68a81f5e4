#pragma once
// `tessera bench --op kv_transfer`: KV-block-sized transfers between two UCX
// workers of one process over a loopback listener (the path disaggregation
// takes between a prefill and a decode worker on one host) against a plain
// memcpy of the same bytes.
#include "core/status.h"
#include "tessera/bench.h"

namespace tessera::disagg {

Expected<KvTransferBenchReport> bench_kv_transfer(const KvTransferBenchOptions& o);

}  // namespace tessera::disagg
