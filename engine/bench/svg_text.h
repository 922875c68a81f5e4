#pragma once
// What the hand-written SVG plots (the roofline, bench serve's CDFs) share:
// numbers printed with a printf format, and text made safe inside a tag.
#include <cstdio>
#include <string>

namespace tessera::svg {

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

inline std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

}  // namespace tessera::svg
