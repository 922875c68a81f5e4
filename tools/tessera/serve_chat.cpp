#include "tools/tessera/serve_chat.h"

namespace tessera::cli {

// tessera::ChatTemplate (include/tessera/chat_template.h) is being written
// alongside; once merged this becomes ChatTemplate::parse(source) then
// render(variables.dump()).
Expected<std::string> render_chat_prompt(const std::string& template_source, const nlohmann::ordered_json& variables) {
  (void)template_source;
  (void)variables;
  return unsupported("chat templates are not built yet");
}

}  // namespace tessera::cli
