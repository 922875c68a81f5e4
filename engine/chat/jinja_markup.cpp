#include "engine/chat/jinja_markup.h"

#include <utility>

namespace tessera::chat {

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value markup(std::string text) {
  Value v = Value::string(std::move(text));
  v.markup = true;
  return v;
}

Value escape_markup(const Value& v) {
  if (v.is_string() && v.markup) return v;
  return markup(html_escape(to_str(v)));
}

Value concat_markup(const Value& a, const Value& b) { return markup(escape_markup(a).s + escape_markup(b).s); }

bool filter_keeps_markup(const std::string& name) {
  static const char* const names[] = {"string", "trim", "upper", "lower", "title", "capitalize", "center",
                                      "indent", "truncate", "format", "replace"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

void escape_string_args(CallArgs& args) {
  for (Value& a : args.pos)
    if (a.is_string()) a = escape_markup(a);
  for (auto& kw : args.kw)
    if (kw.second.is_string()) kw.second = escape_markup(kw.second);
}

Value markup_method(const std::string& name, Value method) {
  // markupsafe wraps these; the rest (startswith, find, isdigit, ...) give
  // what str's do.
  static const char* const wrapped[] = {"capitalize", "title", "lower", "upper", "replace", "ljust", "rjust",
                                        "lstrip", "rstrip", "center", "strip", "swapcase", "zfill", "format",
                                        "split", "rsplit", "splitlines", "partition", "rpartition", "join"};
  bool wraps = false;
  for (const char* n : wrapped) wraps = wraps || name == n;
  if (!wraps || method.kind != Kind::function) return method;
  const bool escape_items = name == "join";
  const bool escape_args = name != "split" && name != "rsplit" && name != "splitlines";
  return Value::function([fn = method.fn, escape_items, escape_args](CallArgs& args) {
    if (escape_args) escape_string_args(args);
    if (escape_items && !args.pos.empty()) {
      List items;
      for (const Value& x : iterate(args.pos[0])) items.push_back(escape_markup(x));
      args.pos[0] = Value::make_list(std::move(items));
    }
    Value r = (*fn)(args);
    if (r.is_string()) r.markup = true;
    if (r.is_list()) {
      List items = *r.list;
      for (Value& x : items)
        if (x.is_string()) x.markup = true;
      r = Value::make_list(std::move(items), r.tuple);
    }
    return r;
  });
}

}  // namespace tessera::chat
