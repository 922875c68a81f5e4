#include "engine/chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tessera::chat {

void throw_template_error(const std::string& message) { throw JinjaError(message, true); }
void throw_type_error(const std::string& message) { throw JinjaError(message, false); }

namespace {

constexpr char kKeyTag = '\xff';

// A stored key matches a looked-up one when they are equal, or for a
// non-str key when the stored one is that key plus the tag of how it was
// written (dict_key_as_written).
bool same_key(const std::string& stored, const std::string& key) {
  if (stored == key) return true;
  return !key.empty() && key[0] == kKeyTag && stored.size() > key.size() && stored.compare(0, key.size(), key) == 0 &&
         stored[key.size()] == kKeyTag;
}

}  // namespace

const Value* Value::find(const std::string& key) const {
  if (!dict) return nullptr;
  for (const auto& [k, v] : *dict)
    if (same_key(k, key)) return &v;
  return nullptr;
}
Value* Value::find(const std::string& key) {
  if (!dict) return nullptr;
  for (auto& [k, v] : *dict)
    if (same_key(k, key)) return &v;
  return nullptr;
}

Value CallArgs::get(size_t index, const std::string& name) const {
  if (index < pos.size()) return pos[index];
  for (const auto& [k, v] : kw)
    if (k == name) return v;
  return Value::undefined();
}
bool CallArgs::has(size_t index, const std::string& name) const {
  if (index < pos.size()) return true;
  for (const auto& [k, v] : kw)
    if (k == name) return true;
  return false;
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean: return v.b;
    case Kind::integer: return v.i != 0;
    case Kind::floating: return v.f != 0.0;
    case Kind::string: return !v.s.empty();
    case Kind::list: return v.generator || !v.list->empty();
    case Kind::dict: return !v.dict->empty();
    case Kind::function: return true;
  }
  return false;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, laid out as Python's repr does: fixed for
  // exponents in [-4, 16), scientific otherwise.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, end);
  const bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out;
  if (exp >= -5 + 1 && exp < 16) {
    if (exp >= 0) {
      if (static_cast<int>(digits.size()) <= exp + 1) {
        out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
      }
    } else {
      out = "0." + std::string(-exp - 1, '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  return neg ? "-" + out : out;
}

namespace {

uint32_t decode_utf8(const std::string& s, size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (i + n > s.size()) n = 1;
  uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
  for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  i += n;
  return cp;
}

std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const uint32_t cp = decode_utf8(s, i);
    char buf[16];
    if (cp == '\\') out += "\\\\";
    else if (cp == static_cast<uint32_t>(quote)) { out += '\\'; out += quote; }
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad) {
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else if (cp == 0x2028 || cp == 0x2029 || (cp >= 0x200b && cp <= 0x200f) || cp == 0xfeff) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
    } else {
      out.append(s, start, i - start);
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    decode_utf8(s, i);
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

size_t code_point_count(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xc0) != 0x80) ++n;
  return n;
}

std::string dict_key(const Value& key) {
  switch (key.kind) {
    case Kind::string: return key.s;
    case Kind::boolean: return std::string(1, kKeyTag) + "i" + (key.b ? "1" : "0");
    case Kind::integer: return std::string(1, kKeyTag) + "i" + std::to_string(key.i);
    case Kind::floating:
      if (std::isfinite(key.f) && key.f == std::floor(key.f) && std::fabs(key.f) < 9.2e18)
        return std::string(1, kKeyTag) + "i" + std::to_string(static_cast<int64_t>(key.f));
      return std::string(1, kKeyTag) + "f" + float_repr(key.f);
    case Kind::none: return std::string(1, kKeyTag) + "n";
    case Kind::undefined: raise_undefined(key);
    default: break;
  }
  throw_type_error("unhashable type: '" + type_name(key) + "'");
}

std::string dict_key_as_written(const Value& key) {
  std::string k = dict_key(key);
  if (key.kind == Kind::boolean) k += std::string(1, kKeyTag) + "b";
  if (key.kind == Kind::floating && k[1] == 'i') k += std::string(1, kKeyTag) + "f";
  return k;
}

Value key_value(const std::string& stored) {
  if (stored.empty() || stored[0] != kKeyTag) return Value::string(stored);
  const char tag = stored.size() > 1 ? stored[1] : 'n';
  const size_t end = stored.find(kKeyTag, 1);
  const std::string rest = stored.substr(std::min<size_t>(2, stored.size()), end == std::string::npos ? std::string::npos : end - 2);
  const char written = end == std::string::npos || end + 1 >= stored.size() ? 0 : stored[end + 1];
  if (tag == 'i') {
    const int64_t i = std::strtoll(rest.c_str(), nullptr, 10);
    if (written == 'b') return Value::boolean(i != 0);
    if (written == 'f') return Value::floating(static_cast<double>(i));
    return Value::integer(i);
  }
  if (tag == 'f') return Value::floating(std::strtod(rest.c_str(), nullptr));
  return Value::none();
}

namespace {

// json.dumps writes a non-str key as its JSON text, quoted: 1 -> "1", None -> "null", True -> "true".
std::string json_key(const std::string& stored) {
  const Value k = key_value(stored);
  if (k.is_string()) return json_quote(k.s);
  if (k.is_none()) return "\"null\"";
  if (k.kind == Kind::boolean) return k.b ? "\"true\"" : "\"false\"";
  return json_quote(to_str(k));
}

}  // namespace

std::string to_repr(const Value& v) {
  switch (v.kind) {
    case Kind::string: return v.markup ? "Markup(" + string_repr(v.s) + ")" : string_repr(v.s);
    case Kind::list: {
      if (v.range) return v.s;
      if (v.generator) return "<generator object " + v.s + ">";
      std::string out = v.tuple ? "(" : "[";
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += ", ";
        out += to_repr((*v.list)[k]);
      }
      if (v.tuple && v.list->size() == 1) out += ",";
      return out + (v.tuple ? ")" : "]");
    }
    case Kind::dict: {
      if (v.ns) return "<Namespace>";
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : *v.dict) {
        if (!first) out += ", ";
        first = false;
        out += to_repr(key_value(k)) + ": " + to_repr(x);
      }
      return out + "}";
    }
    case Kind::undefined: return "Undefined";
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Kind::undefined: return "";
    case Kind::none: return "None";
    case Kind::boolean: return v.b ? "True" : "False";
    case Kind::integer: return std::to_string(v.i);
    case Kind::floating: return float_repr(v.f);
    case Kind::string: return v.s;
    case Kind::function: return "<function>";
    default: return to_repr(v);
  }
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Kind::undefined: return "Undefined";
    case Kind::none: return "NoneType";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::string: return v.markup ? "Markup" : "str";
    case Kind::list: return v.range ? "range" : v.generator ? "generator" : v.tuple ? "tuple" : "list";
    case Kind::dict: return v.ns ? "Namespace" : "dict";
    case Kind::function: return "function";
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  return type_name(v) + " object";
}

void raise_undefined(const Value& v) {
  throw_template_error(v.s.empty() ? "'None' has no attribute" : v.s);
}

Value undefined_attribute(const Value& obj, const Value& name) {
  if (name.is_string()) return Value::undefined("'" + object_type_repr(obj) + "' has no attribute " + to_repr(name));
  return Value::undefined(object_type_repr(obj) + " has no element " + to_repr(name));
}

double as_double(const Value& v) {
  switch (v.kind) {
    case Kind::boolean: return v.b ? 1 : 0;
    case Kind::integer: return static_cast<double>(v.i);
    case Kind::floating: return v.f;
    default: return 0;
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Kind::floating && b.kind != Kind::floating)
      return (a.kind == Kind::boolean ? a.b : a.i) == (b.kind == Kind::boolean ? b.b : b.i);
    return as_double(a) == as_double(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::undefined:
    case Kind::none: return true;
    case Kind::string: return a.s == b.s;
    case Kind::list:
      if (a.list->size() != b.list->size() || a.tuple != b.tuple) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equals((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Kind::dict:
      if (a.ns || b.ns) return a.dict == b.dict;
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [k, x] : *a.dict) {
        const Value* y = b.find(k);
        if (!y || !equals(x, *y)) return false;
      }
      return true;
    case Kind::function: return a.fn == b.fn;
    default: return false;
  }
}

int compare(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.kind != Kind::floating && b.kind != Kind::floating) {
      const int64_t x = a.kind == Kind::boolean ? a.b : a.i, y = b.kind == Kind::boolean ? b.b : b.i;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    const double x = as_double(a), y = as_double(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;  // UTF-8 byte order is code point order
  if (a.is_list() && b.is_list() && a.tuple == b.tuple && !a.range && !b.range) {
    for (size_t k = 0; k < a.list->size() && k < b.list->size(); ++k) {
      if (equals((*a.list)[k], (*b.list)[k])) continue;
      return compare((*a.list)[k], (*b.list)[k], op);
    }
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  throw_type_error(std::string("'") + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

List iterate(const Value& v) {
  switch (v.kind) {
    case Kind::undefined: return {};
    case Kind::list: {
      if (!v.generator) return *v.list;
      List out = std::move(*v.list);  // a generator runs once: every copy of it is spent now
      v.list->clear();
      return out;
    }
    case Kind::dict: {
      List out;
      for (const auto& kv : *v.dict) out.push_back(key_value(kv.first));
      return out;
    }
    case Kind::string: {
      List out;
      for (auto& c : code_points(v.s)) out.push_back(Value::string(std::move(c)));
      return out;
    }
    default: throw_type_error("'" + type_name(v) + "' object is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind) {
    case Kind::undefined: return 0;
    case Kind::string: return static_cast<int64_t>(code_point_count(v.s));
    case Kind::list:
      if (v.generator) throw_type_error("object of type 'generator' has no len()");
      return static_cast<int64_t>(v.list->size());
    case Kind::dict: return static_cast<int64_t>(v.dict->size());
    default: throw_type_error("object of type '" + type_name(v) + "' has no len()");
  }
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Value::integer(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value::floating(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& x : j) items.push_back(from_json(x));
      return Value::make_list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict items;
      for (auto it = j.begin(); it != j.end(); ++it) {
        bool replaced = false;  // Python's json keeps the last of duplicate keys, in the first's place
        for (auto& kv : items)
          if (kv.first == it.key()) { kv.second = from_json(it.value()); replaced = true; }
        if (!replaced) items.emplace_back(it.key(), from_json(it.value()));
      }
      return Value::make_dict(std::move(items));
    }
    default: return Value::none();
  }
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

namespace {

void dump_into(const Value& v, const DumpOptions& o, int depth, std::string& out) {
  if (depth > 500) throw_type_error("maximum recursion depth exceeded while encoding a JSON object");
  const bool pretty = o.indent >= 0 || !o.indent_text.empty();
  const std::string unit = !o.indent_text.empty() ? o.indent_text : std::string(o.indent > 0 ? o.indent : 0, ' ');
  auto newline = [&](int d) {
    out += '\n';
    for (int k = 0; k < d; ++k) out += unit;
  };
  switch (v.kind) {
    case Kind::none: out += "null"; return;
    case Kind::boolean: out += v.b ? "true" : "false"; return;
    case Kind::integer: out += std::to_string(v.i); return;
    case Kind::floating:
      if (std::isnan(v.f)) out += "NaN";
      else if (std::isinf(v.f)) out += v.f > 0 ? "Infinity" : "-Infinity";
      else out += float_repr(v.f);
      return;
    case Kind::string: out += json_quote(v.s); return;
    case Kind::list: {
      if (v.range || v.generator) break;  // json.dumps refuses a range or a generator
      if (v.list->empty()) { out += "[]"; return; }
      out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += o.item_sep;
        if (pretty) newline(depth + 1);
        dump_into((*v.list)[k], o, depth + 1, out);
      }
      if (pretty) newline(depth);
      out += ']';
      return;
    }
    case Kind::dict: {
      if (v.ns) break;
      if (v.dict->empty()) { out += "{}"; return; }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : *v.dict) items.push_back(&kv);
      if (o.sort_keys)
        std::stable_sort(items.begin(), items.end(),
                         [](auto* a, auto* b) { return compare(key_value(a->first), key_value(b->first), "<") < 0; });
      out += '{';
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += o.item_sep;
        if (pretty) newline(depth + 1);
        out += json_key(items[k]->first);
        out += o.key_sep;
        dump_into(items[k]->second, o, depth + 1, out);
      }
      if (pretty) newline(depth);
      out += '}';
      return;
    }
    default: break;
  }
  throw_type_error("Object of type " + type_name(v) + " is not JSON serializable");
}

}  // namespace

std::string dumps(const Value& v, const DumpOptions& options) {
  std::string out;
  dump_into(v, options, 0, out);
  return out;
}

}  // namespace tessera::chat
