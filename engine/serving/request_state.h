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
#include <vector>

#include "engine/serving/sequence.h"
#include "tessera/serving.h"

namespace tessera {

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
  const uint64_t id_;
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
