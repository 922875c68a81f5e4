// Engine and RequestHandle: the public face of the serving engine (engine/serving/).
#include "tessera/engine.h"

#include "engine/api/engine_impl.h"

namespace tessera {

RequestHandle::RequestHandle(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RequestHandle::~RequestHandle() = default;
uint64_t RequestHandle::id() const { return impl_->state->id(); }
bool RequestHandle::next(TokenOutput* out) { return impl_->state->next(out); }
const RequestResult& RequestHandle::wait() { return impl_->state->wait(); }
bool RequestHandle::done() const { return impl_->state->done(); }

const char* to_string(FinishReason r) {
  switch (r) {
    case FinishReason::none: return "none";
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::cancelled: return "cancelled";
    case FinishReason::error: return "error";
  }
  return "?";
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;


Expected<std::unique_ptr<Engine>> Engine::open(const EngineOptions& o) {
  auto m = std::make_unique<Impl>();
  TS_ASSIGN_OR_RETURN(m->model, load_model_and_tokenizer(o.model));
  m->config = to_model_config(m->model.weights->config);
  RunnerOptions ro = runner_options(o.model);
  ro.kv_cache_bytes = o.kv_cache_memory;
  ro.kv_memory_fraction = o.kv_memory_fraction;
  if (ro.kv_cache_bytes == 0 && ro.kv_memory_fraction == 0) ro.kv_memory_fraction = -1;  // by the device's kind
  EngineConfig ec;
  ec.scheduler.max_num_seqs = o.max_num_seqs;
  ec.scheduler.max_num_batched_tokens = o.max_num_batched_tokens;
  ec.scheduler.max_prefill_chunk = o.max_prefill_chunk;
  ec.prefix_caching = o.prefix_caching;
  ec.pipeline_batches = o.pipeline_batches;
  TS_ASSIGN_OR_RETURN(ec.scheduler.policy, parse_schedule_policy(o.schedule));
  ec.scheduler.slo_ttft_ms = o.slo_ttft_ms;
  ec.scheduler.slo_tpot_ms = o.slo_tpot_ms;
  TS_ASSIGN_OR_RETURN(ec.spec, spec_config_from(o.speculative));
  TS_ASSIGN_OR_RETURN(m->engine, ServingEngine::create(m->model.weights, m->model.tokenizer.get(), ro, ec));
  return std::unique_ptr<Engine>(new Engine(std::move(m)));
}

Expected<std::shared_ptr<RequestHandle>> wrap_request(Expected<std::shared_ptr<RequestState>> s) {
  if (!s) return s.status();
  return std::make_shared<RequestHandle>(std::make_unique<RequestHandle::Impl>(RequestHandle::Impl{std::move(*s)}));
}

Expected<std::shared_ptr<RequestHandle>> Engine::submit(const Request& request, Delivery delivery) {
  return wrap_request(impl_->engine->submit(request, delivery == stream ? tessera::Delivery::stream : tessera::Delivery::result));
}

Expected<std::shared_ptr<RequestHandle>> Engine::submit(const Request& request, std::function<void(const TokenOutput&)> on_token) {
  return wrap_request(impl_->engine->submit(request, tessera::Delivery::callback, std::move(on_token)));
}

void Engine::cancel(RequestHandle& request) { impl_->engine->cancel(*request.impl_->state); }
EngineMetrics Engine::metrics() const { return impl_->engine->metrics(); }
std::string Engine::memory_summary() const { return impl_->engine->memory_summary(); }
const ModelConfig& Engine::config() const { return impl_->config; }
const DeviceInfo& Engine::device() const { return impl_->engine->runner().device_info(); }
int32_t Engine::max_context() const { return impl_->engine->max_context(); }
const std::vector<std::string>& Engine::placement_notes() const { return impl_->engine->runner().placement_notes(); }
bool Engine::has_tokenizer() const { return impl_->model.tokenizer != nullptr; }

Expected<std::vector<int32_t>> Engine::encode(const std::string& text) const {
  return encode_prompt(impl_->model.tokenizer.get(), impl_->model.weights->source, text);
}

std::string Engine::chat_template() const { return impl_->model.chat_template; }

std::string Engine::token_text(int32_t id) const {
  const Tokenizer* tok = impl_->model.tokenizer.get();
  if (!tok || id < 0 || id >= tok->vocab_size()) return {};
  return tok->token_bytes(id, /*special=*/true);
}

Expected<std::vector<int32_t>> Engine::encode_chat(const std::string& rendered) const {
  const Tokenizer* tok = impl_->model.tokenizer.get();
  if (!tok) return invalid_argument(impl_->model.weights->source + ": has no tokenizer; give one with -z");
  EncodeOptions eo = tok->default_options();
  eo.parse_special = true;
  const std::string bos = token_text(tok->bos_id());
  if (eo.add_bos && !bos.empty() && rendered.rfind(bos, 0) == 0) eo.add_bos = false;
  std::vector<int32_t> ids = tok->encode(rendered, eo);
  if (ids.empty()) return invalid_argument("the chat template rendered an empty prompt");
  return ids;
}

Expected<std::string> Engine::decode(const std::vector<int32_t>& ids) const {
  return decode_ids(impl_->model.tokenizer.get(), impl_->model.weights->source, ids);
}

int32_t Engine::bos_id() const {
  const auto& t = impl_->model.tokenizer;
  return t ? t->bos_id() : 1;
}

int32_t Engine::eos_id() const {
  const auto& t = impl_->model.tokenizer;
  return t ? t->eos_id() : 2;
}

}  // namespace tessera
