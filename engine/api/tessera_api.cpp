#include "tessera/tessera.h"

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "engine/models/load_model.h"
#include "engine/runtime/model_runner.h"
#include "engine/runtime/session.h"
#include "engine/tokenizer/tokenizer.h"

namespace tessera {

Expected<std::unique_ptr<Model>> Model::open(const ModelOptions& o) {
  std::unique_ptr<Model> m(new Model());
  TS_ASSIGN_OR_RETURN(ModelWeights w, load_model(o.path));
  auto weights = std::make_shared<ModelWeights>(std::move(w));
  if (!o.tokenizer_path.empty()) {
    TS_ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::load_file(o.tokenizer_path, weights->config.vocab_size));
    m->tokenizer_ = std::make_unique<Tokenizer>(std::move(t));
  } else if (weights->tokenizer) {
    TS_ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::from_data(*weights->tokenizer, o.path));
    m->tokenizer_ = std::make_unique<Tokenizer>(std::move(t));
  }
  if (m->tokenizer_ && m->tokenizer_->vocab_size() != weights->config.vocab_size)
    return invalid_argument((o.tokenizer_path.empty() ? o.path : o.tokenizer_path) + ": tokenizer has " +
                            std::to_string(m->tokenizer_->vocab_size()) + " tokens; the model's vocab_size is " +
                            std::to_string(weights->config.vocab_size));
  RunnerOptions ro;
  ro.backend = o.backend;
  ro.device = o.device;
  ro.max_context = o.max_context;
  ro.max_prefill_tokens = o.max_prefill_tokens;
  ro.kv_cache_bytes = o.kv_cache_bytes;
  ro.strict = o.strict;
  ro.passes = o.passes;
  ro.tile = o.tile;
  ro.place = o.place;
  ro.weight_layout = o.weight_layout;
  // Greedy generation takes one id a step from the device, not the vocabulary's logits.
  ro.sample_on_device = true;
  m->weights_ = weights;
  TS_ASSIGN_OR_RETURN(RunnerWithCache rc, open_runner(weights, ro));
  m->runner_ = std::move(rc.runner);
  m->kv_ = std::move(rc.kv);
  return m;
}

Model::~Model() {
  // The cache goes before the runner whose devices hold its pools, once no queued work reads them.
  if (runner_) (void)runner_->synchronize();
  kv_.reset();
}

const LlamaConfig& Model::config() const { return weights_->config; }
const DeviceInfo& Model::device() const { return runner_->device_info(); }
int32_t Model::max_context() const { return runner_->max_context(); }
const std::vector<std::string>& Model::placement_notes() const { return runner_->placement_notes(); }

Expected<std::vector<int32_t>> Model::encode(const std::string& text) const {
  if (!tokenizer_) return invalid_argument(weights_->source + ": has no tokenizer; give one with -z");
  // BOS/EOS as the vocabulary asks (tokenizer.ggml.add_bos_token / add_eos_token).
  std::vector<int32_t> ids = tokenizer_->encode(text, tokenizer_->default_options());
  if (ids.empty())
    return invalid_argument("the prompt is empty and " + weights_->source + "'s vocabulary adds no BOS; give some text");
  return ids;
}

Expected<std::string> Model::decode(const std::vector<int32_t>& ids) const {
  if (!tokenizer_) return invalid_argument(weights_->source + ": has no tokenizer; give one with -z");
  for (int32_t id : ids)
    if (id < 0 || id >= tokenizer_->vocab_size()) return out_of_range("token id " + std::to_string(id) + " is outside the vocabulary");
  return tokenizer_->decode(ids);
}

std::string Model::decode_piece(int32_t prev, int32_t id) const {
  return tokenizer_ ? tokenizer_->decode_piece(prev, id) : std::string();
}

Expected<std::unique_ptr<Generation>> Model::start(const SamplerParams& sampler) {
  TS_TRY(validate(sampler));
  TS_ASSIGN_OR_RETURN(auto s, Session::create(*runner_, *kv_));
  return std::unique_ptr<Generation>(new Generation(std::move(s), sampler));
}

Generation::Generation(std::unique_ptr<Session> s, SamplerParams p)
    : session_(std::move(s)), sampler_(p), params_(p) {}
Generation::~Generation() = default;

Status Generation::feed(std::span<const int32_t> tokens) { return session_->feed(tokens); }
std::span<const float> Generation::logits() const { return session_->logits(); }
int32_t Generation::position() const { return session_->position(); }

int32_t Generation::sample() {
  scratch_.assign(session_->logits().begin(), session_->logits().end());
  return sampler_.sample(scratch_);
}

Expected<std::vector<int32_t>> Generation::generate(std::span<const int32_t> prompt, int32_t steps,
                                                    const std::function<bool(int32_t)>& on_token) {
  GenerateOptions o;
  o.steps = steps;
  o.sampler = params_;
  TS_ASSIGN_OR_RETURN(GenerateResult r, tessera::generate(*session_, prompt, o, on_token));
  metrics_ = r.metrics;
  return std::move(r.ids);
}

std::vector<BackendReport> list_devices() {
  register_builtin_backends();
  std::vector<BackendReport> out;
  for (Backend* b : BackendRegistry::global().all()) {
    BackendReport r{b->name(), b->enumerate(), {}};
    if (r.devices.empty()) r.why_none = b->why_none();
    out.push_back(std::move(r));
  }
  return out;
}

Expected<uint64_t> free_device_memory(const std::string& backend, int index) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<Device> d, open_device(backend, index));
  return d->free_memory();
}

std::vector<std::string> backend_load_errors() {
  register_builtin_backends();
  return BackendRegistry::global().load_errors();
}

}  // namespace tessera
