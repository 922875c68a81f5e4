// jinja2's builtin filters and tests, with the reference renderer's tojson.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_markup.h"

namespace tessera::chat {
namespace {

bool is_intlike(const Value& v) { return v.kind == Kind::integer || v.kind == Kind::boolean; }

// soft_str: what a string filter sees (undefined is '').
std::string as_text(const Value& v) { return to_str(v); }

// `attribute=` paths: "a.b" or "0" steps, as jinja2's make_attrgetter does.
Value attr_path(const Value& item, const Value& attribute) {
  if (attribute.is_undefined() || attribute.is_none()) return item;
  if (is_intlike(attribute)) return get_item(item, attribute);
  Value cur = item;
  const std::string path = to_str(attribute);
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    Value key = Value::string(part);
    if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      key = Value::integer(std::atoll(part.c_str()));
    cur = get_item(cur, key);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(py_lower(v.s));
  return v;
}

std::string title_case(const std::string& s) {
  // jinja2's do_title: capitalise each piece after a run of -, whitespace, (, {, [ or <.
  std::string out;
  bool start = true;
  for (const auto& c : code_points(s)) {
    const bool sep = c.size() == 1 && (c[0] == '-' || c[0] == ' ' || c[0] == '\t' || c[0] == '\n' || c[0] == '\r' ||
                                       c[0] == '\f' || c[0] == '\v' || c[0] == '(' || c[0] == '{' || c[0] == '[' || c[0] == '<');
    if (sep) {
      out += c;
      start = true;
      continue;
    }
    out += start ? py_upper(c) : py_lower(c);
    start = false;
  }
  return out;
}

std::string py_title(const std::string& s) {
  // str.title(): a cased letter after an uncased character is upper-cased, the others lower-cased.
  std::string out;
  bool prev_cased = false;
  for (const auto& c : code_points(s)) {
    if (is_cased_letter(c)) {
      out += prev_cased ? py_lower(c) : py_upper(c);
      prev_cased = true;
    } else {
      out += c;
      prev_cased = false;
    }
  }
  return out;
}

Value python_round(const Value& v, int64_t precision, const std::string& method) {
  const double x = as_double(v);
  const double scale = std::pow(10.0, static_cast<double>(precision));
  double r;
  if (method == "common") {
    r = std::nearbyint(x * scale) / scale;  // Python's round: halves to even
  } else if (method == "ceil") {
    r = std::ceil(x * scale) / scale;
  } else if (method == "floor") {
    r = std::floor(x * scale) / scale;
  } else {
    throw_template_error("method must be common, ceil or floor");
  }
  return Value::floating(r);
}

// Python's `fmt % args` for %s, %r, %d, %i, %f and %%.
std::string percent_format(const std::string& fmt, const List& args) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') { out += fmt[i]; continue; }
    if (++i >= fmt.size()) throw_type_error("incomplete format");
    std::string spec;
    while (i < fmt.size() && std::strchr("0123456789.-+ #", fmt[i])) spec += fmt[i++];
    if (i >= fmt.size()) throw_type_error("incomplete format");
    const char conv = fmt[i];
    if (conv == '%') { out += '%'; continue; }
    if (next >= args.size()) throw_type_error("not enough arguments for format string");
    const Value& a = args[next++];
    char buf[128];
    switch (conv) {
      case 's': out += to_str(a); break;
      case 'r': out += to_repr(a); break;
      case 'd': case 'i':
        std::snprintf(buf, sizeof buf, ("%" + spec + "lld").c_str(), static_cast<long long>(is_intlike(a) ? (a.kind == Kind::boolean ? a.b : a.i) : static_cast<int64_t>(as_double(a))));
        out += buf;
        break;
      case 'f': case 'e': case 'g':
        std::snprintf(buf, sizeof buf, ("%" + spec + conv).c_str(), as_double(a));
        out += buf;
        break;
      default: throw_type_error(std::string("unsupported format character '") + conv + "'");
    }
  }
  // Python takes a lone list or dict argument as a mapping, which need not be used.
  const bool mapping = args.size() == 1 && ((args[0].is_list() && !args[0].tuple) || args[0].is_dict());
  if (next < args.size() && !(mapping && next == 0)) throw_type_error("not all arguments converted during string formatting");
  return out;
}

CallArgs rest_args(const CallArgs& args, size_t from) {
  CallArgs r;
  for (size_t k = from; k < args.pos.size(); ++k) r.pos.push_back(args.pos[k]);
  r.kw = args.kw;
  return r;
}

Value select_like(const Value& value, CallArgs& args, bool by_attr, bool keep) {
  List out;
  if (!truthy(value)) return Value::make_generator({}, "select_or_reject");  // jinja2 iterates only a true value
  const Value attr = by_attr ? args.get(0, "\x01") : Value::undefined();
  const size_t test_at = by_attr ? 1 : 0;
  const bool has_test_name = args.pos.size() > test_at;
  const std::string test_name = has_test_name ? to_str(args.pos[test_at]) : "";
  CallArgs test_args = rest_args(args, test_at + 1);
  for (const auto& item : iterate(value)) {
    const Value x = by_attr ? attr_path(item, attr) : item;
    const bool ok = has_test_name ? apply_test(test_name, x, test_args) : truthy(x);
    if (ok == keep) out.push_back(item);
  }
  return Value::make_generator(std::move(out), "select_or_reject");
}

}  // namespace

Value apply_filter(const std::string& name, const Value& v, CallArgs& args) {
  if (v.is_string() && v.markup && filter_keeps_markup(name)) {
    Value text = v;
    text.markup = false;
    if (name == "format" || name == "replace") escape_string_args(args);
    Value r = apply_filter(name, text, args);
    if (r.is_string()) r.markup = true;
    return r;
  }
  if (name == "tojson") {
    DumpOptions o;
    const Value indent = args.get(1, "indent");
    if (is_intlike(indent)) {
      o.indent = static_cast<int>(indent.kind == Kind::boolean ? indent.b : indent.i);
      if (o.indent < 0) o.indent = 0;  // Python: a negative indent still adds newlines
    } else if (indent.is_string()) {
      o.indent_text = indent.s;
      o.indent = 0;
    }
    if (o.indent >= 0) o.item_sep = ",";
    const Value seps = args.get(2, "separators");
    if (seps.is_list() && seps.list->size() == 2) {
      o.item_sep = to_str((*seps.list)[0]);
      o.key_sep = to_str((*seps.list)[1]);
    }
    o.sort_keys = truthy(args.get(3, "sort_keys"));
    if (!truthy(args.get(0, "ensure_ascii")) || true) return Value::string(dumps(v, o));
  }
  if (name == "trim") return Value::string(py_strip(as_text(v), args.get(0, "chars"), true, true));
  if (name == "length" || name == "count") return Value::integer(length(v));
  if (name == "lower") return Value::string(py_lower(as_text(v)));
  if (name == "upper") return Value::string(py_upper(as_text(v)));
  if (name == "title") return Value::string(title_case(as_text(v)));
  if (name == "__py_title") return Value::string(py_title(as_text(v)));
  if (name == "capitalize") {
    const auto cps = code_points(as_text(v));
    if (cps.empty()) return Value::string("");
    std::string out = py_upper(cps[0]);
    for (size_t k = 1; k < cps.size(); ++k) out += py_lower(cps[k]);
    return Value::string(std::move(out));
  }
  if (name == "replace") {
    const std::string s = as_text(v);
    const std::string old_s = to_str(args.get(0, "old")), new_s = to_str(args.get(1, "new"));
    const Value count_v = args.get(2, "count");
    int64_t count = is_intlike(count_v) ? count_v.i : -1;
    std::string out;
    if (old_s.empty()) {
      // Python inserts `new` before every code point and at the end.
      const auto cps = code_points(s);
      int64_t done = 0;
      for (const auto& c : cps) {
        if (count < 0 || done < count) { out += new_s; ++done; }
        out += c;
      }
      if (count < 0 || done < count) out += new_s;
      return Value::string(std::move(out));
    }
    size_t i = 0;
    while (count != 0) {
      const size_t j = s.find(old_s, i);
      if (j == std::string::npos) break;
      out.append(s, i, j - i);
      out += new_s;
      i = j + old_s.size();
      if (count > 0) --count;
    }
    out.append(s, i, std::string::npos);
    return Value::string(std::move(out));
  }
  if (name == "join") {
    const std::string sep = args.has(0, "d") ? to_str(args.get(0, "d")) : "";
    const Value attr = args.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& x : iterate(v)) {
      if (!first) out += sep;
      first = false;
      out += to_str(attr_path(x, attr));
    }
    return Value::string(std::move(out));
  }
  if (name == "first") {
    if (v.is_undefined()) return v;
    List items = iterate(v);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
  }
  if (name == "last") {
    if (v.is_undefined()) return v;
    if (v.generator) throw_type_error("'generator' object is not reversible");
    List items = iterate(v);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
  }
  if (name == "list") return Value::make_list(iterate(v));
  if (name == "items") {
    if (v.is_undefined()) return Value::make_list();
    if (!v.is_dict()) throw_type_error("Can only get item pairs from a mapping.");
    List out;
    for (const auto& [k, x] : *v.dict) out.push_back(Value::make_list({key_value(k), x}, true));
    return Value::make_list(std::move(out));
  }
  if (name == "map") {
    List out;
    if (!truthy(v)) return Value::make_generator({}, "sync_do_map");
    const List items = iterate(v);
    if (args.pos.empty() && args.has(static_cast<size_t>(-1), "attribute")) {
      const Value attr = args.get(static_cast<size_t>(-1), "attribute");
      const Value def = args.get(static_cast<size_t>(-1), "default");
      for (const auto& x : items) {
        Value y = attr_path(x, attr);
        if (y.is_undefined() && args.has(static_cast<size_t>(-1), "default")) y = def;
        out.push_back(y);
      }
      return Value::make_generator(std::move(out), "sync_do_map");
    }
    if (args.pos.empty()) return Value::make_generator(items, "sync_do_map");
    const std::string filter = to_str(args.pos[0]);
    CallArgs fargs = rest_args(args, 1);
    for (const auto& x : items) out.push_back(apply_filter(filter, x, fargs));
    return Value::make_generator(std::move(out), "sync_do_map");
  }
  if (name == "select") return select_like(v, args, false, true);
  if (name == "reject") return select_like(v, args, false, false);
  if (name == "selectattr") return select_like(v, args, true, true);
  if (name == "rejectattr") return select_like(v, args, true, false);
  if (name == "default" || name == "d") {
    const Value def = args.has(0, "default_value") ? args.get(0, "default_value") : Value::string("");
    const bool boolean = truthy(args.get(1, "boolean"));
    if (v.is_undefined() || (boolean && !truthy(v))) return def;
    return v;
  }
  if (name == "string") return Value::string(to_str(v));
  if (name == "safe") return markup(to_str(v));
  if (name == "int") {
    const Value def = args.has(0, "default") ? args.get(0, "default") : Value::integer(0);
    if (is_intlike(v)) return Value::integer(v.kind == Kind::boolean ? v.b : v.i);
    if (v.kind == Kind::floating) return std::isfinite(v.f) ? Value::integer(static_cast<int64_t>(v.f)) : def;
    if (v.is_string()) {
      std::string t = py_strip(v.s, Value::undefined(), true, true);
      std::string digits;
      for (char c : t) if (c != '_') digits += c;
      char* end = nullptr;
      const long long x = std::strtoll(digits.c_str(), &end, 10);
      if (!digits.empty() && end && *end == '\0') return Value::integer(x);
      const double f = std::strtod(digits.c_str(), &end);
      if (!digits.empty() && end && *end == '\0' && std::isfinite(f)) return Value::integer(static_cast<int64_t>(f));
    }
    return def;
  }
  if (name == "float") {
    const Value def = args.has(0, "default") ? args.get(0, "default") : Value::floating(0.0);
    if (v.is_number()) return Value::floating(as_double(v));
    if (v.is_string()) {
      const std::string t = py_strip(v.s, Value::undefined(), true, true);
      char* end = nullptr;
      const double f = std::strtod(t.c_str(), &end);
      if (!t.empty() && end && *end == '\0') return Value::floating(f);
    }
    return def;
  }
  if (name == "abs") {
    if (v.kind == Kind::integer) return Value::integer(v.i < 0 ? -v.i : v.i);
    if (v.kind == Kind::boolean) return Value::integer(v.b);
    if (v.kind == Kind::floating) return Value::floating(std::fabs(v.f));
    throw_type_error("bad operand type for abs(): '" + type_name(v) + "'");
  }
  if (name == "round") {
    const Value p = args.get(0, "precision");
    const Value m = args.get(1, "method");
    if (!v.is_number()) throw_type_error("type " + type_name(v) + " doesn't define __round__ method");
    const int64_t precision = is_intlike(p) ? p.i : 0;
    const std::string method = m.is_string() ? m.s : "common";
    if (is_intlike(v) && method == "common") return Value::integer(v.kind == Kind::boolean ? v.b : v.i);
    return python_round(v, precision, method);
  }
  if (name == "indent") {
    const Value w = args.get(0, "width");
    std::string indention = w.is_string() ? w.s : std::string(static_cast<size_t>(is_intlike(w) ? std::max<int64_t>(w.i, 0) : 4), ' ');
    if (v.is_undefined()) raise_undefined(v);
    if (!v.is_string()) throw_type_error("'" + type_name(v) + "' object has no attribute 'splitlines'");
    const bool first = truthy(args.get(1, "first"));
    const bool blank = truthy(args.get(2, "blank"));
    std::string s = as_text(v) + "\n";
    std::vector<std::string> lines = py_splitlines(s, false);
    std::string rv;
    if (blank) {
      for (size_t k = 0; k < lines.size(); ++k) {
        if (k) rv += "\n" + indention;
        rv += lines[k];
      }
    } else {
      rv = lines.empty() ? "" : lines[0];
      if (lines.size() > 1) {
        rv += "\n";
        for (size_t k = 1; k < lines.size(); ++k) {
          if (k > 1) rv += "\n";
          rv += lines[k].empty() ? lines[k] : indention + lines[k];
        }
      }
    }
    if (first) rv = indention + rv;
    return Value::string(std::move(rv));
  }
  if (name == "unique") {
    const bool cs = truthy(args.get(0, "case_sensitive"));
    const Value attr = args.get(1, "attribute");
    List out, seen;
    for (const auto& x : iterate(v)) {
      const Value key = sort_key(attr_path(x, attr), cs);
      bool dup = false;
      for (const auto& s : seen) dup = dup || equals(s, key);
      if (dup) continue;
      seen.push_back(key);
      out.push_back(x);
    }
    return Value::make_generator(std::move(out), "do_unique");
  }
  if (name == "sort") {
    const bool reverse = truthy(args.get(0, "reverse"));
    const bool cs = truthy(args.get(1, "case_sensitive"));
    const Value attr = args.get(2, "attribute");
    List items = iterate(v);
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
      const Value ka = sort_key(attr_path(a, attr), cs), kb = sort_key(attr_path(b, attr), cs);
      return reverse ? compare(kb, ka, "<") < 0 : compare(ka, kb, "<") < 0;
    });
    return Value::make_list(std::move(items));
  }
  if (name == "dictsort") {
    if (v.is_undefined()) raise_undefined(v);  // value.items() on Undefined
    if (!v.is_dict()) throw_type_error("'" + type_name(v) + "' object has no attribute 'items'");
    const bool cs = truthy(args.get(0, "case_sensitive"));
    const std::string by = args.has(1, "by") ? to_str(args.get(1, "by")) : "key";
    const bool reverse = truthy(args.get(2, "reverse"));
    List items;
    for (const auto& [k, x] : *v.dict) items.push_back(Value::make_list({key_value(k), x}, true));
    const size_t at = by == "value" ? 1 : 0;
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
      const Value ka = sort_key((*a.list)[at], cs), kb = sort_key((*b.list)[at], cs);
      return reverse ? compare(kb, ka, "<") < 0 : compare(ka, kb, "<") < 0;
    });
    return Value::make_list(std::move(items));
  }
  if (name == "reverse") {
    if (v.is_string()) {
      auto cps = code_points(v.s);
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return Value::string(std::move(out));
    }
    if (!v.is_list() && !v.is_dict() && !v.is_undefined()) throw_template_error("argument must be iterable");
    List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
  }
  if (name == "batch") {
    const Value n_v = args.get(0, "linecount");
    const int64_t n = is_intlike(n_v) ? n_v.i : 1;
    if (n <= 0) throw_type_error("batch size must be positive");
    const bool fill = args.has(1, "fill_with");
    const Value fill_with = args.get(1, "fill_with");
    List out, cur;
    for (const auto& x : iterate(v)) {
      cur.push_back(x);
      if (static_cast<int64_t>(cur.size()) == n) { out.push_back(Value::make_list(std::move(cur))); cur.clear(); }
    }
    if (!cur.empty()) {
      if (fill) while (static_cast<int64_t>(cur.size()) < n) cur.push_back(fill_with);
      out.push_back(Value::make_list(std::move(cur)));
    }
    return Value::make_list(std::move(out));
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (unsigned char c : as_text(v)) {
      const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value::integer(n);
  }
  if (name == "center") {
    const Value w = args.get(0, "width");
    CallArgs ca;
    ca.pos.push_back(is_intlike(w) ? w : Value::integer(80));
    return call_value(get_attribute(Value::string(as_text(v)), "center"), ca);
  }
  if (name == "format") {
    List fa = args.pos;
    return Value::string(percent_format(as_text(v), fa));
  }
  if (name == "e" || name == "escape") return escape_markup(v);
  if (name == "forceescape") return markup(html_escape(as_text(v)));
  if (name == "sum") {
    const Value attr = args.get(0, "attribute");
    Value total = args.has(1, "start") ? args.get(1, "start") : Value::integer(0);
    for (const auto& x : iterate(v)) {
      const Value y = attr_path(x, attr);
      if (is_intlike(total) && is_intlike(y)) total = Value::integer((total.kind == Kind::boolean ? total.b : total.i) + (y.kind == Kind::boolean ? y.b : y.i));
      else if (total.is_number() && y.is_number()) total = Value::floating(as_double(total) + as_double(y));
      else throw_type_error("unsupported operand type(s) for +: '" + type_name(total) + "' and '" + type_name(y) + "'");
    }
    return total;
  }
  if (name == "min" || name == "max") {
    const bool cs = truthy(args.get(0, "case_sensitive"));
    const Value attr = args.get(1, "attribute");
    const List items = iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    Value best = items[0];
    for (const auto& x : items) {
      const int c = compare(sort_key(attr_path(x, attr), cs), sort_key(attr_path(best, attr), cs), "<");
      if (name == "min" ? c < 0 : c > 0) best = x;
    }
    return best;
  }
  if (name == "attr") return get_attribute(v, to_str(args.get(0, "name")));
  if (name == "pprint") return Value::string(to_repr(v));
  if (name == "truncate") {
    const Value len_v = args.get(0, "length");
    const int64_t length = is_intlike(len_v) ? len_v.i : 255;
    const bool killwords = truthy(args.get(1, "killwords"));
    const std::string end = args.has(2, "end") ? to_str(args.get(2, "end")) : "...";
    const Value leeway_v = args.get(3, "leeway");
    const int64_t leeway = is_intlike(leeway_v) ? leeway_v.i : 5;
    const auto cps = code_points(as_text(v));
    const int64_t n = static_cast<int64_t>(cps.size());
    if (n <= length + leeway) return Value::string(as_text(v));
    const int64_t keep = std::max<int64_t>(0, length - static_cast<int64_t>(code_point_count(end)));
    std::string out;
    for (int64_t k = 0; k < keep; ++k) out += cps[static_cast<size_t>(k)];
    if (!killwords) {
      const size_t sp = out.rfind(' ');
      if (sp != std::string::npos) out.resize(sp);
    }
    return Value::string(out + end);
  }
  throw_template_error("No filter named '" + name + "'.");
}

bool has_filter(const std::string& name) {
  static const char* const names[] = {
      "tojson", "trim", "length", "count", "lower", "upper", "title", "capitalize", "replace", "join", "first", "last",
      "list", "items", "map", "select", "reject", "selectattr", "rejectattr", "default", "d", "string", "safe", "int",
      "float", "abs", "round", "indent", "unique", "sort", "dictsort", "reverse", "batch", "wordcount", "center",
      "format", "e", "escape", "sum", "min", "max", "attr", "pprint", "truncate", "forceescape"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

bool has_test(const std::string& name) {
  static const char* const names[] = {
      "defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable", "sequence",
      "boolean", "true", "false", "even", "odd", "divisibleby", "eq", "equalto", "==", "ne", "!=", "lt", "<",
      "lessthan", "gt", ">", "greaterthan", "le", "<=", "ge", ">=", "in", "callable", "sameas", "lower", "upper",
      "escaped", "filter", "test"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

bool apply_test(const std::string& name, const Value& v, CallArgs& args) {
  const Value other = args.get(0, "other");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == Kind::integer;
  if (name == "float") return v.kind == Kind::floating;
  if (name == "mapping") return v.is_dict() && !v.ns;
  if (name == "iterable") return v.is_string() || v.is_list() || (v.is_dict() && !v.ns) || v.is_undefined();
  if (name == "sequence") return v.is_string() || (v.is_list() && !v.generator) || (v.is_dict() && !v.ns);
  if (name == "boolean") return v.kind == Kind::boolean;
  if (name == "true") return v.kind == Kind::boolean && v.b;
  if (name == "false") return v.kind == Kind::boolean && !v.b;
  if (name == "even" || name == "odd") {
    if (v.is_undefined()) raise_undefined(v);
    if (v.kind == Kind::floating) {
      double r = std::fmod(v.f, 2.0);
      if (r < 0) r += 2.0;
      return name == "even" ? r == 0 : r == 1;
    }
    if (!is_intlike(v)) throw_type_error("not all arguments converted during string formatting");
    const int64_t x = v.kind == Kind::boolean ? v.b : v.i;
    return (x % 2 == 0) == (name == "even");
  }
  if (name == "divisibleby") {
    const Value n = args.get(0, "num");
    if (v.is_number() && n.is_number() && (!is_intlike(v) || !is_intlike(n))) {
      if (as_double(n) == 0) throw_type_error("float modulo");
      return std::fmod(as_double(v), as_double(n)) == 0;
    }
    if (!is_intlike(v) || !is_intlike(n)) throw_type_error("unsupported operand type(s) for %");
    if (n.i == 0) throw_type_error("integer division or modulo by zero");
    return v.i % n.i == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, other);
  if (name == "ne" || name == "!=") return !equals(v, other);
  if (name == "lt" || name == "<" || name == "lessthan") return compare(v, other, "<") < 0;
  if (name == "gt" || name == ">" || name == "greaterthan") return compare(v, other, ">") > 0;
  if (name == "le" || name == "<=") return compare(v, other, "<=") <= 0;
  if (name == "ge" || name == ">=") return compare(v, other, ">=") >= 0;
  if (name == "in") {
    const Value seq = args.get(0, "seq");
    if (seq.is_string()) return v.is_string() && seq.s.find(v.s) != std::string::npos;
    for (const auto& x : iterate(seq))
      if (equals(x, v)) return true;
    return false;
  }
  if (name == "callable") return v.kind == Kind::function || v.is_undefined();  // Undefined has __call__
  if (name == "sameas") {
    if (v.kind != other.kind) return false;
    if (v.is_list()) return v.list == other.list;
    if (v.is_dict()) return v.dict == other.dict;
    return equals(v, other);
  }
  if (name == "lower" || name == "upper") {
    const std::string s = to_str(v);
    bool cased = false;
    for (unsigned char c : s) {
      if (std::isupper(c)) { if (name == "lower") return false; cased = true; }
      if (std::islower(c)) { if (name == "upper") return false; cased = true; }
    }
    return cased;
  }
  if (name == "escaped") return v.is_string() && v.markup;
  if (name == "filter" || name == "test") {
    const std::string n = to_str(v);
    return name == "test" ? has_test(n) : has_filter(n);
  }
  throw_template_error("No test named '" + name + "'.");
}

}  // namespace tessera::chat
