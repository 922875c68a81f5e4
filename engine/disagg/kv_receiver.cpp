#include "engine/disagg/kv_receiver.h"

#include <algorithm>
#include <cstring>

#include "engine/disagg/kv_wire.h"

namespace tessera::disagg {

using Clock = std::chrono::steady_clock;

Expected<std::unique_ptr<KvReceiver>> KvReceiver::create(ServingEngine& engine, const KvReceiverOptions& o) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<UcxTransport> t, UcxTransport::create(o.ucx));
  TS_TRY(t->listen(o.host, o.port).with_context("--kv-listen " + o.host + ":" + std::to_string(o.port)));
  return std::unique_ptr<KvReceiver>(new KvReceiver(engine, std::move(t), o));
}

KvReceiver::KvReceiver(ServingEngine& engine, std::unique_ptr<UcxTransport> t, const KvReceiverOptions& o)
    : engine_(engine), transport_(std::move(t)), options_(o), shape_(kv_shape(engine.kv())) {
  max_blocks_ = engine.runner().max_blocks_per_seq();
  thread_ = std::thread([this] { run(); });
}

KvReceiver::~KvReceiver() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  std::lock_guard l(mu_);
  for (auto& [id, t] : transfers_) t.error = "the decode worker is shutting down";
  cv_.notify_all();
}

void KvReceiver::run() {
  // One buffer the size of the largest message: a chunk's blocks of the
  // largest pool, or a begin message with a whole-context prompt.
  uint64_t largest = 0;
  for (uint64_t b : shape_.pool_block_bytes) largest = std::max(largest, b);
  const size_t cap = std::max<size_t>(sizeof(BlocksHeader) + (size_t)max_blocks_ * largest,
                                      64 + shape_.pool_block_bytes.size() * 8 + (size_t)max_blocks_ * shape_.block_size * 4);
  std::vector<std::byte> buf(cap);
  std::unique_ptr<UcxPending> pending;
  while (!stop_) {
    // Accept whoever connected (endpoints are made as a peer asks; messages
    // come from any of them).
    while (transport_->accept(0).has_value()) {
    }
    // One receive posted at a time, polled without cancelling it: a large
    // message may take longer than a poll, and keeps the buffer until done.
    if (!pending) {
      auto p = transport_->recv_async(0, 0, buf);
      if (p) pending = std::move(*p);
    }
    if (pending) {
      auto got = pending->poll(200);
      if (!got || *got) pending.reset();
      if (got && *got) on_message((*got)->tag, std::span(buf.data(), (*got)->bytes));
    }
    expire();
  }
}

void KvReceiver::on_message(uint64_t tag, std::span<const std::byte> bytes) {
  const uint64_t id = tag_transfer(tag);
  std::lock_guard l(mu_);
  switch (tag_kind(tag)) {
    case WireKind::begin: {
      Transfer& t = transfers_[id];
      t.touched = Clock::now();
      auto m = decode_begin(bytes);
      if (!m) {
        t.error = m.status().message();
        break;
      }
      if (Status st = check_same_shape(shape_, m->shape); !st.is_ok()) {
        t.error = st.message();
        break;
      }
      if (m->prompt.size() > (size_t)max_blocks_ * shape_.block_size) {
        t.error = "kv transfer: a prompt of " + std::to_string(m->prompt.size()) + " tokens is longer than this worker's context";
        break;
      }
      t.prompt = std::move(m->prompt);
      t.import.payload.allocate(shape_, (int32_t)t.prompt.size());
      t.begun = true;
      break;
    }
    case WireKind::blocks: {
      auto it = transfers_.find(id);
      if (it == transfers_.end() || !it->second.begun || !it->second.error.empty()) break;  // aborted or dropped: ignore the rest
      Transfer& t = it->second;
      t.touched = Clock::now();
      BlocksHeader h;
      if (bytes.size() < sizeof h) {
        t.error = "kv transfer: a blocks message of " + std::to_string(bytes.size()) + " bytes";
        break;
      }
      std::memcpy(&h, bytes.data(), sizeof h);
      const KvPayload& p = t.import.payload;
      if (h.pool < 0 || (size_t)h.pool >= shape_.pool_block_bytes.size() || h.first_block < 0 || h.n_blocks < 1 ||
          h.first_block + h.n_blocks > p.n_blocks || bytes.size() != sizeof h + (size_t)h.n_blocks * shape_.pool_block_bytes[(size_t)h.pool]) {
        t.error = "kv transfer: a blocks message for pool " + std::to_string(h.pool) + ", blocks " + std::to_string(h.first_block) + "+" +
                  std::to_string(h.n_blocks) + ", does not fit the prompt's " + std::to_string(p.n_blocks) + " blocks";
        break;
      }
      std::memcpy(t.import.payload.blocks((size_t)h.pool, h.first_block, h.n_blocks).data(), bytes.data() + sizeof h, bytes.size() - sizeof h);
      t.blocks_received += h.n_blocks;
      break;
    }
    case WireKind::commit: {
      auto it = transfers_.find(id);
      if (it == transfers_.end() || !it->second.begun || !it->second.error.empty()) break;
      Transfer& t = it->second;
      t.touched = Clock::now();
      Expected<CommitMessage> commit = decode_commit(bytes);
      if (!commit) {
        t.error = commit.status().message();
        break;
      }
      CommitMessage& c = *commit;
      // Every block of every pool at least once (a re-sent partial block counts again).
      if (t.blocks_received < (int64_t)t.import.payload.n_blocks * (int64_t)shape_.pool_block_bytes.size()) {
        t.error = "kv transfer: committed with " + std::to_string(t.blocks_received) + " of " +
                  std::to_string((int64_t)t.import.payload.n_blocks * (int64_t)shape_.pool_block_bytes.size()) + " blocks";
        break;
      }
      t.import.first = std::move(c.first);
      t.committed = true;
      break;
    }
    case WireKind::abort: {
      Transfer& t = transfers_[id];
      t.touched = Clock::now();
      t.error = "kv transfer aborted by the prefill worker: " + std::string((const char*)bytes.data(), bytes.size());
      break;
    }
  }
  cv_.notify_all();
}

void KvReceiver::expire() {
  // A transfer silent for twice the timeout and not claimed: its request went elsewhere or died.
  const auto now = Clock::now();
  std::lock_guard l(mu_);
  std::erase_if(transfers_, [&](const auto& kv) { return now - kv.second.touched > std::chrono::milliseconds(2 * options_.ucx.timeout_ms); });
}

void KvReceiver::abort(uint64_t transfer_id, const std::string& why) {
  std::lock_guard l(mu_);
  Transfer& t = transfers_[transfer_id];
  t.touched = Clock::now();
  if (!t.committed) t.error = why;
  cv_.notify_all();
}

size_t KvReceiver::pending() const {
  std::lock_guard l(mu_);
  return transfers_.size();
}

Expected<std::shared_ptr<RequestState>> KvReceiver::submit(Request request, uint64_t transfer_id, Delivery delivery, TokenCallback callback) {
  Transfer t;
  {
    std::unique_lock l(mu_);
    const bool ready = cv_.wait_for(l, std::chrono::milliseconds(options_.ucx.timeout_ms), [&] {
      auto it = transfers_.find(transfer_id);
      return it != transfers_.end() && (it->second.committed || !it->second.error.empty());
    });
    auto it = transfers_.find(transfer_id);
    if (!ready || it == transfers_.end()) {
      // Say how far it got; keep an entry that swallows whatever comes late.
      std::string got = "nothing arrived";
      if (it != transfers_.end() && it->second.begun)
        got = "begun, " + std::to_string(it->second.blocks_received) + " of " +
              std::to_string((int64_t)it->second.import.payload.n_blocks * (int64_t)shape_.pool_block_bytes.size()) +
              " blocks, no commit";
      Transfer& t = transfers_[transfer_id];
      t.touched = Clock::now();
      t.error = "timed out";
      return io_error("kv transfer: no K/V from the prefill worker within " + std::to_string(options_.ucx.timeout_ms) + " ms (" + got + ")");
    }
    t = std::move(it->second);
    transfers_.erase(it);
  }
  if (!t.error.empty()) return io_error(t.error);
  if (t.prompt != request.prompt)
    return invalid_argument("kv transfer: the prefill worker computed a prompt of " + std::to_string(t.prompt.size()) +
                            " tokens that is not this request's (" + std::to_string(request.prompt.size()) + " tokens)");
  return engine_.submit_imported(std::move(request), std::move(t.import), delivery, std::move(callback));
}

}  // namespace tessera::disagg
