#pragma once
// jinja2's filters, tests, globals and the Python methods a sandboxed template
// may call on str, dict and list values.
#include <string>

#include "engine/chat/jinja_value.h"

namespace tessera::chat {

// `value|name(args)`; throws JinjaError for an unknown filter or bad arguments.
Value apply_filter(const std::string& name, const Value& value, CallArgs& args);
// `value is name(args)`.
bool apply_test(const std::string& name, const Value& value, CallArgs& args);
bool has_filter(const std::string& name);  // what apply_filter implements
bool has_test(const std::string& name);

// `obj.name`: a method or attribute first, then a dict key (jinja2's getattr).
Value get_attribute(const Value& obj, const std::string& name);
// `obj[key]`: an item first, then an attribute (jinja2's getitem).
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// range, dict, namespace, raise_exception, strftime_now.
void add_globals(Dict& globals);

// Python's str methods and helpers the filters share.
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);
std::string py_lower(const std::string& s);
std::string py_upper(const std::string& s);
bool is_cased_letter(const std::string& code_point);  // one UTF-8 code point
std::vector<std::string> py_splitlines(const std::string& s, bool keepends);
Value call_value(const Value& fn, CallArgs& args);

}  // namespace tessera::chat
