// Model::chat_template(): the template a model file or its tokenizer's
// directory carries, as the server renders it.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "engine/api/model_impl.h"
#include "engine/formats/gguf.h"
#include "engine/formats/gguf_writer.h"
#include "tessera/tessera.h"

namespace fs = std::filesystem;

namespace {

struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string t = (fs::temp_directory_path() / "tessera-chat-XXXXXX").string();
    path = mkdtemp(t.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

}  // namespace

TEST_CASE("model: chat_template() is the GGUF's tokenizer.chat_template, whole, and empty when the file has none") {
  const std::string base = std::string(TESSERA_SHARED_DIR) + "/models/zoo/llama-f32.gguf";
  ScratchDir dir;
  const std::string tmpl = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}" + std::string(600, 'x');
  auto f = tessera::GgufFile::open(base);
  REQUIRE(f.has_value());
  tessera::GgufWriter w = tessera::gguf_writer_from(*f);
  w.set_string("tokenizer.chat_template", tmpl);
  const std::string with = (dir.path / "with.gguf").string();
  REQUIRE(w.write(with).is_ok());

  tessera::ModelOptions o;
  o.path = with;
  auto m = tessera::Model::open(o);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  CHECK((*m)->chat_template() == tmpl);

  o.path = base;
  auto plain = tessera::Model::open(o);
  REQUIRE(plain.has_value());
  CHECK((*plain)->chat_template().empty());
}

TEST_CASE("model: a tokenizer.json's chat template comes from the tokenizer_config.json (or chat_template.jinja) beside it") {
  ScratchDir dir;
  const std::string tok = (dir.path / "tokenizer.json").string();
  CHECK(tessera::chat_template_beside(tok).empty());
  write_text(dir.path / "chat_template.jinja", "from jinja file");
  CHECK(tessera::chat_template_beside(tok) == "from jinja file");
  write_text(dir.path / "tokenizer_config.json", R"({"bos_token": "<s>", "chat_template": "{{ bos_token }}\n{{ messages }}"})");
  CHECK(tessera::chat_template_beside(tok) == "{{ bos_token }}\n{{ messages }}");
  write_text(dir.path / "tokenizer_config.json",
             R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  CHECK(tessera::chat_template_beside(tok) == "D");
  write_text(dir.path / "tokenizer_config.json", R"({"bos_token": "<s>"})");
  CHECK(tessera::chat_template_beside(tok).empty());
  write_text(dir.path / "tokenizer_config.json", "{not json");
  CHECK(tessera::chat_template_beside(tok).empty());
}
