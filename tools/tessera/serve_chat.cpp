#include "tools/tessera/serve_chat.h"

#include <mutex>
#include <optional>

#include <tessera/chat_template.h>

namespace tessera::cli {

namespace {

// The last template parsed: a server renders one template for every request,
// so it is parsed once. ChatTemplate is immutable, so renders run unlocked.
Expected<ChatTemplate> parsed(const std::string& source) {
  static std::mutex mu;
  static std::string cached_source;
  static std::optional<ChatTemplate> cached;
  std::lock_guard lock(mu);
  if (!cached || cached_source != source) {
    auto t = ChatTemplate::parse(source);
    if (!t) return t.status();
    cached = std::move(*t);
    cached_source = source;
  }
  return *cached;
}

}  // namespace

Expected<std::string> render_chat_prompt(const std::string& template_source, const nlohmann::ordered_json& variables) {
  auto t = parsed(template_source);
  if (!t) return invalid_argument("the chat template does not parse: " + t.status().message());
  return t->render(variables.dump());
}

}  // namespace tessera::cli
