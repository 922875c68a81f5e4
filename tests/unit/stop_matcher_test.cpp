// Stop strings over streamed text against the whole-text definition: join
// every push, cut before the earliest text.find(stop) of any stop string.
// Also that nothing is held back that could not become a stop string.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/serving/stop_matcher.h"
#include "support/random.h"

using tessera::StopMatcher;
using namespace tessera::testing;

namespace {

struct Outcome {
  std::string text;
  bool stopped = false;
};

// The definition, on the whole text.
Outcome reference(const std::string& all, const std::vector<std::string>& stop) {
  size_t first = std::string::npos;
  for (const std::string& s : stop) first = std::min(first, all.find(s));
  if (first == std::string::npos) return {all, false};
  return {all.substr(0, first), true};
}

bool proper_prefix_of_a_stop(std::string_view tail, const std::vector<std::string>& stop) {
  return std::any_of(stop.begin(), stop.end(),
                     [&](const std::string& s) { return s.size() > tail.size() && s.starts_with(tail); });
}

// Streams `chunks`, checking after each push that what is held back is only
// what may still become a stop string.
Outcome streamed(const std::vector<std::string>& chunks, const std::vector<std::string>& stop) {
  StopMatcher m(stop);
  Outcome out;
  std::string pushed;
  size_t longest = 0;
  for (const std::string& s : stop) longest = std::max(longest, s.size());
  for (const std::string& c : chunks) {
    pushed += c;
    const bool was_stopped = out.stopped;
    StopMatcher::Result r = m.push(c);
    if (was_stopped) REQUIRE(r.text.empty());
    out.text += r.text;
    out.stopped = r.stopped;
    if (out.stopped) continue;
    // Emitted + held is everything pushed, and the hold starts at the first
    // place whose rest may still become a stop string.
    REQUIRE(out.text + std::string(m.held()) == pushed);
    REQUIRE(m.held().size() < std::max<size_t>(longest, 1));
    if (!m.held().empty()) REQUIRE(proper_prefix_of_a_stop(m.held(), stop));
    const size_t from = pushed.size() > longest ? pushed.size() - longest : 0;
    for (size_t at = from; at < out.text.size(); ++at) {
      REQUIRE_MESSAGE(!proper_prefix_of_a_stop(std::string_view(pushed).substr(at), stop),
                      "text from byte " << at << " of '" << pushed << "' was emitted but may still become a stop string");
    }
  }
  if (!out.stopped) {
    StopMatcher::Result r = m.flush();
    out.text += r.text;
    out.stopped = r.stopped;
  }
  if (out.stopped) CHECK(m.stop_index() >= 0);
  return out;
}

std::vector<std::string> cut(const std::string& text, Rng& rng) {
  std::vector<std::string> chunks;
  for (size_t at = 0; at < text.size() || chunks.empty();) {
    const size_t n = (size_t)rng.integer(0, 5);  // empty pushes too
    chunks.push_back(text.substr(at, n));
    at += n;
  }
  return chunks;
}

std::string random_text(Rng& rng, const std::string& alphabet, int max_len) {
  std::string s;
  for (int i = rng.integer(0, max_len); i > 0; --i) s += alphabet[(size_t)rng.integer(0, (int)alphabet.size() - 1)];
  return s;
}

void check_case(const std::vector<std::string>& chunks, const std::vector<std::string>& stop) {
  std::string all;
  for (const auto& c : chunks) all += c;
  const Outcome want = reference(all, stop);
  const Outcome got = streamed(chunks, stop);
  CHECK(got.text == want.text);
  CHECK(got.stopped == want.stopped);
}

}  // namespace

TEST_CASE("stop strings over random text cut at random places stop exactly where the whole text's first match is") {
  Rng rng(301);
  for (int trial = 0; trial < 20000; ++trial) {
    // A three-letter alphabet makes matches, near-matches and overlaps common.
    std::vector<std::string> stop;
    for (int i = rng.integer(0, 4); i > 0; --i) {
      std::string s = random_text(rng, "abc", 5);
      if (s.empty()) s = "a";
      stop.push_back(s);
    }
    const std::string text = random_text(rng, "abc", 40);
    const std::vector<std::string> chunks = cut(text, rng);
    std::string stops, pushes;
    for (const auto& s : stop) stops += "'" + s + "' ";
    for (const auto& c : chunks) pushes += "'" + c + "' ";
    CAPTURE(stops);
    CAPTURE(pushes);
    const Outcome want = reference(text, stop);
    const Outcome got = streamed(chunks, stop);
    REQUIRE(got.text == want.text);
    REQUIRE(got.stopped == want.stopped);
  }
}

TEST_CASE("a stop string spanning many pushes is not emitted, and nothing after it is") {
  const std::vector<std::string> stop = {"<|im_end|>"};
  std::vector<std::string> chunks = {"Hello", " wor", "ld<", "|im", "_", "end", "|>", " more", " text"};
  check_case(chunks, stop);
  StopMatcher m(stop);
  CHECK(m.push("Hello").text == "Hello");
  CHECK(m.push(" wor").text == " wor");
  CHECK(m.push("ld<").text == "ld");  // "<" may start the stop string
  CHECK(m.push("|im").text.empty());
  const StopMatcher::Result end = m.push("_end|>tail");
  CHECK(end.text.empty());
  CHECK(end.stopped);
  CHECK(m.stop_index() == 0);
  const StopMatcher::Result after = m.push(" more");
  CHECK(after.text.empty());
  CHECK(after.stopped);
  CHECK(m.flush().text.empty());
}

TEST_CASE("overlapping candidates: 'ab' beside 'abc', 'aab' with stop 'ab', a stop at the very start") {
  check_case({"xa", "b", "cd"}, {"abc", "ab"});
  check_case({"xab"}, {"abc", "ab"});
  {
    StopMatcher m({"ab"});
    CHECK(m.push("a").text.empty());
    CHECK(m.push("a").text == "a");  // the first 'a' cannot start "ab" any more
    const StopMatcher::Result r = m.push("b");
    CHECK(r.text.empty());
    CHECK(r.stopped);
  }
  {
    StopMatcher m({"stop"});
    const StopMatcher::Result r = m.push("stop here");
    CHECK(r.text.empty());
    CHECK(r.stopped);
  }
  check_case({"s", "t", "o", "p"}, {"stop"});
}

TEST_CASE("several stop strings: the one that starts first wins, even when a later one completes first") {
  check_case({"hello END", "\n\nbye"}, {"\n\n", "END"});
  {
    StopMatcher m({"\n\n", "END"});
    const StopMatcher::Result r = m.push("a\n\nEND");
    CHECK(r.text == "a");
    CHECK(m.stop_index() == 0);
  }
  // "bc" completes inside "abc" while "abcd" may still: the text waits.
  {
    StopMatcher m({"abcd", "bc"});
    CHECK(m.push("ab").text.empty());
    const StopMatcher::Result waiting = m.push("c");
    CHECK(waiting.text.empty());
    CHECK_FALSE(waiting.stopped);
    const StopMatcher::Result r = m.push("x");
    CHECK(r.text == "a");
    CHECK(r.stopped);
    CHECK(m.stop_index() == 1);
  }
  {
    StopMatcher m({"abcd", "bc"});
    CHECK(m.push("abc").text.empty());
    const StopMatcher::Result r = m.push("d");
    CHECK(r.text.empty());
    CHECK(r.stopped);
    CHECK(m.stop_index() == 0);
  }
  {
    // The sequence ends while it waits: flush() stops at the shorter one.
    StopMatcher m({"abcd", "bc"});
    CHECK(m.push("abc").text.empty());
    const StopMatcher::Result r = m.flush();
    CHECK(r.text == "a");
    CHECK(r.stopped);
  }
}

TEST_CASE("without a match every byte comes out, the held tail at flush") {
  StopMatcher m({"zzz", "\xE2\x80\x94"});  // an em dash, three bytes
  CHECK(m.push("abc").text == "abc");
  CHECK(m.push("zz").text.empty());
  CHECK(m.push("\xE2\x80").text == "zz");
  const StopMatcher::Result r = m.flush();
  CHECK(r.text == "\xE2\x80");
  CHECK_FALSE(r.stopped);
  CHECK(m.stop_index() == -1);

  StopMatcher none({});
  CHECK(none.push("anything at all").text == "anything at all");
  CHECK(none.flush().text.empty());
}

TEST_CASE("an empty stop string is refused naming stop and its index") {
  CHECK(tessera::validate_stop_strings({}).is_ok());
  CHECK(tessera::validate_stop_strings({"a", "\n"}).is_ok());
  const tessera::Status s = tessera::validate_stop_strings({"ok", ""});
  CHECK(s.code() == tessera::StatusCode::invalid_argument);
  CHECK(s.message() == "stop[1]: must not be empty");
}
