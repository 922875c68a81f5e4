#pragma once
// Prefill/decode disaggregation (docs/serving.md, "Disaggregated serving"):
// a prefill worker computes a request's prompt and ships its KV blocks over
// UCX to the decode worker a router chose, which continues decoding in its
// own paged pools. Each side wraps one Engine, which must outlive it.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tessera/engine.h"
#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

// False where this build has no UCX: opening either side is then the one
// line "built without UCX".
TESSERA_API bool disaggregation_available();

struct KvTransferOptions {
  int timeout_ms = 10000;  // the longest one UCX wait, and one transfer from begin to commit, may take
};

// The decode side: listens for KV transfers on host:port (UCX; port 0: a free one).
class TESSERA_API KvReceiver {
 public:
  static Expected<std::unique_ptr<KvReceiver>> open(Engine& engine, const std::string& host, int port, const KvTransferOptions& o = {});
  ~KvReceiver();
  int port() const;
  // Waits for transfer `transfer_id`, checks it holds this request's prompt,
  // and continues it on the engine (its first token is the prefill's).
  Expected<std::shared_ptr<RequestHandle>> submit(const Request& request, uint64_t transfer_id,
                                                  std::function<void(const TokenOutput&)> on_token);
  // The transfer will not come (the router saw its prefill worker fail).
  void abort(uint64_t transfer_id, const std::string& why);
  size_t pending_transfers() const;

  struct Impl;

 private:
  explicit KvReceiver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct PrefillResult {
  int32_t first_token = -1;  // sequence 0's (each of n is in the commit the decode worker got)
  int64_t bytes_sent = 0;
  double ttft_ms = 0;
  std::shared_ptr<RequestHandle> handle;  // the prefill's own request, finished (its one token, or its stop)
};

// The prefill side: runs prompts and ships their K/V.
class TESSERA_API KvSender {
 public:
  static Expected<std::unique_ptr<KvSender>> open(Engine& engine, const KvTransferOptions& o = {});
  ~KvSender();
  // Runs the request's prompt (it samples the first token), ships every
  // block to the decode worker at `decode` ("HOST:PORT", its --kv-listen) as
  // each chunk is computed, then the first token. The request's n must be 1.
  Expected<PrefillResult> prefill(const Request& request, const std::string& decode, uint64_t transfer_id);

  struct Impl;

 private:
  explicit KvSender(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
