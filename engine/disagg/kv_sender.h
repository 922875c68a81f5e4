#pragma once
// The prefill worker's side of disaggregation: runs a request's prompt on
// its own engine (max_tokens 1) and ships the prompt's KV blocks to the decode
// worker the router chose, over UCX, as the step writes them: pool by pool
// (each layer's K, then V) while the later layers compute where the device
// announces its writes (the CPU), else all of a chunk's once its step is
// done (docs/serving.md, "Granularity"); then the first token.
// Endpoints to decode workers are kept and reused; one that fails is dropped.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "engine/disagg/ucx_transport.h"
#include "engine/serving/serving_engine.h"

namespace tessera::disagg {

// What the prefill computed: the token the decode worker continues from.
struct PrefillOutcome {
  int32_t first_token = -1;  // sequence 0's
  int64_t bytes_sent = 0;
  int32_t messages = 0;
  double ttft_ms = 0;  // the request's first token, here
  std::shared_ptr<RequestState> request;  // the prefill's own request, finished
};

class KvSender {
 public:
  // `engine` must outlive the sender.
  static Expected<std::unique_ptr<KvSender>> create(ServingEngine& engine, const UcxOptions& ucx);
  ~KvSender();

  // Blocks until the transfer is committed (or failed: the request then
  // ends with an error, the decode worker is told when it can be, and this
  // engine's blocks go back). `request.n` must be 1.
  Expected<PrefillOutcome> prefill(Request request, const HostPort& decode, uint64_t transfer_id);

 private:
  KvSender(ServingEngine& engine, std::unique_ptr<UcxTransport> t) : engine_(engine), transport_(std::move(t)) {}
  Expected<EndpointId> endpoint(const HostPort& decode);
  void drop_endpoint(const HostPort& decode);

  ServingEngine& engine_;
  std::unique_ptr<UcxTransport> transport_;
  std::mutex mu_;
  std::map<std::string, EndpointId> endpoints_;
};

}  // namespace tessera::disagg
