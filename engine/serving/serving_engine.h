#pragma once
// The serving engine: many requests at once over one model. It owns the
// ModelRunner and its KV cache (the BlockManager inside), the prefix cache
// and the scheduler, and runs the step loop on its own thread: take new
// requests and cancellations, schedule a step (continuous batching, chunked
// prefill, preemption), run it, sample every sequence that reached its end,
// and deliver the tokens. submit/cancel/metrics may be called from any thread.
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "engine/kv/prefix_cache.h"
#include "engine/runtime/model_runner.h"
#include "engine/serving/request_state.h"
#include "engine/serving/scheduler.h"
#include "engine/serving/step_batch.h"
#include "engine/spec/proposer.h"
#include "engine/spec/verify.h"
#include "engine/tokenizer/tokenizer.h"
#include "tessera/serving.h"

namespace tessera {

// What the engine thread sees after each step, for tests that check the
// block accounting step by step.
struct StepObservation {
  const BlockManager& blocks;
  const PrefixCache* prefix;          // null when prefix caching is off
  size_t sequences_holding_blocks = 0;  // the scheduler's sequences that hold KV blocks
  const SchedulerOutput& step;
  size_t steps_in_flight = 0;  // other steps submitted and not yet applied (pipeline batches)
};

struct EngineConfig {
  SchedulerConfig scheduler;
  bool prefix_caching = true;
  SpecConfig spec;  // speculative decoding: off by default
  // --pipeline-parallel: independent batches kept in flight across the
  // stages (docs/parallelism.md). 0: one a stage, as many as the runner
  // holds (ModelRunner::kMaxInFlight); 1: one batch, the stages take turns.
  // Speculation keeps one.
  int32_t pipeline_batches = 0;
  // Called on the engine thread after every step (tests); keep it short.
  std::function<void(const StepObservation&)> after_step;
};

class ServingEngine {
 public:
  // runner_options.max_seqs and max_prefill_tokens are set from the
  // scheduler's limits; `tokenizer` (may be null: no text, no stop strings)
  // must outlive the engine.
  static Expected<std::unique_ptr<ServingEngine>> create(std::shared_ptr<const ModelWeights> weights, const Tokenizer* tokenizer,
                                                          RunnerOptions runner_options, const EngineConfig& config);
  // Finishes what is still queued or running as cancelled, then stops the thread.
  ~ServingEngine();
  ServingEngine(const ServingEngine&) = delete;
  ServingEngine& operator=(const ServingEngine&) = delete;

  // Checks the request (one line naming the field when it is refused) and
  // queues it. The handle stays valid after the request finishes.
  Expected<std::shared_ptr<RequestState>> submit(Request request, Delivery delivery = Delivery::result, TokenCallback callback = {});
  // Disaggregation, prefill side: as submit, and after every step that
  // computed part of the prompt, `on_chunk` gets the blocks that step wrote
  // (the first call also those the prefix cache gave), on the engine thread.
  // The request's RequestState says each sequence's first token sampled
  // (first_sampled, a stop token included), the draw stream after it and,
  // when asked for, its logprobs.
  Expected<std::shared_ptr<RequestState>> submit_prefill(Request request, KvExportFn on_chunk, Delivery delivery = Delivery::result,
                                                         TokenCallback callback = {});
  // Disaggregation, decode side: a request whose prompt another worker
  // computed. Its blocks are allocated here, the payload written into them,
  // the first token emitted as if sampled here, and decoding continues. Waits
  // (queued) while the cache has too few free blocks; with n > 1 the other
  // sequences fork the imported blocks. Refused when the payload's shape
  // differs from this cache's, its tokens from the prompt's, or its first
  // tokens from the request's n.
  Expected<std::shared_ptr<RequestState>> submit_imported(Request request, KvImport import, Delivery delivery = Delivery::result,
                                                          TokenCallback callback = {});
  // Finishes the request (reason cancelled) at the next step; its blocks are
  // free after that step. A finished request is left as it is.
  void cancel(RequestState& request);

  EngineMetrics metrics() const;
  // "kv cache: 1024 blocks x 16 tokens = 16384 tokens, 512 MiB; 8 sequences of the full 2048-token context fit"
  std::string memory_summary() const;
  const ModelRunner& runner() const { return *runner_.runner; }
  // The KV cache's block accounting, for tests that compare counts before
  // and after; read it only while the engine is idle.
  const BlockManager& blocks_for_tests() const { return runner_.kv->blocks(); }
  const KvCacheSpec& kv_spec() const { return runner_.kv->spec(); }
  // The cache's pools (their names, devices and block sizes never change; the
  // blocks are the engine thread's): what a KV transfer's shape is checked against.
  const KvCache& kv() const { return *runner_.kv; }
  const EngineConfig& config() const { return config_; }
  int32_t max_context() const { return runner_.runner->max_context(); }

 private:
  ServingEngine(RunnerWithCache runner, std::unique_ptr<Proposer> proposer, const Tokenizer* tokenizer, const EngineConfig& config);
  Status validate(const Request& r) const;
  void loop();
  // Takes what the inbox holds; false when the engine is stopping.
  bool take_inbox(std::vector<std::shared_ptr<RequestState>>* fresh);
  void start_request(const std::shared_ptr<RequestState>& r);
  Expected<std::shared_ptr<RequestState>> enqueue(std::shared_ptr<RequestState> r);
  // An imported request into the running set; false while its blocks do not fit yet.
  bool start_imported(const std::shared_ptr<RequestState>& r);
  void start_waiting_imports();
  // Prefill side: each exporting sequence's newly computed blocks, found
  // before the step (plan_exports), handed over pool by pool as the step
  // writes them (on_kv_written) and, for pools it did not announce, after it
  // (export_chunks).
  void plan_exports(const SchedulerOutput& step);
  static void on_kv_written(void* self, const char* pool);
  void hand_over(std::span<const size_t> pools);
  void export_chunks();
  void cancel_requested();
  // A step of the scheduler's next sequences, and everything it returns applied.
  struct Flight {
    SchedulerOutput out;
    StepRequest req;
    StepTicket ticket = 0;
    int32_t batch = 0;
    int32_t blocks_held = 0;
    std::chrono::steady_clock::time_point t_proposed, t_step;
  };
  Status run_step();
  Status run_batches();
  Status drain_flights();
  Expected<StepResult> collect_oldest(Flight& f);
  bool prepare_step(Flight& f);
  void finish_step(const Flight& f, const StepResult& result);
  bool exporting() const;  // a live request hands its KV over (disaggregation's prefill side)
  // Asks the proposer for the next tokens of every decoding sequence.
  Status propose();
  // A pass's time with k proposals a sequence (k = 0..max_k) over a plain
  // decode step's, every running sequence proposing alike, the step's
  // tokens rounded up to the bucket that runs them (AdaptiveK::next).
  const std::vector<double>& spec_costs();
  // Scores a sequence's proposal from its 1 + proposed rows starting at `first_row`.
  void verify_proposal(const ScheduledSeq& e, const StepResult& result, size_t first_row);
  void sample_rows(const ScheduledSeq& e, const StepResult& result, size_t row);
  void sample_row(Sequence& s, std::span<const float> logits, int32_t device_token);
  // One of q's stop token ids, or the model's end of sequence unless q ignores it.
  bool is_stop_token(const Request& q, int32_t token) const;
  // `given`: the first token's logprobs from the prefill worker (an import has no logits).
  void append_token(Sequence& s, int32_t token, std::span<const float> logits, const disagg::FirstLogprobs* given = nullptr);
  void fork_children(Sequence& parent);
  void finish_sequence(Sequence& s, FinishReason reason, std::string error = {});
  void fail_all(const Status& st);
  void update_metrics(double step_ms, double host_ms, int32_t step_tokens, int32_t blocks_held);
  // Drops finished requests and publishes the counts metrics() reads.
  void reap_finished();
  bool needs_logits(const Sequence& s) const;

  RunnerWithCache runner_;
  const Tokenizer* tokenizer_;
  EngineConfig config_;
  std::unique_ptr<PrefixCache> prefix_;
  std::unique_ptr<Scheduler> scheduler_;
  StepBatch batch_;
  SchedulerOutput scheduled_;  // the last step applied (StepObservation)
  std::deque<Flight> flights_;  // pipeline batches' steps in flight, oldest first
  int32_t next_batch_ = 0;
  std::vector<std::shared_ptr<RequestState>> live_;  // engine thread: requests not yet finished
  std::vector<std::shared_ptr<RequestState>> waiting_imports_;  // imported requests whose blocks do not fit yet
  struct ChunkExport {
    Sequence* seq = nullptr;
    int32_t first_block = 0, end = 0;
    std::vector<int32_t> blocks;  // the sequence's logical blocks [first_block, ...)
    Status status;                // a failed hand-over ends the sequence after the step
  };
  std::vector<ChunkExport> exports_;         // this step's
  std::vector<uint8_t> pool_handed_;         // by KV pool: handed over during this step
  std::map<std::string, size_t, std::less<>> pool_index_;  // KV pool name -> index in kv.pools()
  int64_t kv_exports_during_ = 0, kv_exports_after_ = 0;  // pools handed over (EngineMetrics)
  std::vector<float> sample_scratch_;  // a logit row the sampler may change
  std::unique_ptr<Proposer> proposer_;  // null without speculation
  std::vector<ProposeItem> propose_items_;
  std::vector<double> spec_costs_;
  std::vector<int32_t> choices_;
  VerifyScratch verify_scratch_;
  int64_t spec_proposed_ = 0, spec_accepted_ = 0, spec_passes_ = 0, decode_passes_ = 0;
  double propose_ms_ = 0;
  int64_t requests_finished_ = 0, tokens_generated_ = 0;
  SeqId next_seq_ = 1;
  int32_t eos_ = -1;

  std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::vector<std::shared_ptr<RequestState>> inbox_;
  bool cancels_pending_ = false;
  bool stopping_ = false;
  uint64_t next_request_ = 1;

  mutable std::mutex metrics_mu_;
  EngineMetrics metrics_;
  std::thread thread_;
};

}  // namespace tessera
