#pragma once
// A submitted request as both sides see it: the engine thread adds its
// tokens and finishes its sequences; the submitting side pulls its stream
// or waits for its result from any thread. Everything a user thread reads
// is behind the mutex; the sequences are the engine thread's alone.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/disagg/kv_blocks.h"
#include "engine/disagg/kv_wire.h"
#include "engine/serving/sequence.h"
#include "tessera/serving.h"

namespace tessera {

class ModelRunner;

// Disaggregation, the prefill side: the blocks one step computed of a
// prompt, handed over on the engine thread right after the step (the pools
// hold them; nothing runs until the hook returns).
struct KvChunk {
  ModelRunner& runner;
  const KvCache& kv;
  std::span<const int32_t> blocks;  // the sequence's logical blocks [first_block, first_block + blocks.size())
  int32_t first_block = 0;
  int32_t computed_tokens = 0;      // the sequence's positions with K/V after this step
  int32_t prompt_tokens = 0;
  // The pools (indices into kv.pools()) to hand over: one, as the step
  // writes it, or the rest once the step is done.
  std::span<const size_t> pools;
};
// An error fails the request (its blocks go back); the engine keeps serving.
using KvExportFn = std::function<Status(const KvChunk&)>;

// Disaggregation, the decode side: a prompt another worker computed, and the
// token it sampled after it, with the sampler's draw stream as it left it.
struct KvImport {
  disagg::KvPayload payload;
  std::vector<disagg::FirstToken> first;  // one per sequence of the request (n), in index order
};

using TokenCallback = std::function<void(const TokenOutput&)>;

// How the caller takes the request's tokens.
enum class Delivery : uint8_t {
  result,    // only the final RequestResult (wait)
  callback,  // each TokenOutput on the engine thread, as it is made (keep it short)
  stream,    // each TokenOutput queued for next()
};

class RequestState {
 public:
  using Clock = std::chrono::steady_clock;
  RequestState(uint64_t id, Request request, Delivery delivery, TokenCallback callback);

  uint64_t id() const { return id_; }
  void set_id(uint64_t id) { id_ = id; }  // by the engine, before the request is queued
  const Request& request() const { return request_; }
  double ms_since_submit(Clock::time_point t = Clock::now()) const;
  Clock::time_point submitted() const { return submitted_; }

  // ---- user threads ----
  // The next event of the stream (Delivery::stream); false once every
  // sequence has ended and its last event was taken.
  bool next(TokenOutput* out);
  // Blocks until every sequence has finished; the result stays readable.
  const RequestResult& wait();
  bool done() const;
  int64_t generated() const;  // tokens so far, over every sequence
  void request_cancel() { cancel_.store(true, std::memory_order_relaxed); }
  bool cancel_requested() const { return cancel_.load(std::memory_order_relaxed); }

  // ---- the engine thread ----
  std::vector<std::unique_ptr<Sequence>> seqs;  // index order once forked
  // Disaggregation (engine thread; set before the request is queued).
  KvExportFn kv_export;                  // prefill side: each chunk's blocks
  int32_t kv_exported_tokens = 0;        // positions handed to kv_export so far
  std::unique_ptr<KvImport> kv_import;   // decode side: the prompt's K/V, dropped once in the pools
  // Prefill side: each sequence's first token (submit_prefill sizes it n),
  // written on the engine thread before the request finishes, read after wait().
  std::vector<disagg::FirstToken> first_sampled;
  // Adds the event to the result (and the stream, or calls back).
  void emit(TokenOutput&& ev);
  // Ends sequence `index` (an event with token -1 unless it already went
  // out with its last token); the request is done when all n have.
  void finish(int32_t index, FinishReason reason, std::string error = {});
  void note_scheduled();
  void note_preempted();
  void note_cached_prompt(int64_t tokens);
  bool finished(int32_t index) const;

 private:
  uint64_t id_;
  const Request request_;
  const Delivery delivery_;
  const TokenCallback callback_;
  const Clock::time_point submitted_;
  std::atomic<bool> cancel_{false};
  bool scheduled_ = false;  // engine thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  RequestResult result_;
  std::deque<TokenOutput> queue_;
  int32_t finished_ = 0;
  bool done_ = false;
  double last_token_ms_ = -1;  // sequence 0's last token, for the inter-token gaps
};

}  // namespace tessera
