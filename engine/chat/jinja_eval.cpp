#include "engine/chat/jinja_eval.h"

#include <cmath>
#include <memory>
#include <optional>

#include "engine/chat/jinja_builtins.h"
#include "engine/chat/jinja_markup.h"

namespace tessera::chat {
namespace {

// Macro recursion; Python stops at its own recursion limit, which real templates
// never approach. Each call costs several interpreter frames of stack.
constexpr int kMaxCallDepth = 64;

struct Scope {
  Dict vars;
  Scope* parent = nullptr;

  Value* find(const std::string& name) {
    for (Scope* s = this; s; s = s->parent)
      for (auto& [k, v] : s->vars)
        if (k == name) return &v;
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    for (auto& [k, x] : vars)
      if (k == name) { x = std::move(v); return; }
    vars.emplace_back(name, std::move(v));
  }
};

enum class Flow { normal, break_, continue_ };

int64_t as_int(const Value& v) { return v.kind == Kind::boolean ? v.b : v.i; }
bool is_intlike(const Value& v) { return v.kind == Kind::integer || v.kind == Kind::boolean; }

[[noreturn]] void unsupported_operands(const char* op, const Value& a, const Value& b) {
  throw_type_error(std::string("unsupported operand type(s) for ") + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value repeat(const Value& seq, int64_t n) {
  if (seq.is_string()) {
    std::string out;
    for (int64_t k = 0; k < n; ++k) out += seq.s;
    Value r = Value::string(std::move(out));
    r.markup = seq.markup;
    return r;
  }
  List out;
  for (int64_t k = 0; k < n; ++k) out.insert(out.end(), seq.list->begin(), seq.list->end());
  return Value::make_list(std::move(out), seq.tuple);
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value::string(to_str(a) + to_str(b));
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  const bool nums = a.is_number() && b.is_number();
  const bool ints = nums && is_intlike(a) && is_intlike(b);
  if (op == "+") {
    if (ints) return Value::integer(as_int(a) + as_int(b));
    if (nums) return Value::floating(as_double(a) + as_double(b));
    if (a.is_string() && b.is_string()) return a.markup || b.markup ? concat_markup(a, b) : Value::string(a.s + b.s);
    if ((a.is_string() && a.markup) || (b.is_string() && b.markup)) unsupported_operands("+", a, b);  // Markup.__add__: NotImplemented
    if (a.is_list() && b.is_list() && a.tuple == b.tuple && !a.generator && !b.generator) {
      List out = *a.list;
      out.insert(out.end(), b.list->begin(), b.list->end());
      return Value::make_list(std::move(out), a.tuple);
    }
    if (a.is_string()) throw_type_error("can only concatenate str (not \"" + type_name(b) + "\") to str");
    if (a.is_list() && !a.generator) throw_type_error("can only concatenate list (not \"" + type_name(b) + "\") to list");
    unsupported_operands("+", a, b);
  }
  if (op == "-") {
    if (ints) return Value::integer(as_int(a) - as_int(b));
    if (nums) return Value::floating(as_double(a) - as_double(b));
    unsupported_operands("-", a, b);
  }
  if (op == "*") {
    if (ints) return Value::integer(as_int(a) * as_int(b));
    if (nums) return Value::floating(as_double(a) * as_double(b));
    if ((a.is_string() || a.is_list()) && is_intlike(b)) return repeat(a, as_int(b));
    if ((b.is_string() || b.is_list()) && is_intlike(a)) return repeat(b, as_int(a));
    unsupported_operands("*", a, b);
  }
  if (op == "/") {
    if (!nums) unsupported_operands("/", a, b);
    if (as_double(b) == 0) throw_type_error("division by zero");
    return Value::floating(as_double(a) / as_double(b));
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string()) {
      CallArgs args;
      if (b.is_list() && b.tuple) args.pos = *b.list;
      else args.pos.push_back(b);
      return apply_filter("format", a, args);
    }
    if (!nums) unsupported_operands(op.c_str(), a, b);
    if (ints) {
      if (as_int(b) == 0) throw_type_error("integer division or modulo by zero");
      const int64_t q = floor_div(as_int(a), as_int(b));
      return Value::integer(op == "//" ? q : as_int(a) - q * as_int(b));
    }
    const double x = as_double(a), y = as_double(b);
    if (y == 0) throw_type_error(op == "//" ? "float floor division by zero" : "float modulo");
    const double q = std::floor(x / y);
    if (op == "//") return Value::floating(q);
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value::floating(r);
  }
  if (op == "**") {
    if (!nums) unsupported_operands("** or pow()", a, b);
    if (ints && as_int(b) >= 0) {
      int64_t r = 1, base = as_int(a);
      for (int64_t e = as_int(b); e > 0; --e) r *= base;
      return Value::integer(r);
    }
    return Value::floating(std::pow(as_double(a), as_double(b)));
  }
  throw_type_error("unknown operator " + op);
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Kind::undefined: return false;
    case Kind::string:
      if (!item.is_string())
        throw_type_error("'in <string>' requires string as left operand, not " + type_name(item));
      return container.s.find(item.s) != std::string::npos;
    case Kind::list:
      for (const auto& x : *container.list)
        if (equals(x, item)) return true;
      return false;
    case Kind::dict:
      if (item.is_list() && !item.tuple) throw_type_error("unhashable type: 'list'");
      if (item.is_dict()) throw_type_error("unhashable type: 'dict'");
      if (item.is_list() || item.is_undefined()) return false;  // tuples: not a key tessera stores
      return container.find(dict_key(item)) != nullptr;
    default: throw_type_error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

class Interpreter {
 public:
  explicit Interpreter(std::shared_ptr<Program> program) : program_(std::move(program)) {}

  std::string run(const Value& variables) {
    add_globals(root_.vars);
    if (variables.is_dict())
      for (const auto& [k, v] : *variables.dict) root_.set(k, v);
    Scope top{{}, &root_};
    std::string out;
    if (exec(program_->body, top, out) != Flow::normal) throw_template_error("break or continue outside of a loop");
    return out;
  }

 private:
  Flow exec(const Body& body, Scope& scope, std::string& out) {
    for (const auto& s : body) {
      const Flow f = exec(*s, scope, out);
      if (f != Flow::normal) return f;
    }
    return Flow::normal;
  }

  Flow exec(const Stmt& s, Scope& scope, std::string& out) {
    switch (s.t) {
      case Stmt::T::text: out += s.text; return Flow::normal;
      case Stmt::T::output: {
        const Value v = eval(*s.expr, scope);
        out += to_str(v);
        return Flow::normal;
      }
      case Stmt::T::if_:
        for (const auto& [cond, body] : s.branches)
          if (!cond || truthy(eval(*cond, scope))) return exec(body, scope, out);
        return Flow::normal;
      case Stmt::T::for_: return exec_for(s, scope, out);
      case Stmt::T::set: assign(*s.target, eval(*s.expr, scope), scope); return Flow::normal;
      case Stmt::T::set_block: {
        std::string text;
        Scope inner{{}, &scope};
        // break/continue leave the loop around the block before the assignment (jinja2).
        if (const Flow f = exec(s.body, inner, text); f != Flow::normal) return f;
        Value v = Value::string(std::move(text));
        for (const auto& f : s.filters) v = filter(*f, v, scope);
        assign(*s.target, std::move(v), scope);
        return Flow::normal;
      }
      case Stmt::T::macro: scope.set(s.text, make_macro(s, scope)); return Flow::normal;
      case Stmt::T::call_block: {
        const Expr& call = *s.expr;
        Value caller = make_macro(s, scope);
        Value fn = eval(*call.args[0], scope);
        CallArgs args = eval_args(call, scope);
        args.kw.emplace_back("caller", caller);
        out += to_str(call_value(fn, args));
        return Flow::normal;
      }
      case Stmt::T::filter_block: {
        std::string text;
        // break/continue leave the loop around the block before its text is written (jinja2).
        Scope inner{{}, &scope};  // what the block sets stays inside it
        if (const Flow f = exec(s.body, inner, text); f != Flow::normal) return f;
        Value v = Value::string(std::move(text));
        for (const auto& fe : s.filters) v = filter(*fe, v, scope);
        out += to_str(v);
        return Flow::normal;
      }
      case Stmt::T::break_: return Flow::break_;
      case Stmt::T::continue_: return Flow::continue_;
      case Stmt::T::scope: {
        Scope inner{{}, &scope};
        for (const auto& [name, e] : s.params) inner.set(name, eval(*e, scope));
        return exec(s.body, inner, out);
      }
    }
    return Flow::normal;
  }

  void unpack(const Expr& target, const Value& v, Scope& scope) {
    if (target.t == Expr::T::name) {
      scope.set(target.name, v);
      return;
    }
    if (target.t == Expr::T::tuple) {
      const List items = iterate(v);
      if (items.size() != target.args.size()) {
        throw_type_error(items.size() < target.args.size()
                             ? "not enough values to unpack (expected " + std::to_string(target.args.size()) + ", got " +
                                   std::to_string(items.size()) + ")"
                             : "too many values to unpack (expected " + std::to_string(target.args.size()) + ")");
      }
      for (size_t k = 0; k < items.size(); ++k) unpack(*target.args[k], items[k], scope);
      return;
    }
    throw_template_error("can't assign to this target");
  }

  void assign(const Expr& target, Value v, Scope& scope) {
    if (target.t == Expr::T::getattr) {
      Value obj = eval(*target.args[0], scope);
      if (!obj.is_dict() || !obj.ns) throw_template_error("cannot assign attribute on non-namespace object");
      Value* slot = obj.find(target.name);
      if (slot) *slot = std::move(v);
      else obj.dict->emplace_back(target.name, std::move(v));
      return;
    }
    unpack(target, v, scope);
  }

  Flow exec_for(const Stmt& s, Scope& scope, std::string& out) { return run_loop(s, scope, eval(*s.expr, scope), 0, out); }

  // One for loop over `seq_value` at `depth0` (deeper for each `loop(items)`
  // of a recursive loop, which renders the same body over `items`).
  Flow run_loop(const Stmt& s, Scope& scope, const Value& seq_value, int64_t depth0, std::string& out) {
    List seq = iterate(seq_value);
    Scope inner{{}, &scope};
    if (s.cond) {
      List kept;
      for (const auto& item : seq) {
        unpack(*s.target, item, inner);
        if (truthy(eval(*s.cond, inner))) kept.push_back(item);
      }
      seq = std::move(kept);
    }
    if (seq.empty()) return exec(s.else_body, scope, out);
    const int64_t n = static_cast<int64_t>(seq.size());
    // loop.changed(*values): true when the values differ from those of its last call (first call: true).
    auto last_changed = std::make_shared<std::optional<Value>>();
    std::shared_ptr<Function> recurse;
    if (s.recursive) {
      recurse = std::make_shared<Function>([this, &s, &scope, depth0](CallArgs& a) -> Value {
        if (++call_depth_ > kMaxCallDepth) {
          --call_depth_;
          throw_type_error("maximum recursion depth exceeded");
        }
        std::string text;
        run_loop(s, scope, a.get(0, "iterable"), depth0 + 1, text);
        --call_depth_;
        return Value::string(std::move(text));
      });
    }
    for (int64_t k = 0; k < n; ++k) {
      Value loop = Value::make_dict({
          {"index", Value::integer(k + 1)},
          {"index0", Value::integer(k)},
          {"revindex", Value::integer(n - k)},
          {"revindex0", Value::integer(n - k - 1)},
          {"first", Value::boolean(k == 0)},
          {"last", Value::boolean(k == n - 1)},
          {"length", Value::integer(n)},
          {"depth", Value::integer(depth0 + 1)},
          {"depth0", Value::integer(depth0)},
      });
      loop.ns = true;
      loop.fn = recurse;  // callable only in a recursive loop
      if (k > 0) loop.dict->emplace_back("previtem", seq[k - 1]);
      else loop.dict->emplace_back("previtem", Value::undefined("'previtem' is undefined"));
      if (k + 1 < n) loop.dict->emplace_back("nextitem", seq[k + 1]);
      else loop.dict->emplace_back("nextitem", Value::undefined("'nextitem' is undefined"));
      loop.dict->emplace_back("cycle", Value::function([k](CallArgs& a) -> Value {
        if (a.pos.empty()) throw_type_error("no items for cycling given");
        return a.pos[static_cast<size_t>(k) % a.pos.size()];
      }));
      loop.dict->emplace_back("changed", Value::function([last_changed](CallArgs& a) -> Value {
        Value now = Value::make_list(a.pos, true);
        if (*last_changed && equals(**last_changed, now)) return Value::boolean(false);
        *last_changed = std::move(now);
        return Value::boolean(true);
      }));
      // Each iteration starts afresh: what the body set last time is gone (jinja2).
      Scope iteration{{}, &scope};
      iteration.set("loop", loop);
      unpack(*s.target, seq[k], iteration);
      const Flow f = exec(s.body, iteration, out);
      if (f == Flow::break_) break;
    }
    return Flow::normal;
  }

  Value make_macro(const Stmt& s, Scope& scope) {
    const Stmt* def = &s;
    Scope* closure = &scope;
    auto program = program_;
    return Value::function([this, def, closure, program](CallArgs& args) -> Value {
      if (++call_depth_ > kMaxCallDepth) {
        --call_depth_;
        throw_type_error("maximum recursion depth exceeded");
      }
      struct Guard { int& d; ~Guard() { --d; } } guard{call_depth_};
      Scope frame{{}, closure};
      const size_t n = def->params.size();
      List varargs;
      for (size_t k = 0; k < args.pos.size(); ++k) {
        if (k < n) frame.set(def->params[k].first, args.pos[k]);
        else varargs.push_back(args.pos[k]);
      }
      Dict kwargs;
      for (auto& [key, v] : args.kw) {
        bool is_param = key == "caller";
        for (const auto& p : def->params) is_param = is_param || p.first == key;
        if (is_param) frame.set(key, v);
        else kwargs.emplace_back(key, v);
      }
      for (size_t k = args.pos.size(); k < n; ++k) {
        const auto& [pname, pdef] = def->params[k];
        bool given = false;
        for (const auto& [key, v] : args.kw) given = given || key == pname;
        if (!given) frame.set(pname, pdef ? eval(*pdef, frame) : Value::undefined("'" + pname + "' is undefined"));
      }
      frame.set("varargs", Value::make_list(std::move(varargs), true));
      frame.set("kwargs", Value::make_dict(std::move(kwargs)));
      std::string text;
      exec(def->body, frame, text);
      return Value::string(std::move(text));
    });
  }

  CallArgs eval_args(const Expr& e, Scope& scope, size_t first = 1) {
    CallArgs args;
    for (size_t k = first; k < e.args.size(); ++k) args.pos.push_back(eval(*e.args[k], scope));
    for (const auto& [name, x] : e.kwargs) args.kw.emplace_back(name, eval(*x, scope));
    return args;
  }

  Value filter(const Expr& f, const Value& operand, Scope& scope) {
    CallArgs args = eval_args(f, scope);
    // Only where the parser let an unknown name through (find_unknown_filter_or_test).
    if (!has_filter(f.name)) throw_template_error("No filter named '" + f.name + "' found.");
    return apply_filter(f.name, operand, args);
  }

  Value eval(const Expr& e, Scope& scope) {
    switch (e.t) {
      case Expr::T::literal: return e.value;
      case Expr::T::name: {
        if (Value* v = scope.find(e.name)) return *v;
        return Value::undefined("'" + e.name + "' is undefined");
      }
      case Expr::T::list:
      case Expr::T::tuple: {
        List items;
        for (const auto& x : e.args) items.push_back(eval(*x, scope));
        return Value::make_list(std::move(items), e.t == Expr::T::tuple);
      }
      case Expr::T::dict: {
        Value d = Value::make_dict();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          const Value key = eval(*e.args[k], scope);
          Value v = eval(*e.args[k + 1], scope);
          if (Value* slot = d.find(dict_key(key))) *slot = std::move(v);
          else d.dict->emplace_back(dict_key_as_written(key), std::move(v));
        }
        return d;
      }
      case Expr::T::getattr: {
        const Value obj = eval(*e.args[0], scope);
        if (obj.is_undefined()) raise_undefined(obj);
        return get_attribute(obj, e.name);
      }
      case Expr::T::getitem: {
        const Value obj = eval(*e.args[0], scope);
        if (obj.is_undefined()) raise_undefined(obj);
        return get_item(obj, eval(*e.args[1], scope));
      }
      case Expr::T::slice: {
        const Value obj = eval(*e.args[0], scope);
        if (obj.is_undefined()) raise_undefined(obj);
        auto part = [&](size_t k) { return e.args[k] ? eval(*e.args[k], scope) : Value::none(); };
        return slice(obj, part(1), part(2), part(3));
      }
      case Expr::T::call: {
        const Value fn = eval(*e.args[0], scope);
        CallArgs args = eval_args(e, scope);
        return call_value(fn, args);
      }
      case Expr::T::filter: {
        const Value operand = e.args[0] ? eval(*e.args[0], scope) : Value::undefined();
        return filter(e, operand, scope);
      }
      case Expr::T::test: {
        const Value operand = eval(*e.args[0], scope);
        CallArgs args = eval_args(e, scope);
        if (!has_test(e.name)) throw_template_error("No test named '" + e.name + "' found.");
        return Value::boolean(apply_test(e.name, operand, args) != e.negated);
      }
      case Expr::T::neg:
      case Expr::T::pos: {
        const Value v = eval(*e.args[0], scope);
        if (v.is_undefined()) raise_undefined(v);
        if (!v.is_number()) throw_type_error(std::string("bad operand type for unary ") + (e.t == Expr::T::neg ? "-" : "+") + ": '" + type_name(v) + "'");
        if (e.t == Expr::T::pos) return is_intlike(v) ? Value::integer(as_int(v)) : v;
        return is_intlike(v) ? Value::integer(-as_int(v)) : Value::floating(-v.f);
      }
      case Expr::T::binary: {
        const Value left = eval(*e.args[0], scope);  // left first, as Python does
        return binary_op(e.name, left, eval(*e.args[1], scope));
      }
      case Expr::T::compare: {
        Value left = eval(*e.args[0], scope);
        for (size_t k = 0; k < e.ops.size(); ++k) {
          Value right = eval(*e.args[k + 1], scope);
          const std::string& op = e.ops[k];
          bool r;
          if (op == "==") r = equals(left, right);
          else if (op == "!=") r = !equals(left, right);
          else if (op == "in") r = contains(right, left);
          else if (op == "notin") r = !contains(right, left);
          else {
            const int c = compare(left, right, op.c_str());
            r = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
          }
          if (!r) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case Expr::T::and_: {
        Value l = eval(*e.args[0], scope);
        return truthy(l) ? eval(*e.args[1], scope) : l;
      }
      case Expr::T::or_: {
        Value l = eval(*e.args[0], scope);
        return truthy(l) ? l : eval(*e.args[1], scope);
      }
      case Expr::T::not_: return Value::boolean(!truthy(eval(*e.args[0], scope)));
      case Expr::T::cond: {
        if (truthy(eval(*e.args[1], scope))) return eval(*e.args[0], scope);
        if (e.args[2]) return eval(*e.args[2], scope);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
      }
    }
    return Value::undefined();
  }

  std::shared_ptr<Program> program_;
  Scope root_;
  int call_depth_ = 0;
};

}  // namespace

std::string render_program(const std::shared_ptr<Program>& program, const Value& variables) {
  Interpreter interp(program);
  return interp.run(variables);
}

}  // namespace tessera::chat
