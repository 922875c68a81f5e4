#pragma once
// tessera batch's output file as a journal: every complete line is one
// finished request, so a run killed at any moment (SIGKILL included) and
// started again with the same arguments skips what is there and finishes
// the rest. Each line goes out in one write() followed by fdatasync(), so a
// kill can tear only the last line; open() cuts a torn tail off before
// anything is appended.
#include <cstdint>
#include <string>
#include <unordered_set>

#include <tessera/status.h>

namespace tessera::cli {

class BatchJournal {
 public:
  // Creates the file, or resumes it: the keys of its complete lines (see
  // key_of) are done. A complete line that is not one of ours is an error
  // naming the file and line: the file is not this batch's output.
  static Expected<BatchJournal> open(const std::string& path);
  BatchJournal(BatchJournal&& other) noexcept;
  BatchJournal& operator=(BatchJournal&&) = delete;
  ~BatchJournal();

  bool done(const std::string& key) const { return done_.count(key) != 0; }
  size_t num_done() const { return done_.size(); }
  int64_t torn_bytes() const { return torn_bytes_; }  // cut off at open
  // Appends one JSON object (no newline inside) and makes it durable.
  Status append(const std::string& key, const std::string& json_line);

  // A request's key: its custom_id, or "#line N" for an input line that has none.
  static std::string key_for(const std::string& custom_id, int64_t line);
  // The key of an output line, or empty when the line is not one of ours.
  static std::string key_of(const std::string& json_line);

 private:
  BatchJournal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  std::unordered_set<std::string> done_;
  int64_t torn_bytes_ = 0;
};

}  // namespace tessera::cli
