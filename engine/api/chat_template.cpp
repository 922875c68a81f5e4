// The public ChatTemplate over engine/chat's Jinja interpreter.
#include "tessera/chat_template.h"

#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>

#include "engine/chat/jinja_eval.h"
#include "engine/api/model_impl.h"
#include "engine/chat/jinja_parser.h"

namespace tessera {

struct ChatTemplate::Impl {
  std::shared_ptr<chat::Program> program;
};

ChatTemplate::ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
ChatTemplate::ChatTemplate(const ChatTemplate&) = default;
ChatTemplate& ChatTemplate::operator=(const ChatTemplate&) = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

Expected<ChatTemplate> ChatTemplate::parse(const std::string& source) {
  chat::ParseResult r = chat::parse_template(source);
  if (!r.program) return invalid_argument(r.error);
  auto impl = std::make_shared<Impl>();
  impl->program = std::move(r.program);
  return ChatTemplate(std::move(impl));
}

Expected<std::string> ChatTemplate::render(const std::string& variables_json) const {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(variables_json, nullptr, false);
  if (j.is_discarded()) return invalid_argument("chat template variables: not valid JSON");
  if (!j.is_object()) return invalid_argument("chat template variables: expected a JSON object");
  try {
    return chat::render_program(impl_->program, chat::from_json(j));
  } catch (const chat::JinjaError& e) {
    return e.template_error ? invalid_argument(e.what()) : unsupported(e.what());
  } catch (const std::bad_alloc&) {
    return resource_exhausted("chat template: out of memory while rendering");
  } catch (const std::exception& e) {
    return internal_error(std::string("chat template: ") + e.what());
  }
}

std::string chat_template_beside(const std::string& tokenizer_path) {
  const std::filesystem::path config = std::filesystem::path(tokenizer_path).parent_path() / "tokenizer_config.json";
  std::ifstream in(config, std::ios::binary);
  if (!in) {
    // Newer checkpoints keep it in chat_template.jinja instead.
    std::ifstream jinja(std::filesystem::path(tokenizer_path).parent_path() / "chat_template.jinja", std::ios::binary);
    if (!jinja) return {};
    std::ostringstream ss;
    ss << jinja.rdbuf();
    return ss.str();
  }
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("chat_template")) return {};
  const nlohmann::json& t = j["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (!t.is_array()) return {};
  // Newer tokenizers list named templates; the "default" one is the chat template.
  for (const auto& e : t)
    if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
      return e["template"].get<std::string>();
  return {};
}

}  // namespace tessera
