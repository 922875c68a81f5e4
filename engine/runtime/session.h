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
  static Expected<std::unique_ptr<Session>> create(ModelRunner& runner);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs the tokens at the next positions (in chunks of at most the runner's
  // step size). Afterwards logits() is the last token's; with all_logits,
  // all_logits() holds one row per token fed. On error the position is
  // unchanged (KV blocks already reserved stay with the session until it ends).
  Status feed(std::span<const int32_t> tokens, bool all_logits = false);
  std::span<const float> logits() const { return last_logits_; }
  const std::vector<float>& all_logits() const { return all_logits_; }
  int32_t position() const { return position_; }
  ModelRunner& runner() { return runner_; }

 private:
  Session(ModelRunner& r, SeqId id) : runner_(r), id_(id) {}
  ModelRunner& runner_;
  SeqId id_;
  int32_t position_ = 0;
  std::vector<float> last_logits_, all_logits_, chunk_logits_;
  std::vector<int32_t> positions_, slots_, rows_, block_table_;
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
