// The public ChatTemplate over engine/chat's Jinja interpreter.
#include "tessera/chat_template.h"

#include <new>

#include "engine/chat/jinja_eval.h"
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

}  // namespace tessera
