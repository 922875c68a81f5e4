#pragma once
// markupsafe's Markup, as jinja2 uses it with autoescape off: `|safe` and
// `|escape` make a Markup string, printed as it is, but whose arithmetic and
// methods HTML-escape the plain strings they take in. Templates that write
// `"..."|safe + text` (Functionary's) print `text` escaped; Python does.
#include <string>

#include "engine/chat/jinja_value.h"

namespace tessera::chat {

// & < > " ' as markupsafe writes them (&amp; &lt; &gt; &#34; &#39;).
std::string html_escape(const std::string& s);
Value markup(std::string text);
// markupsafe.escape: a Markup as it is; anything else str()'d and escaped.
Value escape_markup(const Value& v);
// Markup + str, str + Markup: the plain side escaped, the result Markup.
// Both are strings and at least one is Markup.
Value concat_markup(const Value& a, const Value& b);
// The filters that keep a Markup operand Markup (jinja2 applies them to
// soft_str(value)); `format` and `replace` escape their plain string arguments.
bool filter_keeps_markup(const std::string& name);
// A method of a Markup string: its string arguments escaped, its string (or
// list of strings) result Markup, as markupsafe's wrappers do.
Value markup_method(const std::string& name, Value method);
void escape_string_args(CallArgs& args);

}  // namespace tessera::chat
