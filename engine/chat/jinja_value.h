#pragma once
// The values a chat template computes with, modelled on the Python objects
// jinja2 hands around: None, bool, int, float, str, list/tuple, dict, callables,
// and jinja2's Undefined. Printing and comparison follow Python's rules so that
// rendered text matches Python jinja2 byte for byte.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::chat {

// A template failure. `template_error` mirrors Python's class: jinja2's
// TemplateError (raise_exception, UndefinedError, SecurityError) is true; the
// TypeError/ValueError family a Python render would crash with is false.
struct JinjaError : std::runtime_error {
  JinjaError(const std::string& m, bool is_template_error) : std::runtime_error(m), template_error(is_template_error) {}
  bool template_error;
};
[[noreturn]] void throw_template_error(const std::string& message);
[[noreturn]] void throw_type_error(const std::string& message);

enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, function };

struct Value;
struct CallArgs;
using Dict = std::vector<std::pair<std::string, Value>>;
using List = std::vector<Value>;
using Function = std::function<Value(CallArgs&)>;

struct Value {
  Kind kind = Kind::undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // string; for undefined, the message an access would raise
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;
  std::shared_ptr<Function> fn;  // a function; on a dict, calling it (a recursive loop's `loop`)
  bool tuple = false;      // a list that prints as a tuple
  bool ns = false;         // a namespace(): the one mutable dict
  bool unsafe = false;     // undefined from a sandbox refusal (SecurityError)
  bool range = false;      // a list made by range(): repr is `s`, "range(0, 4)"
  bool markup = false;     // a string that is markupsafe's Markup (jinja_markup.h)
  // A list that is a Python generator (what map, select, reject, selectattr,
  // rejectattr and unique give): always true, no len(), not JSON, not
  // indexable, and spent by the first iteration (iterate() empties it
  // for every copy; a loop that breaks early spends it all here, Python
  // keeps the rest); `s` names the function ("sync_do_map").
  bool generator = false;

  static Value undefined(std::string hint = {}) { Value v; v.s = std::move(hint); return v; }
  static Value none() { Value v; v.kind = Kind::none; return v; }
  static Value boolean(bool x) { Value v; v.kind = Kind::boolean; v.b = x; return v; }
  static Value integer(int64_t x) { Value v; v.kind = Kind::integer; v.i = x; return v; }
  static Value floating(double x) { Value v; v.kind = Kind::floating; v.f = x; return v; }
  static Value string(std::string x) { Value v; v.kind = Kind::string; v.s = std::move(x); return v; }
  static Value make_list(List items = {}, bool is_tuple = false) {
    Value v; v.kind = Kind::list; v.list = std::make_shared<List>(std::move(items)); v.tuple = is_tuple; return v;
  }
  static Value make_dict(Dict items = {}) { Value v; v.kind = Kind::dict; v.dict = std::make_shared<Dict>(std::move(items)); return v; }
  static Value make_generator(List items, std::string function_name) {
    Value v = make_list(std::move(items));
    v.generator = true;
    v.s = std::move(function_name);
    return v;
  }
  static Value function(Function f) { Value v; v.kind = Kind::function; v.fn = std::make_shared<Function>(std::move(f)); return v; }

  bool is_undefined() const { return kind == Kind::undefined; }
  bool is_none() const { return kind == Kind::none; }
  bool is_string() const { return kind == Kind::string; }
  bool is_number() const { return kind == Kind::integer || kind == Kind::floating || kind == Kind::boolean; }
  bool is_list() const { return kind == Kind::list; }
  bool is_dict() const { return kind == Kind::dict; }
  const Value* find(const std::string& key) const;  // dict lookup, nullptr when absent
  Value* find(const std::string& key);
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The argument named `name` or at `index`, removed from kw when taken; undefined when absent.
  Value get(size_t index, const std::string& name) const;
  bool has(size_t index, const std::string& name) const;
};

// Dict keys. A str key is its own text; any other hashable key (int, bool,
// float, None) is stored as "\xff" and a tag, which no str key (valid UTF-8)
// can start with, so {16384: 1024} and {"16384": 1024} stay apart. As in
// Python, True and 1.0 are the key 1. Lists and dicts are unhashable (TypeError).
std::string dict_key(const Value& key);
// The key to store: dict_key, plus how a bool or a whole float was written
// (Python keeps the first key object: {True: 1} prints as written, and is d[1]).
std::string dict_key_as_written(const Value& key);
Value key_value(const std::string& stored);  // the key as a Value again

// Python semantics.
bool truthy(const Value& v);
std::string to_str(const Value& v);    // str(v)
std::string to_repr(const Value& v);   // repr(v)
std::string float_repr(double d);
std::string type_name(const Value& v);  // "dict", "list", "str", ...
std::string object_type_repr(const Value& v);  // jinja2's "dict object", "None"
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b, const char* op);  // <0, 0, >0; TypeError when unordered
double as_double(const Value& v);
// Undefined raises on use: its message, as a TemplateError (UndefinedError or SecurityError).
[[noreturn]] void raise_undefined(const Value& v);
Value undefined_attribute(const Value& obj, const Value& name);

// Items a for loop visits: list elements, dict keys, string characters. A
// generator is spent by it.
List iterate(const Value& v);
int64_t length(const Value& v);

// UTF-8 strings indexed by code point, as Python does.
std::vector<std::string> code_points(const std::string& s);
size_t code_point_count(const std::string& s);

// JSON in and out: variables arrive as JSON (object key order kept); tojson is
// Python's json.dumps(ensure_ascii=False) with its default separators.
Value from_json(const nlohmann::ordered_json& j);
struct DumpOptions {
  int indent = -1;            // -1: no newlines
  std::string indent_text;    // used when non-empty (indent given as a string)
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};
std::string dumps(const Value& v, const DumpOptions& options);
std::string json_quote(const std::string& s);  // a JSON string as Python writes it (ensure_ascii=False)

}  // namespace tessera::chat
