#include "engine/chat/jinja_names.h"

#include "engine/chat/jinja_builtins.h"

namespace tessera::chat {

namespace {

struct NameCheck {
  std::optional<std::pair<int, std::string>> found;

  void expr(const Expr* e, bool soft) {
    if (!e || found) return;
    if (e->t == Expr::T::cond) soft = true;  // jinja2's visit_CondExpr: frame.soft()
    if (!soft && e->t == Expr::T::filter && !has_filter(e->name)) found.emplace(e->line, "No filter named '" + e->name + "'.");
    if (!soft && e->t == Expr::T::test && !has_test(e->name)) found.emplace(e->line, "No test named '" + e->name + "'.");
    for (const auto& a : e->args) expr(a.get(), soft);
    for (const auto& kw : e->kwargs) expr(kw.second.get(), soft);
  }

  void body(const Body& b, bool soft) {
    for (const auto& s : b) stmt(*s, soft);
  }

  // Inner frames (loops, macros, blocks) are never soft; an if's are.
  void stmt(const Stmt& s, bool soft) {
    if (found) return;
    switch (s.t) {
      case Stmt::T::if_:
        for (const auto& [cond, branch] : s.branches) {
          expr(cond.get(), true);
          body(branch, true);
        }
        return;
      case Stmt::T::for_:
        expr(s.expr.get(), soft);
        expr(s.cond.get(), false);
        body(s.body, false);
        body(s.else_body, false);
        return;
      case Stmt::T::set:
      case Stmt::T::output:
        expr(s.expr.get(), soft);
        expr(s.target.get(), soft);
        return;
      case Stmt::T::call_block:
        expr(s.expr.get(), soft);
        [[fallthrough]];
      case Stmt::T::macro:
        for (const auto& p : s.params) expr(p.second.get(), false);
        body(s.body, false);
        return;
      case Stmt::T::set_block:
      case Stmt::T::filter_block:
        for (const auto& f : s.filters) expr(f.get(), false);
        body(s.body, false);
        return;
      case Stmt::T::scope:  // with (its values are the outer frame's) and generation
        for (const auto& p : s.params) expr(p.second.get(), soft);
        body(s.body, false);
        return;
      case Stmt::T::text:
      case Stmt::T::break_:
      case Stmt::T::continue_:
        return;
    }
  }
};

}  // namespace

std::optional<std::pair<int, std::string>> find_unknown_filter_or_test(const Program& program) {
  NameCheck c;
  c.body(program.body, false);
  return c.found;
}

}  // namespace tessera::chat
