#include "engine/chat/jinja_lexer.h"

#include <cctype>
#include <cstdio>
#include <cstring>

#include "engine/tokenizer/unicode.h"

namespace tessera::chat {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int count_lines(const std::string& s, size_t from, size_t to) {
  int n = 0;
  for (size_t k = from; k < to && k < s.size(); ++k) n += s[k] == '\n';
  return n;
}


class Lexer {
 public:
  explicit Lexer(const std::string& src) : s_(src) {}

  LexResult run() {
    while (pos_ < s_.size() && error_.empty()) root();
    out_.tokens.push_back({Token::T::eof, "", line_});
    out_.error = error_;
    return std::move(out_);
  }

 private:
  void fail(const std::string& what) {
    if (error_.empty()) error_ = "line " + std::to_string(line_) + ": " + what;
  }

  void emit_text(std::string text) {
    const int start_line = line_;
    line_ += 0;
    if (!text.empty()) out_.tokens.push_back({Token::T::text, std::move(text), start_line});
  }

  // The text before a tag, with `-` stripping all whitespace and lstrip_blocks
  // stripping a line's indentation before block and comment tags.
  std::string strip_before(std::string text, char sign, bool is_variable) {
    if (sign == '-') {
      size_t e = text.size();
      while (e > 0 && is_space(text[e - 1])) --e;
      text.resize(e);
    } else if (sign != '+' && !is_variable) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if (l_pos > 0 || line_starting_) {
        bool all_ws = l_pos < text.size();
        for (size_t k = l_pos; k < text.size(); ++k) all_ws = all_ws && is_space(text[k]);
        if (all_ws) text.resize(l_pos);
      }
    }
    return text;
  }

  // After a block or comment end: `-` eats all whitespace, `+` nothing, plain
  // (trim_blocks) one newline.
  void after_end(char sign, bool block_like) {
    if (sign == '-') {
      while (pos_ < s_.size() && is_space(s_[pos_])) { line_ += s_[pos_] == '\n'; ++pos_; }
    } else if (sign != '+' && block_like && pos_ < s_.size() && s_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
    line_starting_ = pos_ > 0 && s_[pos_ - 1] == '\n';
  }

  void root() {
    size_t start = std::string::npos;
    for (size_t p = s_.find('{', pos_); p != std::string::npos; p = s_.find('{', p + 1)) {
      if (p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')) { start = p; break; }
    }
    if (start == std::string::npos) {
      emit_text(s_.substr(pos_));
      line_ += count_lines(s_, pos_, s_.size());
      pos_ = s_.size();
      return;
    }
    const char kind = s_[start + 1];
    const char sign = start + 2 < s_.size() && (s_[start + 2] == '-' || s_[start + 2] == '+') ? s_[start + 2] : 0;
    std::string text = strip_before(s_.substr(pos_, start - pos_), sign, kind == '{');
    const int text_line = line_;
    line_ += count_lines(s_, pos_, start);
    if (!text.empty()) out_.tokens.push_back({Token::T::text, std::move(text), text_line});
    pos_ = start + 2 + (sign ? 1 : 0);
    line_starting_ = false;
    if (kind == '#') return comment();
    if (kind == '%' && raw_begin()) return;
    out_.tokens.push_back({kind == '{' ? Token::T::var_begin : Token::T::block_begin, "", line_});
    tag(kind == '{');
  }

  void comment() {
    const size_t end = s_.find("#}", pos_);
    if (end == std::string::npos) {
      fail("missing end of comment tag");
      pos_ = s_.size();
      return;
    }
    const char sign = end > pos_ && (s_[end - 1] == '-' || s_[end - 1] == '+') ? s_[end - 1] : 0;
    line_ += count_lines(s_, pos_, end);
    pos_ = end + 2;
    after_end(sign, true);
  }

  // `{% raw %}...{% endraw %}`: the body is text, untouched.
  bool raw_begin() {
    size_t p = pos_;
    while (p < s_.size() && is_space(s_[p])) ++p;
    if (s_.compare(p, 3, "raw") != 0 || (p + 3 < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[p + 3])) || s_[p + 3] == '_')))
      return false;
    p += 3;
    while (p < s_.size() && is_space(s_[p])) ++p;
    bool strip_after = false;
    if (s_.compare(p, 3, "-%}") == 0) { strip_after = true; p += 3; }
    else if (s_.compare(p, 2, "%}") == 0) p += 2;
    else return false;
    line_ += count_lines(s_, pos_, p);
    pos_ = p;
    if (strip_after) after_end('-', true);
    // Find `{%[-+]? endraw [-+]?%}`.
    for (size_t q = s_.find("{%", pos_); q != std::string::npos; q = s_.find("{%", q + 1)) {
      size_t r = q + 2;
      const char sign = r < s_.size() && (s_[r] == '-' || s_[r] == '+') ? s_[r] : 0;
      if (sign) ++r;
      while (r < s_.size() && is_space(s_[r])) ++r;
      if (s_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < s_.size() && is_space(s_[r])) ++r;
      char end_sign = 0;
      if (r < s_.size() && (s_[r] == '-' || s_[r] == '+')) end_sign = s_[r++];
      if (s_.compare(r, 2, "%}") != 0) continue;
      std::string body = strip_before(s_.substr(pos_, q - pos_), sign, false);
      const int body_line = line_;
      line_ += count_lines(s_, pos_, r + 2);
      if (!body.empty()) out_.tokens.push_back({Token::T::text, std::move(body), body_line});
      pos_ = r + 2;
      after_end(end_sign, true);
      return true;
    }
    fail("missing end of raw directive");
    pos_ = s_.size();
    return true;
  }

  void tag(bool is_variable) {
    std::vector<char> balance;
    while (true) {
      if (pos_ >= s_.size()) {
        fail(is_variable ? "unexpected end of template, expected end of print statement ('}}')"
                         : "unexpected end of template, expected end of statement ('%}')");
        return;
      }
      const char c = s_[pos_];
      if (balance.empty()) {
        const char* close = is_variable ? "}}" : "%}";
        if ((c == '-' || c == '+') && s_.compare(pos_ + 1, 2, close) == 0 && (c == '-' || !is_variable)) {
          out_.tokens.push_back({is_variable ? Token::T::var_end : Token::T::block_end, "", line_});
          pos_ += 3;
          after_end(c, !is_variable);
          return;
        }
        if (s_.compare(pos_, 2, close) == 0) {
          out_.tokens.push_back({is_variable ? Token::T::var_end : Token::T::block_end, "", line_});
          pos_ += 2;
          after_end(0, !is_variable);
          return;
        }
      }
      if (is_space(c)) {
        line_ += c == '\n';
        ++pos_;
        continue;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = pos_;
        while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
        out_.tokens.push_back({Token::T::name, s_.substr(pos_, e - pos_), line_});
        pos_ = e;
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c))) {
        number();
        continue;
      }
      if (c == '\'' || c == '"') {
        if (!string_literal(c)) return;
        continue;
      }
      static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
      std::string op;
      for (const char* t : two)
        if (s_.compare(pos_, 2, t) == 0) op = t;
      if (op.empty() && std::strchr("+-/*%~[](){}<>=.:|,;", c)) op = std::string(1, c);
      if (op.empty()) {
        fail(std::string("unexpected char '") + c + "'");
        pos_ = s_.size();
        return;
      }
      if (op == "(" || op == "[" || op == "{") balance.push_back(op[0]);
      if (op == ")" || op == "]" || op == "}") {
        const char want = op == ")" ? '(' : op == "]" ? '[' : '{';
        if (balance.empty() || balance.back() != want) {
          fail("unexpected '" + op + "'");
          pos_ = s_.size();
          return;
        }
        balance.pop_back();
      }
      out_.tokens.push_back({Token::T::op, op, line_});
      pos_ += op.size();
    }
  }

  void number() {
    size_t e = pos_;
    auto digits = [&] {
      while (e < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
    };
    digits();
    bool is_float = false;
    const bool after_dot = pos_ > 0 && s_[pos_ - 1] == '.';
    if (!after_dot && e + 1 < s_.size() && s_[e] == '.' && std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
      ++e;
      digits();
      is_float = true;
    }
    if (!after_dot && e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t f = e + 1;
      if (f < s_.size() && (s_[f] == '+' || s_[f] == '-')) ++f;
      if (f < s_.size() && std::isdigit(static_cast<unsigned char>(s_[f]))) {
        e = f;
        digits();
        is_float = true;
      }
    }
    std::string text;
    for (size_t k = pos_; k < e; ++k)
      if (s_[k] != '_') text += s_[k];
    out_.tokens.push_back({is_float ? Token::T::floating : Token::T::integer, text, line_});
    pos_ = e;
  }

  bool string_literal(char quote) {
    std::string value;
    size_t p = pos_ + 1;
    const int start_line = line_;
    while (p < s_.size() && s_[p] != quote) {
      const char c = s_[p];
      if (c == '\n') ++line_;
      if (c != '\\' || p + 1 >= s_.size()) {
        value += c;
        ++p;
        continue;
      }
      const char n = s_[p + 1];
      p += 2;
      switch (n) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case 'a': value += '\a'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': ++line_; break;
        case 'x': case 'u': case 'U': {
          const size_t width = n == 'x' ? 2 : n == 'u' ? 4 : 8;
          uint32_t cp = 0;
          bool ok = p + width <= s_.size();
          for (size_t k = 0; ok && k < width; ++k) {
            const char h = s_[p + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) ok = false;
            else cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          if (!ok || cp > 0x10ffff) {
            fail("invalid escape in a string literal");
            pos_ = s_.size();
            return false;
          }
          unicode::append_utf8(value, cp);
          p += width;
          break;
        }
        default: value += '\\'; value += n;
      }
    }
    if (p >= s_.size()) {
      line_ = start_line;
      fail("unexpected char '" + std::string(1, quote) + "'");
      pos_ = s_.size();
      return false;
    }
    out_.tokens.push_back({Token::T::string, std::move(value), start_line});
    pos_ = p + 1;
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::string error_;
  LexResult out_;
};

}  // namespace

LexResult lex_template(const std::string& source) { return Lexer(source).run(); }

}  // namespace tessera::chat
