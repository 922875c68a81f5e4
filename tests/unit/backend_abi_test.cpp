// The plugin boundary (core/hal/abi.h): the recorded headers hash is the hash
// of the headers a plugin is compiled against, so a change to the HAL or the
// op set cannot land without a new ABI version; and a registration that does
// not match this build is refused in one line naming both sides.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/hal/abi_check.h"

using namespace tessera;

namespace {

// The text of a header with its comments removed and its whitespace reduced
// to what separates two identifiers, so that comments and formatting do not
// change the hash but every token does. String and character literals are
// kept whole (a "//" inside one is not a comment).
std::string normalize_source(const std::string& s) {
  std::string out;
  bool pending_space = false;
  auto ident = [](char c) { return std::isalnum((unsigned char)c) || c == '_'; };
  auto emit = [&](char c) {
    if (pending_space && !out.empty() && ident(out.back()) && ident(c)) out += ' ';
    pending_space = false;
    out += c;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      pending_space = true;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 1;
      pending_space = true;
    } else if (c == '"' || c == '\'') {
      emit(c);
      for (++i; i < s.size() && s[i] != c; ++i) {
        out += s[i];
        if (s[i] == '\\' && i + 1 < s.size()) out += s[++i];
      }
      if (i < s.size()) out += c;
    } else if (std::isspace((unsigned char)c)) {
      pending_space = true;
    } else {
      emit(c);
    }
  }
  return out;
}

std::string read_source(const std::string& rel) {
  // The public headers (<tessera/...>, quoted too) live under include/.
  const std::string path = rel.rfind("tessera/", 0) == 0 ? "include/" + rel : rel;
  std::ifstream f(std::string(TESSERA_SOURCE_DIR) + "/" + path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "cannot read " << rel);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Every project header core/hal/backend.h includes, directly or not: what a
// plugin is compiled against. abi_version.h holds the hash and is left out.
std::set<std::string> boundary_headers() {
  static const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::set<std::string> seen;
  std::vector<std::string> todo = {"core/hal/backend.h"};
  while (!todo.empty()) {
    const std::string h = todo.back();
    todo.pop_back();
    if (h == "core/hal/abi_version.h" || !seen.insert(h).second) continue;
    std::istringstream lines(read_source(h));
    for (std::string l; std::getline(lines, l);) {
      std::smatch m;
      if (std::regex_search(l, m, include_line)) todo.push_back(m[1]);
    }
  }
  return seen;
}

// FNV-1a, 64 bits, over "path\n<normalized text>\n" of each header in path order.
uint64_t boundary_headers_hash(const std::set<std::string>& headers) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& path : headers) {
    for (char c : path + "\n" + normalize_source(read_source(path)) + "\n") {
      h ^= (unsigned char)c;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

// Stand-ins for what a plugin's tessera_backend_register returns.
Backend* create_nothing() { return nullptr; }
BackendRegistration g_reg;
const BackendRegistration* answer_always(uint32_t) { return &g_reg; }

struct AbiOneRegistration {
  uint32_t abi_version;
  const char* name;
  Backend* (*create)();
};
const AbiOneRegistration g_abi_one{1, "old", create_nothing};
const BackendRegistration* answer_like_abi_one(uint32_t v) {
  return v == 1 ? reinterpret_cast<const BackendRegistration*>(&g_abi_one) : nullptr;
}

}  // namespace

TEST_CASE("normalizing a header drops comments and formatting, and keeps every token and literal") {
  CHECK(normalize_source("int  a; // note\n/* block\n comment */ unsigned\n\tint b = 1 + 2;") == "int a;unsigned int b=1+2;");
  CHECK(normalize_source("const char* s = \"a // b /* c */\";") == "const char*s=\"a // b /* c */\";");
  CHECK(normalize_source("char q = '\"'; int x;") == "char q='\"';int x;");
  CHECK(normalize_source("a\n\n  b") != normalize_source("ab"));
}

TEST_CASE("the recorded headers hash is the hash of the headers a backend plugin is compiled against") {
  const auto headers = boundary_headers();
  // What the plugin boundary is made of today: the HAL, the op set and the tensor types.
  for (const char* h : {"core/hal/backend.h", "core/hal/abi.h", "core/hal/device.h", "core/hal/plan.h", "core/ops.h",
                        "core/tensor.h", "core/status.h"})
    CHECK_MESSAGE(headers.count(h) == 1, h << " is no longer part of the boundary");
  const uint64_t hash = boundary_headers_hash(headers);
  std::string list;
  for (const auto& h : headers) list += " " + h;
  CAPTURE(list);
  if (hash != kBackendAbiHeadersHash) {
    FAIL("core/hal headers changed: bump kBackendAbiVersion in core/hal/abi_version.h and set kBackendAbiHeadersHash to 0x"
         << headers_hash_hex(hash) << "ull");
  }
}

TEST_CASE("a registration from this build is accepted") {
  g_reg = make_backend_registration("test", create_nothing);
  CHECK(check_registration(answer_always) == "");
}

TEST_CASE("a registration for another ABI version or other headers is refused in one line naming both sides") {
  const std::string ours = "this tessera speaks ABI " + std::to_string(kBackendAbiVersion) + " (headers " +
                           headers_hash_hex(kBackendAbiHeadersHash) + "); rebuild the plugin";
  g_reg = make_backend_registration("test", create_nothing);
  g_reg.abi_version = kBackendAbiVersion + 1;
  CHECK(check_registration(answer_always) ==
        "built for backend ABI " + std::to_string(kBackendAbiVersion + 1) + " (headers " + headers_hash_hex(kBackendAbiHeadersHash) + "), " + ours);
  g_reg = make_backend_registration("test", create_nothing);
  g_reg.headers_hash = 0x0123456789abcdefull;
  CHECK(check_registration(answer_always) == "built for backend ABI " + std::to_string(kBackendAbiVersion) + " (headers 0123456789abcdef), " + ours);
  CHECK(check_registration(answer_like_abi_one) == "built for backend ABI 1 (headers not recorded), " + ours);
}

TEST_CASE("a registration built with another compiler or standard library layout names the fields that differ") {
  g_reg = make_backend_registration("test", create_nothing);
  g_reg.build.stdlib_abi ^= 1;
  g_reg.build.sizeof_string = 8;
  const std::string m = check_registration(answer_always);
  CHECK(m.find("built with standard library ABI " + std::to_string(g_reg.build.stdlib_abi) + ", sizeof(std::string) 8; this tessera with") == 0);
  CHECK(m.find("sizeof(std::string) " + std::to_string(sizeof(std::string)) + ";") != std::string::npos);
  CHECK(m.find("rebuild the plugin with the same compiler and flags") != std::string::npos);
  CHECK(m.find('\n') == std::string::npos);
}

TEST_CASE("a registration without the magic, a name or a create function is refused") {
  g_reg = make_backend_registration("test", create_nothing);
  g_reg.magic = 7;
  CHECK(check_registration(answer_always).find("not a tessera backend registration") != std::string::npos);
  g_reg = make_backend_registration("", create_nothing);
  CHECK(check_registration(answer_always).find("no name or no create function") != std::string::npos);
  g_reg = make_backend_registration("test", nullptr);
  CHECK(check_registration(answer_always).find("no name or no create function") != std::string::npos);
  CHECK(check_registration([](uint32_t) -> const BackendRegistration* { return nullptr; }) ==
        "tessera_backend_register returned no registration; rebuild the plugin");
}
