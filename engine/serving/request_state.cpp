#include "engine/serving/request_state.h"

namespace tessera {

RequestState::RequestState(uint64_t id, Request request, Delivery delivery, TokenCallback callback)
    : id_(id), request_(std::move(request)), delivery_(delivery), callback_(std::move(callback)), submitted_(Clock::now()) {
  result_.sequences.resize((size_t)std::max(1, request_.n));
  result_.metrics.prompt_tokens = (int64_t)request_.prompt.size();
}

double RequestState::ms_since_submit(Clock::time_point t) const {
  return std::chrono::duration<double, std::milli>(t - submitted_).count();
}

bool RequestState::next(TokenOutput* out) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !queue_.empty() || done_; });
  if (queue_.empty()) return false;
  *out = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

const RequestResult& RequestState::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  return result_;
}

bool RequestState::done() const {
  std::lock_guard lock(mu_);
  return done_;
}

int64_t RequestState::generated() const {
  std::lock_guard lock(mu_);
  return result_.metrics.generated_tokens;
}

bool RequestState::finished(int32_t index) const {
  std::lock_guard lock(mu_);
  return result_.sequences[(size_t)index].finish != FinishReason::none;
}

void RequestState::note_scheduled() {
  if (scheduled_) return;
  scheduled_ = true;
  std::lock_guard lock(mu_);
  result_.metrics.queue_ms = ms_since_submit();
}

void RequestState::note_preempted() {
  std::lock_guard lock(mu_);
  ++result_.metrics.preemptions;
}

void RequestState::note_cached_prompt(int64_t tokens) {
  std::lock_guard lock(mu_);
  result_.metrics.cached_prompt_tokens = std::max(result_.metrics.cached_prompt_tokens, tokens);
}

void RequestState::emit(TokenOutput&& ev) {
  // A callback sees the event before wait() can return: the request is
  // done only once its last callback has run.
  if (delivery_ == Delivery::callback && callback_) callback_(ev);
  const double now = ms_since_submit();
  {
    std::lock_guard lock(mu_);
    SequenceResult& r = result_.sequences[(size_t)ev.index];
    RequestMetrics& m = result_.metrics;
    if (ev.token >= 0) {
      if (m.generated_tokens == 0) m.ttft_ms = now;
      ++m.generated_tokens;
      if (ev.index == 0) {
        if (!r.tokens.empty()) m.itl_ms.push_back(now - last_token_ms_);
        last_token_ms_ = now;
      }
      r.tokens.push_back(ev.token);
      if (request_.logprobs >= 0) {
        r.logprobs.push_back(ev.logprob);
        r.top_logprobs.push_back(ev.top_logprobs);
      }
    }
    r.text += ev.text;
    if (ev.finish != FinishReason::none && r.finish == FinishReason::none) {
      r.finish = ev.finish;
      r.error = ev.error;
      if (++finished_ == (int32_t)result_.sequences.size()) {
        done_ = true;
        m.e2e_ms = now;
      }
    }
    if (delivery_ == Delivery::stream) queue_.push_back(std::move(ev));
  }
  cv_.notify_all();
}

void RequestState::finish(int32_t index, FinishReason reason, std::string error) {
  if (finished(index)) return;
  TokenOutput ev;
  ev.index = index;
  ev.finish = reason;
  ev.error = std::move(error);
  emit(std::move(ev));
}

}  // namespace tessera
