// Attribute and item access, the Python methods of str/dict/list that a
// sandboxed template may call, and the globals.
#include <cctype>
#include <ctime>
#include <memory>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_markup.h"
#include "engine/tokenizer/unicode.h"

namespace tessera::chat {

bool is_unicode_space(const std::string& code_point);

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Python's default str.split(): runs of (Unicode) whitespace, no empty pieces.
std::vector<std::string> split_whitespace(const std::string& s, int64_t maxsplit) {
  const std::vector<std::string> cps = code_points(s);
  std::vector<std::string> out;
  size_t i = 0;
  const size_t n = cps.size();
  while (true) {
    while (i < n && is_unicode_space(cps[i])) ++i;
    if (i >= n) break;
    std::string piece;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      size_t e = n;
      while (e > i && is_unicode_space(cps[e - 1])) --e;
      for (size_t k = i; k < e; ++k) piece += cps[k];
      out.push_back(std::move(piece));
      break;
    }
    while (i < n && !is_unicode_space(cps[i])) piece += cps[i++];
    out.push_back(std::move(piece));
  }
  return out;
}

std::vector<std::string> split_sep(const std::string& s, const std::string& sep, int64_t maxsplit) {
  if (sep.empty()) throw_type_error("empty separator");
  std::vector<std::string> out;
  size_t i = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    const size_t j = s.find(sep, i);
    if (j == std::string::npos) break;
    out.push_back(s.substr(i, j - i));
    i = j + sep.size();
  }
  out.push_back(s.substr(i));
  return out;
}

std::vector<std::string> rsplit_sep(const std::string& s, const std::string& sep, int64_t maxsplit) {
  if (maxsplit < 0) return split_sep(s, sep, -1);
  if (sep.empty()) throw_type_error("empty separator");
  std::vector<std::string> rev;
  size_t end = s.size();
  while (static_cast<int64_t>(rev.size()) < maxsplit) {
    if (end < sep.size()) break;
    const size_t j = s.rfind(sep, end - sep.size());
    if (j == std::string::npos) break;
    rev.push_back(s.substr(j + sep.size(), end - j - sep.size()));
    end = j;
    if (j == 0 && sep.size() > 0) { end = 0; break; }
  }
  rev.push_back(s.substr(0, end));
  return {rev.rbegin(), rev.rend()};
}

Value string_list(const std::vector<std::string>& parts) {
  List out;
  for (const auto& p : parts) out.push_back(Value::string(p));
  return Value::make_list(std::move(out));
}

int64_t int_arg(const Value& v, int64_t fallback) {
  if (v.kind == Kind::integer) return v.i;
  if (v.kind == Kind::boolean) return v.b;
  if (v.is_undefined() || v.is_none()) return fallback;
  throw_type_error("'" + type_name(v) + "' object cannot be interpreted as an integer");
}

std::string str_arg(const Value& v, const char* what) {
  if (!v.is_string()) throw_type_error(std::string(what) + " arg must be None or str");
  return v.s;
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) throw_type_error(std::string(prefix ? "startswith" : "endswith") + " first arg must be str or a tuple of str, not " + type_name(a));
    if (a.s.size() > s.size()) return false;
    return prefix ? s.compare(0, a.s.size(), a.s) == 0 : s.compare(s.size() - a.s.size(), a.s.size(), a.s) == 0;
  };
  if (affix.is_list() && affix.tuple) {
    for (const auto& a : *affix.list)
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

// Python's str.format with positional and named fields; format specs are not supported.
std::string py_format(const std::string& fmt, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') { out += '{'; ++i; continue; }
    if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') { out += '}'; ++i; continue; }
    if (c != '{') { out += c; continue; }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw_type_error("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    bool repr = false;
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      repr = field.substr(bang + 1) == "r";
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) field.resize(field.find(':'));
    Value v;
    if (field.empty()) v = args.get(auto_index++, "\x01");
    else if (std::isdigit(static_cast<unsigned char>(field[0]))) v = args.get(std::stoul(field), "\x01");
    else v = args.get(static_cast<size_t>(-1), field);
    if (v.is_undefined() && !args.has(field.empty() ? auto_index - 1 : static_cast<size_t>(-1), field))
      throw_type_error("Replacement index out of range for positional args tuple");
    out += repr ? to_repr(v) : to_str(v);
    i = close;
  }
  return out;
}

Value method(Function f) { return Value::function(std::move(f)); }

Value unsafe(const std::string& attr, const Value& obj) {
  Value u = Value::undefined("access to attribute '" + attr + "' of '" + type_name(obj) + "' object is unsafe.");
  u.unsafe = true;
  return u;
}

bool is_str_space(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_ws(c)) return false;
  return true;
}

Value string_method(const std::string& s, const std::string& name) {
  auto pred = [&](auto test) {
    return method([s, test](CallArgs&) {
      if (s.empty()) return Value::boolean(false);
      for (unsigned char c : s)
        if (!test(c)) return Value::boolean(false);
      return Value::boolean(true);
    });
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool l = name != "rstrip", r = name != "lstrip";
    return method([s, l, r](CallArgs& a) { return Value::string(py_strip(s, a.get(0, "chars"), l, r)); });
  }
  if (name == "split" || name == "rsplit") {
    const bool right = name == "rsplit";
    return method([s, right](CallArgs& a) {
      const Value sep = a.get(0, "sep");
      const int64_t maxsplit = int_arg(a.get(1, "maxsplit"), -1);
      if (sep.is_undefined() || sep.is_none()) {
        if (!right || maxsplit < 0) return string_list(split_whitespace(s, maxsplit));
      }
      if (sep.is_undefined() || sep.is_none()) return string_list(split_whitespace(s, -1));
      return string_list(right ? rsplit_sep(s, str_arg(sep, "sep"), maxsplit) : split_sep(s, str_arg(sep, "sep"), maxsplit));
    });
  }
  if (name == "startswith" || name == "endswith") {
    const bool prefix = name == "startswith";
    return method([s, prefix](CallArgs& a) { return Value::boolean(affix_match(s, a.get(0, "prefix"), prefix)); });
  }
  if (name == "upper") return method([s](CallArgs&) { return Value::string(py_upper(s)); });
  if (name == "lower") return method([s](CallArgs&) { return Value::string(py_lower(s)); });
  if (name == "title" || name == "capitalize") {
    return method([s, name](CallArgs&) {
      CallArgs none;
      return apply_filter(name == "title" ? "__py_title" : "capitalize", Value::string(s), none);
    });
  }
  if (name == "replace") {
    return method([s](CallArgs& a) {
      CallArgs fa;
      fa.pos = {a.get(0, "old"), a.get(1, "new")};
      if (a.has(2, "count")) fa.pos.push_back(a.get(2, "count"));
      return apply_filter("replace", Value::string(s), fa);
    });
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    return method([s, name](CallArgs& a) {
      const std::string sub = str_arg(a.get(0, "sub"), "must be str, not");
      // Byte offsets are converted to code point offsets for the result.
      if (name == "count") {
        if (sub.empty()) return Value::integer(static_cast<int64_t>(code_point_count(s)) + 1);
        int64_t n = 0;
        for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
        return Value::integer(n);
      }
      const size_t p = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
      if (p == std::string::npos) {
        if (name == "index" || name == "rindex") throw_type_error("substring not found");
        return Value::integer(-1);
      }
      return Value::integer(static_cast<int64_t>(code_point_count(s.substr(0, p))));
    });
  }
  if (name == "format") return method([s](CallArgs& a) { return Value::string(py_format(s, a)); });
  if (name == "join") {
    return method([s](CallArgs& a) {
      std::string out;
      bool first = true;
      for (const auto& x : iterate(a.get(0, "iterable"))) {
        if (!x.is_string()) throw_type_error("sequence item: expected str instance, " + type_name(x) + " found");
        if (!first) out += s;
        first = false;
        out += x.s;
      }
      return Value::string(std::move(out));
    });
  }
  if (name == "splitlines") {
    return method([s](CallArgs& a) { return string_list(py_splitlines(s, truthy(a.get(0, "keepends")))); });
  }
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return pred([](unsigned char c) { return std::isdigit(c) != 0; });
  if (name == "isalpha") return pred([](unsigned char c) { return std::isalpha(c) != 0 || c >= 0x80; });
  if (name == "isalnum") return pred([](unsigned char c) { return std::isalnum(c) != 0 || c >= 0x80; });
  if (name == "isspace") return method([s](CallArgs&) { return Value::boolean(is_str_space(s)); });
  if (name == "islower" || name == "isupper") {
    const bool lower = name == "islower";
    return method([s, lower](CallArgs&) {
      bool cased = false;
      for (unsigned char c : s) {
        if (std::isupper(c)) { if (lower) return Value::boolean(false); cased = true; }
        if (std::islower(c)) { if (!lower) return Value::boolean(false); cased = true; }
      }
      return Value::boolean(cased);
    });
  }
  if (name == "zfill") {
    return method([s](CallArgs& a) {
      const int64_t width = int_arg(a.get(0, "width"), 0);
      const int64_t n = static_cast<int64_t>(code_point_count(s));
      if (n >= width) return Value::string(s);
      std::string pad(static_cast<size_t>(width - n), '0');
      if (!s.empty() && (s[0] == '-' || s[0] == '+')) return Value::string(s.substr(0, 1) + pad + s.substr(1));
      return Value::string(pad + s);
    });
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    return method([s, name](CallArgs& a) {
      const int64_t width = int_arg(a.get(0, "width"), 0);
      const Value fill = a.get(1, "fillchar");
      const std::string f = fill.is_string() ? fill.s : " ";
      const int64_t n = static_cast<int64_t>(code_point_count(s));
      if (n >= width) return Value::string(s);
      const int64_t pad = width - n;
      int64_t left = name == "ljust" ? 0 : name == "rjust" ? pad : pad / 2 + (pad & width & 1);
      std::string out;
      for (int64_t k = 0; k < left; ++k) out += f;
      out += s;
      for (int64_t k = 0; k < pad - left; ++k) out += f;
      return Value::string(std::move(out));
    });
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const bool prefix = name == "removeprefix";
    return method([s, prefix](CallArgs& a) {
      const std::string x = str_arg(a.get(0, "prefix"), "removeprefix");
      if (affix_match(s, Value::string(x), prefix)) return Value::string(prefix ? s.substr(x.size()) : s.substr(0, s.size() - x.size()));
      return Value::string(s);
    });
  }
  return Value::undefined();
}

Value dict_method(const Value& d, const std::string& name) {
  if (name == "items") {
    return method([d](CallArgs&) {
      List out;
      for (const auto& [k, v] : *d.dict) out.push_back(Value::make_list({key_value(k), v}, true));
      return Value::make_list(std::move(out));
    });
  }
  if (name == "keys") {
    return method([d](CallArgs&) {
      List out;
      for (const auto& kv : *d.dict) out.push_back(key_value(kv.first));
      return Value::make_list(std::move(out));
    });
  }
  if (name == "values") {
    return method([d](CallArgs&) {
      List out;
      for (const auto& kv : *d.dict) out.push_back(kv.second);
      return Value::make_list(std::move(out));
    });
  }
  if (name == "get") {
    return method([d](CallArgs& a) {
      const Value key = a.get(0, "key");
      if (const Value* v = d.find(dict_key(key))) return *v;
      const Value def = a.get(1, "default");
      return def.is_undefined() ? Value::none() : def;
    });
  }
  if (name == "copy") return method([d](CallArgs&) { return Value::make_dict(*d.dict); });
  if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear")
    return unsafe(name, d);
  return Value::undefined();
}

Value list_method(const Value& l, const std::string& name) {
  if (name == "index") {
    return method([l](CallArgs& a) {
      const Value x = a.get(0, "value");
      for (size_t k = 0; k < l.list->size(); ++k)
        if (equals((*l.list)[k], x)) return Value::integer(static_cast<int64_t>(k));
      throw_type_error(to_repr(x) + " is not in list");
    });
  }
  if (name == "count") {
    return method([l](CallArgs& a) {
      const Value x = a.get(0, "value");
      int64_t n = 0;
      for (const auto& y : *l.list) n += equals(y, x);
      return Value::integer(n);
    });
  }
  if (!l.tuple && name == "copy") return method([l](CallArgs&) { return Value::make_list(*l.list); });
  if (!l.tuple && (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
                   name == "reverse" || name == "sort" || name == "clear"))
    return unsafe(name, l);
  return Value::undefined();
}

}  // namespace

// str.isspace() for one UTF-8 encoded code point.
bool is_unicode_space(const std::string& c) {
  static const char* const spaces[] = {"\x1c", "\x1d", "\x1e", "\x1f", "\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80",
                                       "\xe2\x80\x80", "\xe2\x80\x81", "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\x84",
                                       "\xe2\x80\x85", "\xe2\x80\x86", "\xe2\x80\x87", "\xe2\x80\x88", "\xe2\x80\x89",
                                       "\xe2\x80\x8a", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f",
                                       "\xe3\x80\x80"};
  if (c.size() == 1 && is_ws(c[0])) return true;
  for (const char* sp : spaces)
    if (c == sp) return true;
  return false;
}

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
  if (chars.is_undefined() || chars.is_none()) {
    const std::vector<std::string> cps = code_points(s);
    size_t lb = 0, le = cps.size();
    while (left && lb < le && is_unicode_space(cps[lb])) ++lb;
    while (right && le > lb && is_unicode_space(cps[le - 1])) --le;
    std::string out;
    for (size_t k = lb; k < le; ++k) out += cps[k];
    return out;
  }
  if (!chars.is_string()) throw_type_error("strip arg must be None or str");
  // By code point: each character of `chars` is one code point.
  const std::vector<std::string> set = code_points(chars.s);
  const std::vector<std::string> cps = code_points(s);
  size_t lb = 0, le = cps.size();
  auto in = [&](const std::string& c) {
    for (const auto& x : set)
      if (x == c) return true;
    return false;
  };
  while (left && lb < le && in(cps[lb])) ++lb;
  while (right && le > lb && in(cps[le - 1])) --le;
  std::string out;
  for (size_t k = lb; k < le; ++k) out += cps[k];
  return out;
}

namespace {

uint32_t decode_one(const std::string& c) {
  const auto b0 = static_cast<unsigned char>(c[0]);
  if (c.size() == 1) return b0;
  uint32_t cp = c.size() == 2 ? b0 & 0x1f : c.size() == 3 ? b0 & 0x0f : b0 & 0x07;
  for (size_t k = 1; k < c.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(c[k]) & 0x3f);
  return cp;
}


// Python's case mapping for ASCII, Latin-1, Latin Extended-A, Greek and
// Cyrillic; other code points are left as they are.
uint32_t to_upper_cp(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xe0 && c <= 0xfe && c != 0xf7)) return c - 32;
  if (c == 0xff) return 0x178;
  if (c == 0xb5) return 0x39c;
  if (c == 0x131) return 'I';
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14a && c <= 0x177)) return c & ~1u;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c % 2 == 0) ? c - 1 : c;
  if (c == 0x17f) return 'S';
  if (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) return c - 32;
  if (c == 0x3c2) return 0x3a3;
  if (c >= 0x3ac && c <= 0x3af) return c == 0x3ac ? 0x386 : c - 37;
  if (c >= 0x430 && c <= 0x44f) return c - 32;
  if (c >= 0x450 && c <= 0x45f) return c - 80;
  return c;
}

uint32_t to_lower_cp(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xc0 && c <= 0xde && c != 0xd7) return c + 32;
  if (c == 0x178) return 0xff;
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14a && c <= 0x177)) return c | 1u;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c % 2 == 1) ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 32;
  if (c == 0x386) return 0x3ac;
  if (c >= 0x388 && c <= 0x38a) return c + 37;
  if (c >= 0x410 && c <= 0x42f) return c + 32;
  if (c >= 0x400 && c <= 0x40f) return c + 80;
  return c;
}

std::string map_case(const std::string& s, bool upper) {
  std::string out;
  out.reserve(s.size());
  for (const auto& c : code_points(s)) {
    const uint32_t cp = decode_one(c);
    if (upper && cp == 0xdf) { out += "SS"; continue; }  // ß
    if (!upper && cp == 0x130) { out += "i\xcc\x87"; continue; }  // İ
    const uint32_t m = upper ? to_upper_cp(cp) : to_lower_cp(cp);
    if (m == cp) out += c;
    else unicode::append_utf8(out, m);
  }
  return out;
}

}  // namespace

std::string py_lower(const std::string& s) { return map_case(s, false); }
std::string py_upper(const std::string& s) { return map_case(s, true); }

bool is_cased_letter(const std::string& c) {
  if (c.size() == 1) return std::isalpha(static_cast<unsigned char>(c[0])) != 0;
  const uint32_t cp = decode_one(c);
  return cp == 0xdf || to_upper_cp(cp) != cp || to_lower_cp(cp) != cp;
}

std::vector<std::string> py_splitlines(const std::string& s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t brk = 0;
    if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') brk = 2;
    else if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0x1c || c == 0x1d || c == 0x1e) brk = 1;
    else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) brk = 2;
    else if (c == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
             (static_cast<unsigned char>(s[i + 2]) == 0xa8 || static_cast<unsigned char>(s[i + 2]) == 0xa9))
      brk = 3;
    if (!brk) { ++i; continue; }
    out.push_back(s.substr(start, (keepends ? i + brk : i) - start));
    i += brk;
    start = i;
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

Value get_attribute(const Value& obj, const std::string& name) {
  Value m;
  switch (obj.kind) {
    case Kind::string:
      m = string_method(obj.s, name);
      if (obj.markup) m = markup_method(name, std::move(m));
      break;
    case Kind::dict:
      if (obj.ns) {
        if (const Value* v = obj.find(name)) return *v;
        return undefined_attribute(obj, Value::string(name));
      }
      m = dict_method(obj, name);
      if (m.is_undefined() && !m.unsafe) {
        if (const Value* v = obj.find(name)) return *v;
      }
      break;
    case Kind::list: m = list_method(obj, name); break;
    default: break;
  }
  if (!m.is_undefined() || m.unsafe) return m;
  return undefined_attribute(obj, Value::string(name));
}

Value get_item(const Value& obj, const Value& key) {
  switch (obj.kind) {
    case Kind::dict:
      if (key.is_string()) {
        if (const Value* v = obj.find(key.s)) return *v;
        if (!obj.ns) return get_attribute(obj, key.s);
      } else if (!obj.ns && (key.is_number() || key.is_none())) {
        if (const Value* v = obj.find(dict_key(key))) return *v;
      }
      return undefined_attribute(obj, key);
    case Kind::list:
    case Kind::string: {
      if (obj.generator) return undefined_attribute(obj, key);  // 'generator' object is not subscriptable
      if (key.kind != Kind::integer && key.kind != Kind::boolean) {
        if (key.is_string()) return get_attribute(obj, key.s);
        return undefined_attribute(obj, key);
      }
      int64_t k = key.kind == Kind::boolean ? key.b : key.i;
      if (obj.is_list()) {
        const int64_t n = static_cast<int64_t>(obj.list->size());
        if (k < 0) k += n;
        if (k < 0 || k >= n) return undefined_attribute(obj, key);
        return (*obj.list)[static_cast<size_t>(k)];
      }
      const std::vector<std::string> cps = code_points(obj.s);
      const int64_t n = static_cast<int64_t>(cps.size());
      if (k < 0) k += n;
      if (k < 0 || k >= n) return undefined_attribute(obj, key);
      Value c = Value::string(cps[static_cast<size_t>(k)]);
      c.markup = obj.markup;  // Markup.__getitem__ is wrapped
      return c;
    }
    default:
      if (key.is_string()) return get_attribute(obj, key.s);
      return undefined_attribute(obj, key);
  }
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  const int64_t st = step.is_none() ? 1 : int_arg(step, 1);
  if (st == 0) throw_type_error("slice step cannot be zero");
  List items;
  std::vector<std::string> cps;
  int64_t n;
  if (obj.generator) return undefined_attribute(obj, Value::none());  // not subscriptable: jinja2 gives Undefined
  if (obj.is_list()) n = static_cast<int64_t>(obj.list->size());
  else if (obj.is_string()) { cps = code_points(obj.s); n = static_cast<int64_t>(cps.size()); }
  else throw_type_error("'" + type_name(obj) + "' object is not subscriptable");
  auto norm = [&](const Value& v, int64_t def) {
    if (v.is_none()) return def;
    int64_t x = int_arg(v, def);
    if (x < 0) x += n;
    if (st > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t b = norm(start, st > 0 ? 0 : n - 1);
  const int64_t e = norm(stop, st > 0 ? n : -1);
  std::string text;
  for (int64_t k = b; st > 0 ? k < e : k > e; k += st) {
    if (obj.is_list()) items.push_back((*obj.list)[static_cast<size_t>(k)]);
    else text += cps[static_cast<size_t>(k)];
  }
  if (obj.is_string()) {
    Value r = Value::string(std::move(text));
    r.markup = obj.markup;
    return r;
  }
  return Value::make_list(std::move(items), obj.tuple);
}

Value call_value(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) raise_undefined(fn);
  if (fn.is_dict() && fn.fn) return (*fn.fn)(args);  // a recursive loop's `loop`
  if (fn.kind != Kind::function) throw_type_error("'" + type_name(fn) + "' object is not callable");
  return (*fn.fn)(args);
}

void add_globals(Dict& g) {
  g.emplace_back("raise_exception", Value::function([](CallArgs& a) -> Value { throw_template_error(to_str(a.get(0, "message"))); }));
  g.emplace_back("strftime_now", Value::function([](CallArgs& a) -> Value {
    // Fixed to 2026-01-15 12:00:00 (a Thursday), as the reference renderer is.
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 0;
    tm.tm_mday = 15;
    tm.tm_hour = 12;
    tm.tm_wday = 4;
    tm.tm_yday = 14;
    const std::string fmt = to_str(a.get(0, "format"));
    char buf[512];
    const size_t n = fmt.empty() ? 0 : std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
    return Value::string(std::string(buf, n));
  }));
  g.emplace_back("range", Value::function([](CallArgs& a) -> Value {
    int64_t start = 0, stop = 0, step = 1;
    if (a.pos.size() == 1) stop = int_arg(a.pos[0], 0);
    else if (a.pos.size() >= 2) {
      start = int_arg(a.pos[0], 0);
      stop = int_arg(a.pos[1], 0);
      if (a.pos.size() > 2) step = int_arg(a.pos[2], 1);
    } else throw_type_error("range expected at least 1 argument, got 0");
    if (step == 0) throw_type_error("range() arg 3 must not be zero");
    const int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                   : (start > stop ? (start - stop - step - 1) / -step : 0);
    if (count > 100000) throw_type_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    List out;
    for (int64_t k = 0; k < count; ++k) out.push_back(Value::integer(start + k * step));
    Value r = Value::make_list(std::move(out));
    r.range = true;
    r.s = "range(" + std::to_string(start) + ", " + std::to_string(stop) + (step != 1 ? ", " + std::to_string(step) : "") + ")";
    return r;
  }));
  // cycler(*items): .next() gives .current and moves on; .reset() starts over.
  g.emplace_back("cycler", Value::function([](CallArgs& a) -> Value {
    if (a.pos.empty()) throw_type_error("at least one item has to be provided");
    auto items = std::make_shared<List>(a.pos);
    auto pos = std::make_shared<size_t>(0);
    Value c = Value::make_dict({{"current", (*items)[0]}});
    // The functions reach the dict weakly: it holds them.
    std::weak_ptr<Dict> self = c.dict;
    auto set_current = [self, items, pos] {
      if (auto d = self.lock())
        for (auto& [k, v] : *d)
          if (k == "current") v = (*items)[*pos];
    };
    c.dict->emplace_back("next", Value::function([items, pos, set_current](CallArgs&) -> Value {
      Value rv = (*items)[*pos];
      *pos = (*pos + 1) % items->size();
      set_current();
      return rv;
    }));
    c.dict->emplace_back("reset", Value::function([pos, set_current](CallArgs&) -> Value {
      *pos = 0;
      set_current();
      return Value::none();
    }));
    return c;
  }));
  // joiner(sep=", "): '' the first time it is called, sep after.
  g.emplace_back("joiner", Value::function([](CallArgs& a) -> Value {
    const std::string sep = a.has(0, "sep") ? to_str(a.get(0, "sep")) : ", ";
    auto used = std::make_shared<bool>(false);
    return Value::function([sep, used](CallArgs&) -> Value {
      if (!*used) {
        *used = true;
        return Value::string("");
      }
      return Value::string(sep);
    });
  }));
  g.emplace_back("dict", Value::function([](CallArgs& a) -> Value {
    Value d = Value::make_dict();
    if (!a.pos.empty() && a.pos[0].is_dict()) *d.dict = *a.pos[0].dict;
    for (const auto& [k, v] : a.kw) {
      if (Value* slot = d.find(k)) *slot = v;
      else d.dict->emplace_back(k, v);
    }
    return d;
  }));
  g.emplace_back("namespace", Value::function([](CallArgs& a) -> Value {
    Value d = Value::make_dict();
    d.ns = true;
    if (!a.pos.empty() && a.pos[0].is_dict()) *d.dict = *a.pos[0].dict;
    for (const auto& [k, v] : a.kw) {
      if (Value* slot = d.find(k)) *slot = v;
      else d.dict->emplace_back(k, v);
    }
    return d;
  }));
}

}  // namespace tessera::chat
