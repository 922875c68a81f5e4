#pragma once
// The decode worker's side of disaggregation: a UCX listener that takes
// every prefill worker's transfers on one thread, assembling each in host
// memory as its blocks arrive, and submit(), which waits for a transfer to be
// committed and hands it to the engine (submit_imported: blocks allocated in
// this engine's own BlockManager, the bytes written into them, decoding
// continues). A transfer that is aborted, or not committed within the
// timeout, fails the request waiting for it; one nobody claims for twice the
// timeout after its last message is dropped.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "engine/disagg/ucx_transport.h"
#include "engine/serving/serving_engine.h"

namespace tessera::disagg {

struct KvReceiverOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: a free one (port() says which)
  UcxOptions ucx;     // its timeout_ms is also how long a transfer may take, begin to commit
};

class KvReceiver {
 public:
  // `engine` must outlive the receiver.
  static Expected<std::unique_ptr<KvReceiver>> create(ServingEngine& engine, const KvReceiverOptions& options);
  ~KvReceiver();

  uint16_t port() const { return transport_->listen_port(); }
  // Waits (up to the timeout) for transfer `id`, checks it carries this
  // request's prompt, and submits it to the engine.
  Expected<std::shared_ptr<RequestState>> submit(Request request, uint64_t transfer_id, Delivery delivery, TokenCallback callback);
  // The router says the transfer will not come (its prefill worker failed):
  // whoever waits for it gets `why` now.
  void abort(uint64_t transfer_id, const std::string& why);
  // Transfers begun and not yet claimed or dropped (tests: nothing lingers).
  size_t pending() const;

 private:
  struct Transfer {
    std::chrono::steady_clock::time_point touched;  // its last message (or abort)
    KvImport import;
    std::vector<int32_t> prompt;
    int64_t blocks_received = 0;  // (pool, block) pairs
    bool begun = false, committed = false;
    std::string error;  // aborted
  };
  KvReceiver(ServingEngine& engine, std::unique_ptr<UcxTransport> t, const KvReceiverOptions& o);
  void run();  // the receiving thread
  void on_message(uint64_t tag, std::span<const std::byte> bytes);
  void expire();

  ServingEngine& engine_;
  std::unique_ptr<UcxTransport> transport_;
  KvReceiverOptions options_;
  KvShape shape_;
  int32_t max_blocks_ = 0;  // per sequence
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Transfer> transfers_;
  std::thread thread_;
};

}  // namespace tessera::disagg
