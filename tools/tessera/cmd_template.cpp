// tessera template: renders a chat template over a list of cases, printing
// exactly what tools/render_chat_template.py (Python jinja2) prints for them.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <tessera/chat_template.h>

#include "tools/tessera/cli_common.h"

namespace tessera::cli {

namespace {

struct TemplateFlags {
  std::string file, cases;
  int case_index = -1;
} f;

Expected<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A JSON string as Python's json.dumps(ensure_ascii=False) writes it.
std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int template_main() {
  auto source = read_text(f.file);
  if (!source) return fail(source.status());
  auto tmpl = ChatTemplate::parse(*source);
  if (!tmpl) return fail(tmpl.status().with_context(f.file));
  auto cases_text = read_text(f.cases);
  if (!cases_text) return fail(cases_text.status());
  const auto cases = nlohmann::ordered_json::parse(*cases_text, nullptr, false);
  if (cases.is_discarded()) return fail(invalid_argument(f.cases + ": not valid JSON"));
  if (!cases.is_array()) return fail(invalid_argument(f.cases + ": expected a JSON list of cases"));
  for (size_t i = 0; i < cases.size(); ++i) {
    if (f.case_index >= 0 && static_cast<size_t>(f.case_index) != i) continue;
    if (!cases[i].is_object())
      return fail(invalid_argument(f.cases + ": case " + std::to_string(i) + ": expected a JSON object"));
    auto text = tmpl->render(cases[i].dump());
    std::string out;
    if (text) {
      out = f.case_index >= 0 ? *text : json_string(*text);
    } else if (text.status().code() == StatusCode::invalid_argument) {
      out = "{\"error\": " + json_string(text.status().message()) + "}";
    } else {
      // Python's render would stop here with an exception that is not a TemplateError.
      std::fflush(stdout);
      return fail(text.status().with_context(f.file + ": case " + std::to_string(i)));
    }
    if (f.case_index < 0) out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  return 0;
}

}  // namespace

Subcommand add_template(CLI::App& app) {
  CLI::App* s = app.add_subcommand("template", "render a chat template (Jinja) over cases, as Python jinja2 would");
  s->add_option("file", f.file, "the template (.jinja)")->required();
  s->add_option("--cases", f.cases, "JSON list of cases, each the template's variables (messages, bos_token, ...)")->required();
  s->add_option("--case", f.case_index, "print only case N, as raw text")->check(CLI::NonNegativeNumber);
  return {s, template_main};
}

}  // namespace tessera::cli
