#pragma once
// Helpers for the format tests: a scratch directory under /tmp, whole-file
// reads and writes, and a little-endian byte builder for hand-made files.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::testing {

inline std::string shared_path(const std::string& rel) { return std::string(TESSERA_SHARED_DIR) + "/" + rel; }

// A fresh directory, removed with everything in it when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/tessera_formats_XXXXXX";
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
    REQUIRE_MESSAGE(!path_.empty(), "mkdtemp failed");
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), (std::streamsize)bytes.size());
  REQUIRE(out.good());
}

class ByteBuilder {
 public:
  template <class T>
  ByteBuilder& put(T v) {
    append(&v, sizeof(T));
    return *this;
  }
  ByteBuilder& u32(uint32_t v) { return put(v); }
  ByteBuilder& u64(uint64_t v) { return put(v); }
  ByteBuilder& str(const std::string& s) {
    u64(s.size());
    append(s.data(), s.size());
    return *this;
  }
  ByteBuilder& raw(const std::string& s) {
    append(s.data(), s.size());
    return *this;
  }
  ByteBuilder& zeros(size_t n) {
    bytes.resize(bytes.size() + n, 0);
    return *this;
  }
  ByteBuilder& pad_to(size_t alignment) { return zeros((alignment - bytes.size() % alignment) % alignment); }
  std::vector<uint8_t> bytes;

 private:
  // resize + memcpy rather than insert: GCC 12 warns falsely on the latter.
  void append(const void* p, size_t n) {
    const size_t at = bytes.size();
    bytes.resize(at + n);
    if (n) std::memcpy(bytes.data() + at, p, n);
  }
};

// The message is one line and holds every one of `parts`.
inline void check_message(const Status& s, std::initializer_list<std::string> parts) {
  REQUIRE_FALSE(s.is_ok());
  INFO("message: " << s.message());
  CHECK(s.message().find('\n') == std::string::npos);
  for (const auto& p : parts) CHECK_MESSAGE(s.message().find(p) != std::string::npos, "missing '" << p << "'");
}

}  // namespace tessera::testing
