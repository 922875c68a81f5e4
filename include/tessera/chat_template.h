#pragma once
// Chat templates: the Jinja programs Hugging Face models ship to turn a list
// of messages into prompt text. Rendering matches Python jinja2 as
// transformers' apply_chat_template configures it (a sandboxed, immutable
// environment with trim_blocks, lstrip_blocks, loop controls, a `generation`
// block, raise_exception and strftime_now); docs/chat_templates.md says what
// is supported and how it is tested.
#include <memory>
#include <string>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

class TESSERA_API ChatTemplate {
 public:
  // A syntax error is invalid_argument with a message naming the line:
  // "line 3: Encountered unknown tag 'foo'."
  static Expected<ChatTemplate> parse(const std::string& source);

  // variables_json: a JSON object (messages, add_generation_prompt, bos_token,
  // eos_token, tools, ...), its key order kept. Errors:
  //  - invalid_argument: the template raised what jinja2 calls a TemplateError
  //    (raise_exception(msg), an undefined attribute, a sandbox refusal); the
  //    message is jinja2's str(error), for raise_exception the msg itself;
  //    variables_json that is not a JSON object is also invalid_argument;
  //  - unsupported: the template failed the way Python would with another
  //    exception (a TypeError, division by zero, recursion too deep).
  Expected<std::string> render(const std::string& variables_json) const;

  ChatTemplate(const ChatTemplate&);
  ChatTemplate& operator=(const ChatTemplate&);
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  struct Impl;

 private:
  explicit ChatTemplate(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;  // immutable once parsed, so copies share it
};

}  // namespace tessera
