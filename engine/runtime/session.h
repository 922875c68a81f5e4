#pragma once
// One sequence being generated: its KV blocks (taken from the runner's block
// manager, given back when the session ends), its position, and the logits
// of the last token fed.
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/runtime/metrics.h"
#include "engine/runtime/model_runner.h"
#include "engine/sampling/sampler.h"

namespace tessera {

class Session {
 public:
  static Expected<std::unique_ptr<Session>> create(ModelRunner& runner, KvCache& kv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs the tokens at the next positions (in chunks of at most the runner's
  // step size, up to two in flight). Afterwards logits() is the last token's;
  // with all_logits, all_logits() holds one row per token fed. On error the
  // position is unchanged (KV blocks already reserved stay with the session
  // until it ends).
  Status feed(std::span<const int32_t> tokens, bool all_logits = false);
  // As feed, but the last token's greedy next token is chosen on the device and
  // only it comes back (greedy_token()); logits() is left empty. Needs a runner
  // built with sample_on_device.
  Status feed_greedy(std::span<const int32_t> tokens);
  // A second sequence sharing this one's KV blocks and position: what either
  // writes next into a shared block is copied first (copy-on-write, run on the device).
  Expected<std::unique_ptr<Session>> fork() const;
  std::span<const float> logits() const { return last_logits_; }
  const std::vector<float>& all_logits() const { return all_logits_; }
  int32_t greedy_token() const { return greedy_token_; }
  int32_t position() const { return position_; }
  SeqId id() const { return id_; }
  ModelRunner& runner() { return runner_; }
  KvCache& kv() { return kv_; }

 private:
  enum class Want { last_logits, all_logits, greedy_token };
  Session(ModelRunner& r, KvCache& kv, SeqId id) : runner_(r), kv_(kv), id_(id) {}
  Status run(std::span<const int32_t> tokens, Want want);
  // One chunk's step arrays, kept alive while it is in flight.
  struct Chunk {
    std::vector<int32_t> positions, slots, rows, block_table;
    int32_t query_start[2] = {0, 0};
    int32_t seq_len = 0;
    size_t start = 0;
    StepTicket ticket = 0;
  };
  Status collect(Chunk& c, Want want, bool last, size_t total);

  ModelRunner& runner_;
  KvCache& kv_;
  SeqId id_;
  int32_t position_ = 0;
  int32_t greedy_token_ = -1;
  std::vector<float> last_logits_, all_logits_;
  std::vector<BlockCopy> copies_;
  Chunk chunks_[ModelRunner::kMaxInFlight];
};

struct GenerateOptions {
  int32_t steps = 256;  // forward passes, prompt included (llama2.c's -n)
  SamplerParams sampler;
  bool stop_at_bos = true;   // llama2.c stops when BOS is sampled
  bool stop_at_eos = false;
};

struct GenerateResult {
  std::vector<int32_t> ids;  // the prompt, then every sampled token
  GenerationMetrics metrics;
};

// llama2.c's loop: the whole prompt in one prefill, then one token a step,
// until `steps` forward passes have run or a stop token is sampled. The
// callback sees each sampled token; returning false stops early.
Expected<GenerateResult> generate(Session& s, std::span<const int32_t> prompt, const GenerateOptions& o,
                                  const std::function<bool(int32_t)>& on_token = {});

}  // namespace tessera
