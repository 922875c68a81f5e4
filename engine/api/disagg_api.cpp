// KvReceiver and KvSender: the public face of engine/disagg.
#include "tessera/disagg.h"

#include "engine/api/engine_impl.h"
#include "engine/disagg/kv_receiver.h"
#include "engine/disagg/kv_sender.h"

namespace tessera {

bool disaggregation_available() { return disagg::ucx_available(); }

struct KvReceiver::Impl {
  std::unique_ptr<disagg::KvReceiver> receiver;
};

KvReceiver::KvReceiver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KvReceiver::~KvReceiver() = default;

Expected<std::unique_ptr<KvReceiver>> KvReceiver::open(Engine& engine, const std::string& host, int port, const KvTransferOptions& o) {
  if (port < 0 || port > 65535) return invalid_argument("--kv-listen: port " + std::to_string(port) + " is not in [0, 65535]");
  disagg::KvReceiverOptions ro;
  ro.host = host;
  ro.port = (uint16_t)port;
  ro.ucx.timeout_ms = o.timeout_ms;
  TS_ASSIGN_OR_RETURN(std::unique_ptr<disagg::KvReceiver> r, disagg::KvReceiver::create(*engine.impl().engine, ro));
  return std::unique_ptr<KvReceiver>(new KvReceiver(std::make_unique<Impl>(Impl{std::move(r)})));
}

int KvReceiver::port() const { return impl_->receiver->port(); }

Expected<std::shared_ptr<RequestHandle>> KvReceiver::submit(const Request& request, uint64_t transfer_id,
                                                            std::function<void(const TokenOutput&)> on_token) {
  return wrap_request(impl_->receiver->submit(request, transfer_id, tessera::Delivery::callback, std::move(on_token)));
}

void KvReceiver::abort(uint64_t transfer_id, const std::string& why) { impl_->receiver->abort(transfer_id, why); }
size_t KvReceiver::pending_transfers() const { return impl_->receiver->pending(); }

struct KvSender::Impl {
  std::unique_ptr<disagg::KvSender> sender;
};

KvSender::KvSender(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KvSender::~KvSender() = default;

Expected<std::unique_ptr<KvSender>> KvSender::open(Engine& engine, const KvTransferOptions& o) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<disagg::KvSender> s, disagg::KvSender::create(*engine.impl().engine, {.timeout_ms = o.timeout_ms}));
  return std::unique_ptr<KvSender>(new KvSender(std::make_unique<Impl>(Impl{std::move(s)})));
}

Expected<PrefillResult> KvSender::prefill(const Request& request, const std::string& decode, uint64_t transfer_id) {
  TS_ASSIGN_OR_RETURN(disagg::HostPort addr, disagg::parse_host_port(decode, "kv_transfer.decode"));
  TS_ASSIGN_OR_RETURN(disagg::PrefillOutcome o, impl_->sender->prefill(request, addr, transfer_id));
  TS_ASSIGN_OR_RETURN(std::shared_ptr<RequestHandle> handle, wrap_request(o.request));
  return PrefillResult{o.first_token, o.bytes_sent, o.ttft_ms, std::move(handle)};
}

}  // namespace tessera
