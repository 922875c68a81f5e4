// Model and Generation: the public face of ModelRunner and Session.
#include "tessera/tessera.h"

#include <filesystem>
#include <optional>
#include <string_view>

#include "backends/cpu/cpu_device.h"
#include "core/thread_pool.h"
#include "engine/api/model_impl.h"
#include "engine/bench/synthetic_model.h"
#include "engine/models/requantize.h"
#include "engine/models/load_model.h"

namespace tessera {

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

std::optional<std::string> synthetic_model_type(const std::string& path) {
  constexpr std::string_view kPrefix = "synthetic";
  if (path.rfind(kPrefix, 0) != 0 || std::filesystem::exists(path)) return std::nullopt;
  if (path.size() == kPrefix.size()) return "q8_0";
  if (path[kPrefix.size()] != ':') return std::nullopt;
  return path.substr(kPrefix.size() + 1);
}

// A model file, or the synthetic model synthetic_model_type names:
// synthetic:TYPE, or synthetic:TYPE@BASE, the synthetic BASE model (its
// shape and weights) re-quantized to TYPE (a draft of that model).
Expected<ModelWeights> open_weights(const std::string& path) {
  const std::optional<std::string> type = synthetic_model_type(path);
  if (!type) return load_model(path);
  const size_t at = type->find('@');
  TS_ASSIGN_OR_RETURN(const DType dtype, synthetic_weight_type(type->substr(0, at), "-m " + path));
  ThreadPool pool(cpu::default_cpu_threads());
  if (at == std::string::npos) return make_synthetic_llama(default_bench_spec(dtype), pool);
  TS_ASSIGN_OR_RETURN(const DType base_type, synthetic_weight_type(type->substr(at + 1), "-m " + path));
  TS_ASSIGN_OR_RETURN(const ModelWeights base, make_synthetic_llama(default_bench_spec(base_type), pool));
  return requantize(base, dtype, pool);
}

Expected<SpecConfig> spec_config_from(const EngineOptions::Speculative& s) {
  SpecConfig c;
  c.max_k = s.tokens;
  c.ngram = s.ngram;
  c.adaptive = s.adaptive;
  if (s.method == "none") return c;
  if (s.method == "ngram") {
    c.method = SpecMethod::ngram;
  } else if (s.method == "jacobi") {
    c.method = SpecMethod::jacobi;
  } else if (s.method == "draft") {
    c.method = SpecMethod::draft;
    if (s.draft_model.empty()) return invalid_argument("--draft-model: speculative method draft needs a draft model file");
    auto w = open_weights(s.draft_model);
    if (!w) return invalid_argument("--draft-model: " + w.status().message());
    c.draft = std::make_shared<ModelWeights>(std::move(*w));
  } else {
    return invalid_argument("speculative method: expected none, draft, ngram or jacobi, got '" + s.method + "'");
  }
  return c;
}

Expected<LoadedModel> load_model_and_tokenizer(const ModelOptions& o) {
  LoadedModel m;
  TS_ASSIGN_OR_RETURN(ModelWeights w, open_weights(o.path));
  auto weights = std::make_shared<ModelWeights>(std::move(w));
  if (!o.tokenizer_path.empty()) {
    TS_ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::load_file(o.tokenizer_path, weights->config.vocab_size));
    m.tokenizer = std::make_unique<Tokenizer>(std::move(t));
  } else if (weights->tokenizer) {
    TS_ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::from_data(*weights->tokenizer, o.path));
    m.tokenizer = std::make_unique<Tokenizer>(std::move(t));
  }
  if (m.tokenizer && m.tokenizer->vocab_size() != weights->config.vocab_size)
    return invalid_argument((o.tokenizer_path.empty() ? o.path : o.tokenizer_path) + ": tokenizer has " +
                            std::to_string(m.tokenizer->vocab_size()) + " tokens; the model's vocab_size is " +
                            std::to_string(weights->config.vocab_size));
  if (!o.tokenizer_path.empty()) m.chat_template = chat_template_beside(o.tokenizer_path);
  if (m.chat_template.empty()) m.chat_template = weights->chat_template;
  m.weights = std::move(weights);
  return m;
}

RunnerOptions runner_options(const ModelOptions& o) {
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
  ro.kv_type = o.kv_type;
  ro.batch_invariant = o.batch_invariant;
  ro.parallel.tensor = o.tensor_parallel;
  ro.parallel.pipeline = o.pipeline_parallel;
  ro.parallel.model_path = o.path;
  // Greedy generation takes one id a step from the device, not the vocabulary's logits.
  ro.sample_on_device = true;
  return ro;
}

Expected<std::vector<int32_t>> encode_prompt(const Tokenizer* tok, const std::string& source, const std::string& text) {
  if (!tok) return invalid_argument(source + ": has no tokenizer; give one with -z");
  // BOS/EOS as the vocabulary asks (tokenizer.ggml.add_bos_token / add_eos_token).
  std::vector<int32_t> ids = tok->encode(text, tok->default_options());
  if (ids.empty())
    return invalid_argument("the prompt is empty and " + source + "'s vocabulary adds no BOS; give some text");
  return ids;
}

Expected<std::unique_ptr<Model>> Model::open(const ModelOptions& o) { return open_model(o, runner_options(o)); }

Expected<std::unique_ptr<Model>> open_model(const ModelOptions& o, const RunnerOptions& ro) {
  auto m = std::make_unique<Model::Impl>();
  TS_ASSIGN_OR_RETURN(LoadedModel loaded, load_model_and_tokenizer(o));
  m->tokenizer = std::move(loaded.tokenizer);
  m->chat_template = std::move(loaded.chat_template);
  m->weights = loaded.weights;
  m->config = to_model_config(m->weights->config);
  TS_ASSIGN_OR_RETURN(RunnerWithCache rc, open_runner(m->weights, ro));
  m->runner = std::move(rc.runner);
  m->kv = std::move(rc.kv);
  return std::unique_ptr<Model>(new Model(std::move(m)));
}

Model::Impl::~Impl() {
  // The cache goes before the runner whose devices hold its pools, once no queued work reads them.
  if (runner) (void)runner->synchronize();
  kv.reset();
}

const ModelConfig& Model::config() const { return impl_->config; }
const DeviceInfo& Model::device() const { return impl_->runner->device_info(); }
int32_t Model::max_context() const { return impl_->runner->max_context(); }
const std::vector<std::string>& Model::placement_notes() const { return impl_->runner->placement_notes(); }
bool Model::has_tokenizer() const { return impl_->tokenizer != nullptr; }
int32_t Model::bos_id() const { return impl_->tokenizer ? impl_->tokenizer->bos_id() : 1; }
std::string Model::chat_template() const { return impl_->chat_template; }

Expected<std::vector<int32_t>> Model::encode(const std::string& text) const {
  return encode_prompt(impl_->tokenizer.get(), impl_->weights->source, text);
}

Expected<std::string> decode_ids(const Tokenizer* tok, const std::string& source, const std::vector<int32_t>& ids) {
  if (!tok) return invalid_argument(source + ": has no tokenizer; give one with -z");
  for (int32_t id : ids)
    if (id < 0 || id >= tok->vocab_size()) return out_of_range("token id " + std::to_string(id) + " is outside the vocabulary");
  return tok->decode(ids);
}

Expected<std::string> Model::decode(const std::vector<int32_t>& ids) const {
  return decode_ids(impl_->tokenizer.get(), impl_->weights->source, ids);
}

std::string Model::decode_piece(int32_t prev, int32_t id) const {
  return impl_->tokenizer ? impl_->tokenizer->decode_piece(prev, id) : std::string();
}

Expected<std::unique_ptr<Generation>> Model::start(const SamplerParams& sampler) {
  TS_TRY(validate(sampler, impl_->config.vocab_size));
  TS_ASSIGN_OR_RETURN(auto s, Session::create(*impl_->runner, *impl_->kv));
  auto g = std::unique_ptr<Generation::Impl>(new Generation::Impl{std::move(s), Sampler(sampler), sampler, {}, {}});
  return std::unique_ptr<Generation>(new Generation(std::move(g)));
}

Generation::Generation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generation::~Generation() = default;

Status Generation::feed(std::span<const int32_t> tokens) { return impl_->session->feed(tokens); }
std::span<const float> Generation::logits() const { return impl_->session->logits(); }
Status Generation::feed_all(std::span<const int32_t> tokens) { return impl_->session->feed(tokens, /*all_logits=*/true); }
std::span<const float> Generation::all_logits() const { return impl_->session->all_logits(); }
int32_t Generation::position() const { return impl_->session->position(); }
const GenerationMetrics& Generation::metrics() const { return impl_->metrics; }

int32_t Generation::sample() {
  const auto logits = impl_->session->logits();
  impl_->scratch.assign(logits.begin(), logits.end());
  return impl_->sampler.sample(impl_->scratch);
}

Expected<std::vector<int32_t>> Generation::generate(std::span<const int32_t> prompt, int32_t steps,
                                                    const std::function<bool(int32_t)>& on_token) {
  GenerateOptions o;
  o.steps = steps;
  o.sampler = impl_->params;
  TS_ASSIGN_OR_RETURN(GenerateResult r, tessera::generate(*impl_->session, prompt, o, on_token));
  impl_->metrics = r.metrics;
  return std::move(r.ids);
}

}  // namespace tessera
