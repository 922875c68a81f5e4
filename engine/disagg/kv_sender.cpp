#include "engine/disagg/kv_sender.h"

#include <condition_variable>
#include <cstring>
#include <deque>

#include "engine/disagg/kv_wire.h"

namespace tessera::disagg {

Expected<std::unique_ptr<KvSender>> KvSender::create(ServingEngine& engine, const UcxOptions& ucx) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<UcxTransport> t, UcxTransport::create(ucx));
  return std::unique_ptr<KvSender>(new KvSender(engine, std::move(t)));
}

KvSender::~KvSender() {
  for (auto& [addr, ep] : endpoints_) transport_->close(ep);
}

Expected<EndpointId> KvSender::endpoint(const HostPort& decode) {
  std::lock_guard l(mu_);
  const std::string key = decode.to_string();
  if (auto it = endpoints_.find(key); it != endpoints_.end()) return it->second;
  TS_ASSIGN_OR_RETURN(EndpointId ep, transport_->connect(decode));
  endpoints_[key] = ep;
  return ep;
}

void KvSender::drop_endpoint(const HostPort& decode) {
  EndpointId ep = 0;
  {
    std::lock_guard l(mu_);
    auto it = endpoints_.find(decode.to_string());
    if (it == endpoints_.end()) return;
    ep = it->second;
    endpoints_.erase(it);
  }
  transport_->close(ep);
}

namespace {

// The engine thread fills it (each chunk's blocks, pool by pool); the
// prefill() caller sends what it holds, so a slow wire never stalls a step.
struct Outbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<std::byte>> messages;
  bool request_done = false;
  bool failed = false;  // the wire broke: the next hand-over fails the request
};

}  // namespace

Expected<PrefillOutcome> KvSender::prefill(Request request, const HostPort& decode, uint64_t transfer_id) {
  if (transfer_id == 0 || transfer_id >> kTransferIdBits) return invalid_argument("kv transfer: id must be in [1, 2^60)");
  const KvShape shape = kv_shape(engine_.kv());
  const std::vector<std::byte> begin = encode_begin({shape, request.prompt});
  // A kept endpoint may be stale (the decode worker restarted): one retry on a
  // fresh one. The begin message goes with the first chunk, not now: the
  // request may queue here for longer than the receiver keeps a silent transfer.
  EndpointId ep = 0;
  for (int attempt = 0;; ++attempt) {
    TS_ASSIGN_OR_RETURN(ep, endpoint(decode));
    const Status st = transport_->flush(ep);
    if (st.is_ok()) break;
    drop_endpoint(decode);
    if (attempt == 1) return st.with_context("kv transfer to " + decode.to_string());
  }

  auto box = std::make_shared<Outbox>();
  auto hook = [box](const KvChunk& c) -> Status {
    for (const size_t pool : c.pools) {
      const uint64_t bb = c.kv.pools()[pool].block_bytes;
      std::vector<std::byte> msg(sizeof(BlocksHeader) + c.blocks.size() * bb);
      const BlocksHeader h{(int32_t)pool, c.first_block, (int32_t)c.blocks.size(), 0};
      std::memcpy(msg.data(), &h, sizeof h);
      TS_TRY(read_pool_blocks(c.runner, c.kv, pool, c.blocks, std::span(msg).subspan(sizeof h)));
      std::lock_guard l(box->mu);
      if (box->failed) return io_error("kv transfer: the decode worker stopped taking blocks");
      box->messages.push_back(std::move(msg));
      box->cv.notify_all();
    }
    return Status::ok();
  };
  request.max_tokens = 1;
  request.stop.clear();  // the decode worker matches stop strings on its own output
  const auto t0 = std::chrono::steady_clock::now();
  double ttft_ms = 0;
  auto on_token = [box, t0, &ttft_ms](const TokenOutput& t) {
    if (t.finish == FinishReason::none) return;
    std::lock_guard l(box->mu);
    ttft_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    box->request_done = true;
    box->cv.notify_all();
  };
  auto submitted = engine_.submit_prefill(request, hook, Delivery::callback, on_token);
  if (!submitted) {
    const std::string why = submitted.status().message();
    (void)transport_->send(ep, wire_tag(transfer_id, WireKind::abort), std::as_bytes(std::span(why)));
    return submitted.status();
  }
  std::shared_ptr<RequestState> r = *submitted;

  PrefillOutcome out;
  Status wire = Status::ok();
  bool begun = false;
  for (;;) {
    std::vector<std::byte> msg;
    {
      std::unique_lock l(box->mu);
      box->cv.wait(l, [&] { return !box->messages.empty() || box->request_done; });
      if (box->messages.empty()) break;  // done, and everything sent
      msg = std::move(box->messages.front());
      box->messages.pop_front();
    }
    if (!begun) {
      wire = transport_->send(ep, wire_tag(transfer_id, WireKind::begin), begin);
      begun = wire.is_ok();
    }
    if (wire.is_ok()) wire = transport_->send(ep, wire_tag(transfer_id, WireKind::blocks), msg);
    if (!wire.is_ok()) {
      {
        std::lock_guard l(box->mu);
        box->failed = true;
        box->messages.clear();
      }
      engine_.cancel(*r);
      break;
    }
    out.bytes_sent += (int64_t)msg.size();
    ++out.messages;
  }
  const RequestResult& result = r->wait();
  if (!wire.is_ok()) {
    drop_endpoint(decode);
    return wire.with_context("kv transfer to " + decode.to_string());
  }
  const SequenceResult& seq = result.sequences.at(0);
  if (seq.finish == FinishReason::error || seq.finish == FinishReason::cancelled) {
    const std::string why = seq.finish == FinishReason::error ? seq.error : "the prefill was cancelled";
    if (transport_->send(ep, wire_tag(transfer_id, WireKind::abort), std::as_bytes(std::span(why))).is_ok()) (void)transport_->flush(ep);
    return io_error("prefill: " + why);
  }
  if (!begun) return internal_error("kv transfer: the prefill finished without handing over a block");
  CommitMessage c;
  c.first = r->first_sampled;
  // The commit, then a flush: the prefill answers only once the decode
  // worker has every byte (nothing here progresses the wire after this).
  const std::vector<std::byte> commit = encode_commit(c);
  Status st = transport_->send(ep, wire_tag(transfer_id, WireKind::commit), commit);
  if (st.is_ok()) st = transport_->flush(ep);
  if (!st.is_ok()) {
    drop_endpoint(decode);
    return st.with_context("kv transfer to " + decode.to_string());
  }
  out.first_token = c.first.at(0).token;
  out.ttft_ms = ttft_ms;
  out.request = r;
  return out;
}

}  // namespace tessera::disagg
