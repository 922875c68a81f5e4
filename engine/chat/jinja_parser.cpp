#include "engine/chat/jinja_parser.h"

#include "engine/chat/jinja_names.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>

#include "engine/chat/jinja_lexer.h"

namespace tessera::chat {
namespace {

struct SyntaxError {
  std::string message;
  int line;
};

// Deeper templates are refused rather than overflowing the stack: nested
// blocks and brackets count, and so does each link of a chain like a + b + c,
// since the tree it builds is as deep as the chain is long.
constexpr int kMaxNesting = 500;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  std::shared_ptr<Program> program() {
    auto p = std::make_shared<Program>();
    p->body = subparse({});
    if (cur().t != Token::T::eof) fail("unexpected '" + cur().text + "'");
    return p;
  }

 private:
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  void next() { if (pos_ + 1 < toks_.size()) ++pos_; }
  [[noreturn]] void fail(const std::string& m) const { throw SyntaxError{m, cur().line}; }
  bool is_op(const char* op) const { return cur().t == Token::T::op && cur().text == op; }
  bool is_name(const char* n) const { return cur().t == Token::T::name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected token '") + op + "', got '" + describe() + "'");
  }
  std::string describe() const {
    switch (cur().t) {
      case Token::T::eof: return "end of template";
      case Token::T::block_end: return "end of statement block";
      case Token::T::var_end: return "end of print statement";
      default: return cur().text;
    }
  }
  void expect_block_end() {
    if (cur().t != Token::T::block_end) fail("expected token 'end of statement block', got '" + describe() + "'");
    next();
  }
  std::string expect_name() {
    if (cur().t != Token::T::name) fail("expected token 'name', got '" + describe() + "'");
    std::string n = cur().text;
    next();
    return n;
  }

  // One more link of a left-assoc chain; `links` is given back when the chain ends.
  void chain_link(int& links) {
    ++links;
    if (++depth_ > kMaxNesting) fail("expression nested too deeply");
  }
  struct ChainGuard {
    Parser& p;
    int links = 0;
    ~ChainGuard() { p.depth_ -= links; }
  };

  struct Depth {
    explicit Depth(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail("template nested too deeply");
    }
    ~Depth() { --p_.depth_; }
    Parser& p_;
  };

  ExprPtr make(Expr::T t, int line) {
    auto e = std::make_unique<Expr>();
    e->t = t;
    e->line = line;
    return e;
  }

  // Statements until a block whose tag is one of `ends`; the tag name is left current.
  Body subparse(std::initializer_list<const char*> ends) {
    Depth d(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.t == Token::T::eof) {
        if (ends.size()) fail(std::string("Unexpected end of template. Jinja was looking for the following tags: '") + *ends.begin() + "'.");
        return body;
      }
      if (t.t == Token::T::text) {
        auto s = std::make_unique<Stmt>();
        s->t = Stmt::T::text;
        s->text = t.text;
        s->line = t.line;
        body.push_back(std::move(s));
        next();
      } else if (t.t == Token::T::var_begin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->t = Stmt::T::output;
        s->line = t.line;
        s->expr = parse_tuple(true);
        if (cur().t != Token::T::var_end) fail("expected token 'end of print statement', got '" + describe() + "'");
        next();
        body.push_back(std::move(s));
      } else if (t.t == Token::T::block_begin) {
        next();
        if (cur().t != Token::T::name) fail("tag name expected");
        for (const char* e : ends)
          if (cur().text == e) return body;
        body.push_back(statement());
      } else {
        fail("unexpected '" + describe() + "'");
      }
    }
  }

  std::unique_ptr<Stmt> statement() {
    const std::string tag = cur().text;
    const int line = cur().line;
    auto s = std::make_unique<Stmt>();
    s->line = line;
    next();
    if (tag == "if") {
      s->t = Stmt::T::if_;
      ExprPtr c = parse_tuple(false, false);  // jinja2: no `a if b else c` as an if's test
      while (true) {
        expect_block_end();
        Body b = subparse({"elif", "else", "endif"});
        s->branches.emplace_back(std::move(c), std::move(b));
        if (skip_name("elif")) { c = parse_tuple(false, false); continue; }
        if (skip_name("else")) {
          expect_block_end();
          s->branches.emplace_back(nullptr, subparse({"endif"}));
          next();
          break;
        }
        next();  // endif
        break;
      }
      expect_block_end();
    } else if (tag == "for") {
      s->t = Stmt::T::for_;
      s->target = parse_assign_target(true);
      if (!skip_name("in")) fail("expected token 'in', got '" + describe() + "'");
      s->expr = parse_tuple(false, false);
      if (skip_name("if")) s->cond = parse_tuple(false);
      if (skip_name("recursive")) s->recursive = true;
      expect_block_end();
      ++loop_depth_;
      s->body = subparse({"endfor", "else"});
      --loop_depth_;
      if (skip_name("else")) {
        expect_block_end();
        s->else_body = subparse({"endfor"});
      }
      next();
      expect_block_end();
    } else if (tag == "set") {
      s->target = parse_assign_target(false);
      if (skip_op("=")) {
        s->t = Stmt::T::set;
        s->expr = parse_tuple(false);
        expect_block_end();
      } else {
        s->t = Stmt::T::set_block;
        while (skip_op("|")) s->filters.push_back(parse_filter_call(nullptr));
        expect_block_end();
        s->body = subparse({"endset"});
        next();
        expect_block_end();
      }
    } else if (tag == "macro") {
      s->t = Stmt::T::macro;
      s->text = expect_name();
      parse_signature(*s);
      expect_block_end();
      const int outer_loops = loop_depth_;
      loop_depth_ = 0;  // a macro body is a function of its own: no loop around it
      s->body = subparse({"endmacro"});
      loop_depth_ = outer_loops;
      next();
      if (cur().t == Token::T::name) next();  // {% endmacro name %}
      expect_block_end();
    } else if (tag == "call") {
      s->t = Stmt::T::call_block;
      if (is_op("(")) parse_signature(*s);
      s->expr = parse_expression(true);
      if (s->expr->t != Expr::T::call) fail("expected call");
      expect_block_end();
      const int outer_loops = loop_depth_;
      loop_depth_ = 0;
      s->body = subparse({"endcall"});
      loop_depth_ = outer_loops;
      next();
      expect_block_end();
    } else if (tag == "filter") {
      s->t = Stmt::T::filter_block;
      do {
        s->filters.push_back(parse_filter_call(nullptr));
      } while (skip_op("|"));
      expect_block_end();
      s->body = subparse({"endfilter"});
      next();
      expect_block_end();
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail("'" + tag + "' outside of a loop");
      s->t = tag == "break" ? Stmt::T::break_ : Stmt::T::continue_;
      expect_block_end();
    } else if (tag == "generation") {
      s->t = Stmt::T::scope;
      expect_block_end();
      s->body = subparse({"endgeneration"});
      next();
      expect_block_end();
    } else if (tag == "with") {
      s->t = Stmt::T::scope;
      while (cur().t != Token::T::block_end) {
        if (!s->params.empty()) expect_op(",");
        std::string n = expect_name();
        expect_op("=");
        s->params.emplace_back(n, parse_expression(true));
      }
      expect_block_end();
      s->body = subparse({"endwith"});
      next();
      expect_block_end();
    } else {
      fail("Encountered unknown tag '" + tag + "'.");
    }
    return s;
  }

  void parse_signature(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      if (is_op(")")) break;
      std::string n = expect_name();
      ExprPtr def;
      if (skip_op("=")) def = parse_expression(true);
      s.params.emplace_back(std::move(n), std::move(def));
    }
    expect_op(")");
  }

  // for/set targets: a name, `a, b`, `(a, b)`, or (set only) `ns.attr`.
  ExprPtr parse_assign_target(bool for_loop) {
    const int line = cur().line;
    auto one = [&]() -> ExprPtr {
      if (skip_op("(")) {
        ExprPtr t = parse_assign_target(for_loop);
        expect_op(")");
        return t;
      }
      auto e = make(Expr::T::name, cur().line);
      e->name = expect_name();
      if (!for_loop && is_op(".")) {
        next();
        auto a = make(Expr::T::getattr, line);
        a->name = expect_name();
        a->args.push_back(std::move(e));
        return a;
      }
      return e;
    };
    ExprPtr first = one();
    if (!is_op(",")) return first;
    auto tup = make(Expr::T::tuple, line);
    tup->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (is_name("in") || is_op("=") || cur().t == Token::T::block_end) break;
      tup->args.push_back(one());
    }
    return tup;
  }

  // A comma-separated list becomes a tuple: `{{ a, b }}`, `for x in a, b`.
  ExprPtr parse_tuple(bool allow_empty, bool with_condexpr = true) {
    const int line = cur().line;
    auto item = [&] { return with_condexpr ? parse_expression(true) : parse_or(); };
    auto ends = [&] {
      return cur().t == Token::T::var_end || cur().t == Token::T::block_end || is_op(")") ||
             is_name("in") || is_name("if") || is_name("recursive") || is_op("=");
    };
    if (ends()) {
      if (!allow_empty) fail("Expected an expression, got '" + describe() + "'");
      return make(Expr::T::tuple, line);
    }
    ExprPtr first = item();
    if (!is_op(",")) return first;
    auto tup = make(Expr::T::tuple, line);
    tup->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (ends()) break;
      tup->args.push_back(item());
    }
    return tup;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    Depth d(*this);
    ExprPtr e = parse_or();
    if (!with_condexpr) return e;
    ChainGuard g{*this};
    while (is_name("if")) {
      chain_link(g.links);
      const int line = cur().line;
      next();
      auto c = make(Expr::T::cond, line);
      ExprPtr cond = parse_or();
      ExprPtr other;
      if (skip_name("else")) other = parse_expression(true);
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(other));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    ChainGuard g{*this};
    while (is_name("or")) {
      chain_link(g.links);
      auto e = make(Expr::T::or_, cur().line);
      next();
      e->args.push_back(std::move(l));
      e->args.push_back(parse_and());
      l = std::move(e);
    }
    return l;
  }

  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    ChainGuard g{*this};
    while (is_name("and")) {
      chain_link(g.links);
      auto e = make(Expr::T::and_, cur().line);
      next();
      e->args.push_back(std::move(l));
      e->args.push_back(parse_not());
      l = std::move(e);
    }
    return l;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      Depth d(*this);
      auto e = make(Expr::T::not_, cur().line);
      next();
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().t == Token::T::op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
                                     cur().text == "<=" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().t == Token::T::name && peek().text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::T::compare, line);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    auto e = make(Expr::T::binary, line);
    e->name = op;
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr l = parse_concat();
    ChainGuard g{*this};
    while (is_op("+") || is_op("-")) {
      chain_link(g.links);
      const std::string op = cur().text;
      const int line = cur().line;
      next();
      l = binary(op, std::move(l), parse_concat(), line);
    }
    return l;
  }

  ExprPtr parse_concat() {
    ExprPtr l = parse_math2();
    ChainGuard g{*this};
    while (is_op("~")) {
      chain_link(g.links);
      const int line = cur().line;
      next();
      l = binary("~", std::move(l), parse_math2(), line);
    }
    return l;
  }

  ExprPtr parse_math2() {
    ExprPtr l = parse_pow();
    ChainGuard g{*this};
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      chain_link(g.links);
      const std::string op = cur().text;
      const int line = cur().line;
      next();
      l = binary(op, std::move(l), parse_pow(), line);
    }
    return l;
  }

  ExprPtr parse_pow() {
    ExprPtr l = parse_unary(true);
    ChainGuard g{*this};
    while (is_op("**")) {
      chain_link(g.links);
      const int line = cur().line;
      next();
      l = binary("**", std::move(l), parse_unary(true), line);
    }
    return l;
  }

  ExprPtr parse_unary(bool with_filter) {
    Depth d(*this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      auto e = make(is_op("-") ? Expr::T::neg : Expr::T::pos, cur().line);
      next();
      e->args.push_back(parse_unary(false));
      node = std::move(e);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    const int line = t.line;
    switch (t.t) {
      case Token::T::name: {
        const std::string n = t.text;
        next();
        auto e = make(Expr::T::literal, line);
        if (n == "true" || n == "True") e->value = Value::boolean(true);
        else if (n == "false" || n == "False") e->value = Value::boolean(false);
        else if (n == "none" || n == "None") e->value = Value::none();
        else {
          e->t = Expr::T::name;
          e->name = n;
        }
        return e;
      }
      case Token::T::string: {
        std::string v;
        while (cur().t == Token::T::string) {
          v += cur().text;
          next();
        }
        auto e = make(Expr::T::literal, line);
        e->value = Value::string(std::move(v));
        return e;
      }
      case Token::T::integer: {
        auto e = make(Expr::T::literal, line);
        int64_t x = 0;
        auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), x);
        if (ec != std::errc()) e->value = Value::floating(std::strtod(t.text.c_str(), nullptr));
        else e->value = Value::integer(x);
        next();
        return e;
      }
      case Token::T::floating: {
        auto e = make(Expr::T::literal, line);
        e->value = Value::floating(std::strtod(t.text.c_str(), nullptr));
        next();
        return e;
      }
      case Token::T::op:
        if (t.text == "(") {
          next();
          ExprPtr e = parse_tuple(true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          next();
          auto e = make(Expr::T::list, line);
          while (!is_op("]")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("]")) break;
            e->args.push_back(parse_expression(true));
          }
          expect_op("]");
          return e;
        }
        if (t.text == "{") {
          next();
          auto e = make(Expr::T::dict, line);
          while (!is_op("}")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("}")) break;
            e->args.push_back(parse_expression(true));
            expect_op(":");
            e->args.push_back(parse_expression(true));
          }
          expect_op("}");
          return e;
        }
        break;
      default: break;
    }
    fail("unexpected '" + describe() + "'");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    ChainGuard g{*this};
    while (true) {
      if (is_op(".") || is_op("[") || is_op("(")) chain_link(g.links);
      const int line = cur().line;
      if (is_op(".")) {
        next();
        if (cur().t == Token::T::name) {
          auto e = make(Expr::T::getattr, line);
          e->name = cur().text;
          next();
          e->args.push_back(std::move(node));
          node = std::move(e);
        } else if (cur().t == Token::T::integer) {
          auto e = make(Expr::T::getitem, line);
          auto k = make(Expr::T::literal, line);
          k->value = Value::integer(std::atoll(cur().text.c_str()));
          next();
          e->args.push_back(std::move(node));
          e->args.push_back(std::move(k));
          node = std::move(e);
        } else {
          fail("expected name or number");
        }
      } else if (is_op("[")) {
        next();
        node = parse_subscript(std::move(node), line);
        expect_op("]");
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, int line) {
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    while (true) {
      if (is_op(":")) {
        is_slice = true;
        next();
        if (++part > 2) fail("invalid slice");
        continue;
      }
      if (is_op("]")) break;
      if (parts[part]) fail("expected ']'");
      parts[part] = parse_expression(true);
      if (!is_slice && is_op(",")) {  // x[a, b]: a tuple key
        auto tup = make(Expr::T::tuple, line);
        tup->args.push_back(std::move(parts[0]));
        while (skip_op(",")) {
          if (is_op("]")) break;
          tup->args.push_back(parse_expression(true));
        }
        parts[0] = std::move(tup);
      }
    }
    if (!is_slice) {
      if (!parts[0]) fail("expected an index");
      auto e = make(Expr::T::getitem, line);
      e->args.push_back(std::move(obj));
      e->args.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make(Expr::T::slice, line);
    e->args.push_back(std::move(obj));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return e;
  }

  void parse_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (cur().t == Token::T::name && peek().t == Token::T::op && peek().text == "=") {
        std::string k = cur().text;
        next();
        next();
        e.kwargs.emplace_back(std::move(k), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) fail("positional argument follows keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr fn) {
    auto e = make(Expr::T::call, cur().line);
    e->args.push_back(std::move(fn));
    parse_args(*e);
    return e;
  }

  // `name(.name)*[(args)]` after a `|`; the operand is args[0] (null in filter blocks).
  ExprPtr parse_filter_call(ExprPtr operand) {
    auto e = make(Expr::T::filter, cur().line);
    e->name = expect_name();
    while (skip_op(".")) e->name += "." + expect_name();
    e->args.push_back(std::move(operand));
    if (is_op("(")) parse_args(*e);
    return e;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    ChainGuard g{*this};
    while (true) {
      if (is_op("|") || is_name("is") || is_op("(")) chain_link(g.links);
      if (is_op("|")) {
        next();
        node = parse_filter_call(std::move(node));
      } else if (is_name("is")) {
        next();
        auto e = make(Expr::T::test, cur().line);
        if (skip_name("not")) e->negated = true;
        e->name = expect_name();
        while (skip_op(".")) e->name += "." + expect_name();
        e->args.push_back(std::move(node));
        if (is_op("(")) {
          parse_args(*e);
        } else if ((cur().t == Token::T::name || cur().t == Token::T::string || cur().t == Token::T::integer ||
                    cur().t == Token::T::floating || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if") && !is_name("in") &&
                   !is_name("is") && !is_name("not") && !is_name("recursive")) {
          e->args.push_back(parse_postfix(parse_primary()));
        }
        node = std::move(e);
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;  // for loops around the current statement; break/continue need one
};

}  // namespace

ParseResult parse_template(const std::string& raw_source) {
  // As jinja2 does: every newline sequence becomes \n and one trailing newline
  // is dropped (keep_trailing_newline=False).
  std::string source;
  source.reserve(raw_source.size());
  for (size_t k = 0; k < raw_source.size(); ++k) {
    if (raw_source[k] == '\r') {
      source += '\n';
      if (k + 1 < raw_source.size() && raw_source[k + 1] == '\n') ++k;
    } else {
      source += raw_source[k];
    }
  }
  if (!source.empty() && source.back() == '\n') source.pop_back();
  LexResult lex = lex_template(source);
  if (!lex.error.empty()) return {nullptr, lex.error};
  try {
    Parser p(std::move(lex.tokens));
    std::shared_ptr<Program> program = p.program();
    if (auto unknown = find_unknown_filter_or_test(*program)) return {nullptr, "line " + std::to_string(unknown->first) + ": " + unknown->second};
    return {program, ""};
  } catch (const SyntaxError& e) {
    return {nullptr, "line " + std::to_string(e.line) + ": " + e.message};
  }
}

}  // namespace tessera::chat
