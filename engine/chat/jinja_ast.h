#pragma once
// The syntax tree of a parsed template: expressions and statements as jinja2's
// parser builds them, evaluated by jinja_eval.cpp.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/jinja_value.h"

namespace tessera::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class T {
    literal, name, list, tuple, dict, getattr, getitem, slice, call, filter, test,
    neg, pos, binary, compare, and_, or_, not_, cond,
  };
  T t;
  int line = 0;
  std::string name;                 // name, attribute, filter/test name, binary operator
  Value value;                      // literal
  std::vector<ExprPtr> args;        // operands, items, positional arguments (slice: obj, start, stop, step; absent = null)
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;     // compare: one operator per operand after the first
  bool negated = false;             // `is not`
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class T { text, output, if_, for_, set, set_block, macro, call_block, filter_block, break_, continue_, scope };
  T t;
  int line = 0;
  std::string text;                                  // text; macro name
  ExprPtr expr;                                      // output, set value, for iterable, call_block call
  ExprPtr target;                                    // set/for target (name, tuple, ns.attr)
  ExprPtr cond;                                      // for's inline if
  std::vector<std::pair<ExprPtr, Body>> branches;    // if/elif (else: null condition)
  Body body, else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters and defaults (null: none)
  std::vector<ExprPtr> filters;                      // filter block / set block filters (operand null)
  bool recursive = false;
};

struct Program {
  Body body;
};

}  // namespace tessera::chat
