// `tessera template` against the reference renderer, Python jinja2 as
// ../shared/tools/render_chat_template.py configures it: every shared
// template, our own feature templates and extra conversations, compared line
// by line with what Python prints for the same files.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <tessera/chat_template.h>

#include "support/cli.h"
#include "support/requirements.h"

namespace fs = std::filesystem;
using namespace tessera::testing;

namespace {

const Requirement& jinja2_oracle() {
  static const Requirement r = announce(
      {"the cases compared with Python jinja2",
       std::system("/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1") == 0
           ? ""
           : "/usr/bin/python3 cannot import jinja2 (install python3-jinja2; tools/quickstart.sh test does)"});
  return r;
}

const std::string kRenderer = std::string(TESSERA_SHARED_DIR) + "/tools/render_chat_template.py";
const std::string kShared = std::string(TESSERA_SHARED_DIR) + "/templates";
const std::string kOwn = std::string(TESSERA_SOURCE_DIR) + "/tests/data/chat_templates";

CliResult run_oracle(const std::string& tmpl, const std::string& cases) {
  static int counter = 0;
  const std::string base = temp_dir() + "/oracle" + std::to_string(counter++);
  const std::string cmd = "/usr/bin/python3 " + shell_quote(kRenderer) + " " + shell_quote(tmpl) + " " + shell_quote(cases) +
                          " >" + base + ".out 2>" + base + ".err </dev/null";
  const int rc = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  r.out = read_file(base + ".out");
  r.err = read_file(base + ".err");
  return r;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);) out.push_back(l);
  return out;
}

// Both print the same lines; where Python stops with an exception that is not
// a TemplateError, tessera stops there too, with a non-zero exit.
void require_same_as_jinja2(const std::string& tmpl, const std::string& cases) {
  INFO("template ", tmpl, " over ", cases);
  const CliResult want = run_oracle(tmpl, cases);
  const CliResult got = run_tessera({"template", tmpl, "--cases", cases});
  INFO("python stderr: ", want.err);
  INFO("tessera stderr: ", got.err);
  CHECK((want.exit_code == 0) == (got.exit_code == 0));
  const auto w = lines_of(want.out), g = lines_of(got.out);
  CHECK(w.size() == g.size());
  for (size_t i = 0; i < w.size() && i < g.size(); ++i) {
    INFO("case ", i);
    CHECK(g[i] == w[i]);
  }
  if (want.exit_code == 0) CHECK(got.out == want.out);
}

std::vector<std::string> templates_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".jinja") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace

TEST_CASE("template: every shared chat template renders as jinja2 does over conversations.json" * needs(jinja2_oracle())) {
  const auto all = templates_in(kShared);
  REQUIRE(!all.empty());
  for (const auto& t : all) require_same_as_jinja2(t, kShared + "/conversations.json");
}

TEST_CASE("template: every shared chat template renders as jinja2 does over our extra conversations" * needs(jinja2_oracle())) {
  for (const auto& t : templates_in(kShared)) require_same_as_jinja2(t, kOwn + "/conversations_extra.json");
}

// Tool calls (arguments as objects and as JSON text, parallel calls, tool
// results), content as a list of parts, reasoning_content, empty and
// consecutive same-role turns: conversations on which templates often take
// paths the plain ones do not, and where Python itself sometimes fails with
// a TypeError. Each case is its own file, so a failure hides no later case.
TEST_CASE("template: every shared chat template renders as jinja2 does over conversations with tools, parts and reasoning, case by case" *
          needs(jinja2_oracle())) {
  const auto cases = nlohmann::ordered_json::parse(read_file(kOwn + "/conversations_tools.json"));
  REQUIRE(cases.size() >= 10);
  std::vector<std::string> files;
  for (size_t i = 0; i < cases.size(); ++i)
    files.push_back(write_temp("tools_case" + std::to_string(i) + ".json", nlohmann::ordered_json::array({cases[i]}).dump()));
  for (const auto& t : templates_in(kShared))
    for (const auto& f : files) require_same_as_jinja2(t, f);
}

TEST_CASE("template: the feature templates (expressions, filters, tests, methods, loops, macros, whitespace, errors) render as jinja2 does" *
          needs(jinja2_oracle())) {
  const auto all = templates_in(kOwn);
  REQUIRE(all.size() >= 10);
  for (const auto& t : all) require_same_as_jinja2(t, kOwn + "/cases.json");
}

TEST_CASE("template: small whitespace and syntax corner cases render as jinja2 does" * needs(jinja2_oracle())) {
  const std::vector<std::string> sources = {
      "a\n{% if true %}\nb\n{% endif %}\nc\n",
      "  {% for i in range(2) %}\n  x{{ i }}\n  {% endfor %}\n",
      "{%- if true -%}  \n  y  \n  {%- endif -%}\n\n",
      "{{ 'a' }}\n{{ 'b' }}\n\n{# c #}\n  {# d #}  e\n",
      "x {%- raw -%}  {{ raw }}  {%- endraw -%} y",
      "{% set x = {'a': {'b': [1, 2, {'c': 'd'}]}} %}{{ x.a.b[2].c }}{{ x['a']['b'][0:1] }}{{ x.a.b | length }}",
      "{{ {'k': 1}}}{{ [1, 2][0]}}",
      "{% for m in messages %}{% if loop.first and m.role != 'system' %}[first]{% endif %}{{ m.role | upper }}\n{% endfor %}",
      "{{ messages | selectattr('role', 'in', ['user', 'system']) | map(attribute='content') | map('trim') | join('/') }}",
      "{% macro m(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, 3) }} {{ m(b=4, a=0) }}",
      "{% generation %}gen {{ 1 + 1 }}{% endgeneration %} after",
      "line1\r\nline2\r\n{% if true %}\r\nline3\r\n{% endif %}\r\n",
      "{{ 'x' if false }}|{{ ('a', 'b') | join }}|{{ 'é' * 3 }}|{{ '日本語'[1] }}|{{ '日本語' | reverse }}|{{ '日本語'[-2:] }}",
  };
  const std::string cases = kOwn + "/cases.json";
  for (size_t i = 0; i < sources.size(); ++i) require_same_as_jinja2(write_temp("corner" + std::to_string(i) + ".jinja", sources[i]), cases);
}

TEST_CASE("template: raise_exception prints jinja2's error line for that case") {
  const std::string t = write_temp("raise.jinja", "{% if messages | length == 0 %}{{ raise_exception('need a message') }}{% endif %}ok");
  const std::string c = write_temp("raise.json", R"([{"messages": []}, {"messages": [1]}])");
  const CliResult r = run_tessera({"template", t, "--cases", c});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "{\"error\": \"need a message\"}\n\"ok\"\n");
}

TEST_CASE("template: a syntax error is one line naming the file and the line, with a non-zero exit") {
  const std::string t = write_temp("bad.jinja", "ok\n{% if x %}\n{% endfor %}\n");
  const std::string c = write_temp("bad.json", "[{}]");
  const CliResult r = run_tessera({"template", t, "--cases", c});
  CHECK(r.exit_code != 0);
  CHECK(r.out.empty());
  REQUIRE(r.err_lines().size() == 1);
  CHECK(r.err_lines()[0].find(t) != std::string::npos);
  CHECK(r.err_lines()[0].find("line 3") != std::string::npos);
}

TEST_CASE("template: an unknown filter or test outside an if or conditional expression refuses the template when it is parsed, as jinja2's compiler does") {
  // Each refused by jinja2 3.1's compiler with TemplateAssertionError (checked by hand with python3-jinja2);
  // the soft-frame cases that wait until they run are in data/chat_templates/soft_frames.jinja.
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"{{ x | nosuch }}", "No filter named 'nosuch'."},
      {"a\n{% if a %}{% for m in b %}{{ m | nosuch }}{% endfor %}{% endif %}", "No filter named 'nosuch'."},
      {"{% if a %}{% set x %}{{ 1 | nosuch }}{% endset %}{% endif %}", "No filter named 'nosuch'."},
      {"{% if a %}{% macro q(x=1|nosuch) %}{% endmacro %}{% endif %}", "No filter named 'nosuch'."},
      {"{% for m in b %}{{ m is nosuch }}{% endfor %}", "No test named 'nosuch'."},
  };
  const std::string c = write_temp("names.json", R"([{"a": true, "b": [1]}])");
  for (size_t i = 0; i < refused.size(); ++i) {
    const std::string& src = refused[i].first;
    const std::string t = write_temp("names" + std::to_string(i) + ".jinja", src);
    const CliResult r = run_tessera({"template", t, "--cases", c});
    CAPTURE(src);
    CHECK(r.exit_code != 0);
    CHECK(r.out.empty());
    REQUIRE(r.err_lines().size() == 1);
    CHECK(r.err_lines()[0].find(refused[i].second) != std::string::npos);
    CHECK(r.err_lines()[0].find(i == 1 ? "line 2" : "line 1") != std::string::npos);
  }
}

TEST_CASE("template: a missing template or cases file that is not JSON is one line naming the file") {
  const std::string good = write_temp("good.jinja", "x");
  const std::string bad_json = write_temp("bad_cases.json", "[{");
  CliResult r = run_tessera({"template", temp_dir() + "/nope.jinja", "--cases", bad_json});
  CHECK(r.exit_code != 0);
  REQUIRE(r.err_lines().size() == 1);
  CHECK(r.err_lines()[0].find("nope.jinja") != std::string::npos);
  r = run_tessera({"template", good, "--cases", bad_json});
  CHECK(r.exit_code != 0);
  REQUIRE(r.err_lines().size() == 1);
  CHECK(r.err_lines()[0].find("bad_cases.json") != std::string::npos);
}

TEST_CASE("template: --case N prints that case's raw text") {
  const std::string t = write_temp("one.jinja", "{{ messages[0] }}\n\"q\"");
  const std::string c = write_temp("one.json", R"([{"messages": ["a"]}, {"messages": ["b\nc"]}])");
  const CliResult r = run_tessera({"template", t, "--cases", c, "--case", "1"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "b\nc\n\"q\"");
}

TEST_CASE("chat template API: errors are Status values, never crashes, on malformed and hostile templates") {
  const std::vector<std::string> bad = {
      "{% if x %}", "{{ x ", "{% for %}", "{% endfor %}", "{{ ) }}", "{% set %}", "{# open", "{{ 'unterminated }}",
      "{% macro m( %}", "{{ x | }}", "{{ x is }}", "{% raw %}never closed", "{{ [1, 2 }}", "{{ {'a' 1} }}",
      "{% if true %}{% else %}{% else %}{% endif %}", "{{ 1 +* 2 }}", "{% break %}", "{{ x.1.2.3 }}",
      std::string(5000, '(') + "1" + std::string(5000, ')'), std::string(3000, '[') + std::string(3000, ']'),
      "{% for i in range(10) %}" + std::string("{% if true %}") + "{% endif %}{% endfor %}",
      [] {  // a chain builds a tree as deep as it is long
        std::string s = "{{ 1";
        for (int i = 0; i < 20000; ++i) s += " + 1";
        return s + " }}";
      }(),
      [] {
        std::string s = "{{ 'a'";
        for (int i = 0; i < 20000; ++i) s += " | upper";
        return s + " }}";
      }(),
  };
  for (const auto& src : bad) {
    INFO("source: ", src.substr(0, 80));
    auto t = tessera::ChatTemplate::parse(src);
    if (t) {
      auto out = t->render("{}");
      (void)out;
    } else {
      CHECK(t.status().message().find("line ") == 0);
    }
  }
  auto rec = tessera::ChatTemplate::parse("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  REQUIRE(rec);
  auto out = rec->render("{}");
  CHECK(!out);
  CHECK(out.status().code() == tessera::StatusCode::unsupported);
  auto raise = tessera::ChatTemplate::parse("{{ raise_exception('stop here') }}");
  REQUIRE(raise);
  auto r = raise->render(R"({"messages": []})");
  REQUIRE(!r);
  CHECK(r.status().code() == tessera::StatusCode::invalid_argument);
  CHECK(r.status().message() == "stop here");
  CHECK(!raise->render("[1, 2]"));
  CHECK(!raise->render("not json"));
  auto big = tessera::ChatTemplate::parse("{% for i in range(100000) %}{{ i % 10 }}{% endfor %}");
  REQUIRE(big);
  auto big_out = big->render("{}");
  REQUIRE(big_out);
  CHECK(big_out->size() == 100000);
  auto copy = *big;
  CHECK(copy.render("{}").has_value());
}
