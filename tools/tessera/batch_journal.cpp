#include "tools/tessera/batch_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace tessera::cli {

std::string BatchJournal::key_for(const std::string& custom_id, int64_t line) {
  return custom_id.empty() ? "#line " + std::to_string(line) : custom_id;
}

std::string BatchJournal::key_of(const std::string& json_line) {
  const nlohmann::json j = nlohmann::json::parse(json_line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("custom_id")) return {};
  if (j["custom_id"].is_string() && !j["custom_id"].get<std::string>().empty()) return j["custom_id"].get<std::string>();
  if (j["custom_id"].is_null() && j.contains("line") && j["line"].is_number_integer()) return key_for("", j["line"].get<int64_t>());
  return {};
}

Expected<BatchJournal> BatchJournal::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(path + ": cannot open for writing: " + std::strerror(errno));
  BatchJournal j(path, fd);
  std::string text;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(path + ": cannot read: " + std::strerror(errno));
    }
    text.append(buf, (size_t)n);
  }
  // Complete lines are done; what follows the last newline was torn by a kill.
  size_t start = 0;
  int64_t line = 1;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1, ++line) {
    const std::string l = text.substr(start, nl - start);
    if (l.empty()) continue;
    const std::string key = key_of(l);
    if (key.empty()) return invalid_argument(path + ":" + std::to_string(line) + ": not a line of tessera batch's output (custom_id missing)");
    j.done_.insert(key);
  }
  j.torn_bytes_ = (int64_t)(text.size() - start);
  if (j.torn_bytes_ > 0 && ::ftruncate(fd, (off_t)start) != 0) return io_error(path + ": cannot cut the torn last line: " + std::strerror(errno));
  if (::lseek(fd, 0, SEEK_END) < 0) return io_error(path + ": cannot seek: " + std::strerror(errno));
  return j;
}

BatchJournal::BatchJournal(BatchJournal&& o) noexcept
    : path_(std::move(o.path_)), fd_(o.fd_), done_(std::move(o.done_)), torn_bytes_(o.torn_bytes_) {
  o.fd_ = -1;
}

BatchJournal::~BatchJournal() {
  if (fd_ >= 0) ::close(fd_);
}

Status BatchJournal::append(const std::string& key, const std::string& json_line) {
  const std::string out = json_line + "\n";
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::write(fd_, out.data() + off, out.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(path_ + ": cannot write: " + std::strerror(errno));
    }
    off += (size_t)n;
  }
  if (::fdatasync(fd_) != 0) return io_error(path_ + ": cannot sync: " + std::strerror(errno));
  done_.insert(key);
  return Status::ok();
}

}  // namespace tessera::cli
