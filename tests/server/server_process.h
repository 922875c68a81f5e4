#pragma once
// `tessera serve` run as a child process, as a user runs it: started on a
// free port (read from its "listening on" line), polled until /health says
// ready, stopped with SIGTERM. Plus the small HTTP and SSE helpers the
// server tests share (cpp-httplib's client).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli.h"

namespace tessera::testing {

using json = nlohmann::json;

class ServerProcess {
 public:
  // `tessera serve --port 0 ARGS...` (under `launcher`, e.g. mpirun -np 2,
  // where given); REQUIREs that it listens and becomes healthy.
  explicit ServerProcess(std::vector<std::string> args, std::vector<std::string> launcher = {}) {
    int out[2];
    REQUIRE(pipe(out) == 0);
    err_path_ = temp_dir() + "/serve" + std::to_string(getpid()) + "_" + std::to_string(counter()++) + ".err";
    std::vector<std::string> argv = launcher;
    argv.insert(argv.end(), {TESSERA_BIN, "serve", "--port", "0"});
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(out[1], 1);
      const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (err >= 0) dup2(err, 2);
      close(out[0]);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execvp(cargv[0], cargv.data());
      _exit(127);
    }
    close(out[1]);
    out_fd_ = out[0];
    const std::string line = read_line(std::chrono::seconds(30));
    const std::string prefix = "listening on http://127.0.0.1:";
    REQUIRE_MESSAGE(line.rfind(prefix, 0) == 0, "tessera serve printed '" << line << "' first; stderr: " << stderr_text());
    port_ = std::stoi(line.substr(prefix.size()));
    // Listening comes first, the model after: /health is 503 until then.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
      auto r = client().Get("/health");
      if (r && r->status == 200) break;
      REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "the server never became healthy; stderr: " << stderr_text());
      REQUIRE_MESSAGE(alive(), "the server exited; stderr: " << stderr_text());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~ServerProcess() {
    if (pid_ > 0) stop();
    if (out_fd_ >= 0) close(out_fd_);
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c;
  }
  std::string stderr_text() const { return read_file(err_path_); }
  bool alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

  // SIGTERM without waiting: the server drains (stop() then gives its exit code).
  void terminate() {
    if (pid_ > 0) kill(pid_, SIGTERM);
  }

  // SIGTERM, then its exit code (-1 when it had to be killed after `wait`).
  int stop(std::chrono::seconds wait = std::chrono::seconds(30)) {
    if (pid_ <= 0) return exit_code_;
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    int status = 0;
    for (;;) {
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        exit_code_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    return exit_code_;
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::string read_line(std::chrono::seconds timeout) {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char c;
      if (read(out_fd_, &c, 1) != 1) break;
      if (c == '\n') return line;
      line += c;
    }
    return line;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int port_ = 0;
  int exit_code_ = -1;
  std::string err_path_;
};

inline std::string model_path(const std::string& name) { return shared_path("models/" + name); }

// POST a JSON body; the response's status and parsed body (null when not JSON).
struct JsonReply {
  int status = 0;
  json body;
  std::string text;
};
inline JsonReply post_json(httplib::Client& c, const std::string& path, const std::string& body, const httplib::Headers& headers = {}) {
  auto r = c.Post(path.c_str(), headers, body, "application/json");
  JsonReply out;
  if (!r) return out;
  out.status = r->status;
  out.text = r->body;
  out.body = json::parse(r->body, nullptr, false);
  if (out.body.is_discarded()) out.body = nullptr;
  return out;
}

// The SSE events of a body: each "data: X" payload, in order.
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> events;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string ev = body.substr(pos, end - pos);
    if (ev.rfind("data: ", 0) == 0) events.push_back(ev.substr(6));
    else events.push_back("<not data: " + ev + ">");
    pos = end + 2;
  }
  if (pos != body.size()) events.push_back("<trailing: " + body.substr(pos) + ">");
  return events;
}

// A streamed response's chunks (without [DONE]); REQUIREs the framing: every
// event "data: JSON", "data: [DONE]" last.
inline std::vector<json> stream_chunks(const std::string& body) {
  auto events = sse_payloads(body);
  REQUIRE_MESSAGE(!events.empty(), body);
  REQUIRE_MESSAGE(events.back() == "[DONE]", body);
  std::vector<json> chunks;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json j = json::parse(events[i], nullptr, false);
    REQUIRE_MESSAGE(!j.is_discarded(), "event " << i << " is not JSON: " << events[i]);
    chunks.push_back(std::move(j));
  }
  return chunks;
}

// /metrics: each sample line's value by its name with labels.
inline std::map<std::string, double> scrape(httplib::Client& c) {
  std::map<std::string, double> m;
  auto r = c.Get("/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.rfind(' ');
    REQUIRE_MESSAGE(sp != std::string::npos, line);
    m[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return m;
}

inline std::vector<int32_t> ints(const json& a) {
  std::vector<int32_t> v;
  for (const auto& x : a) v.push_back(x.get<int32_t>());
  return v;
}

}  // namespace tessera::testing
