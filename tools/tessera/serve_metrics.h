#pragma once
// The server's Prometheus metrics (/metrics): per-request histograms and
// counters the HTTP layer records as requests finish, and the engine's own
// gauges and counters read when scraped. Names follow vLLM's, under the
// tessera: namespace (docs/server.md lists them).
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <tessera/serving.h>

namespace tessera::cli {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // "# HELP/# TYPE" and the _bucket, _sum and _count lines.
  std::string text(const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // one per bound, then +Inf (not cumulative)
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  // One engine request (one prompt, its n sequences) has finished.
  void record(const RequestResult& result);
  // The Prometheus text exposition, the engine's state included.
  std::string text(const EngineMetrics& engine) const;

 private:
  mutable std::mutex mu_;
  Histogram ttft_, itl_, e2e_, queue_, prompt_tokens_, generation_tokens_;
  int64_t prompt_tokens_total_ = 0, generation_tokens_total_ = 0;
  std::map<std::string, int64_t> finished_;  // by finish reason, per sequence
};

}  // namespace tessera::cli
