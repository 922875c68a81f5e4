#include "core/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera {

namespace {
Status os_error(const std::string& path, const char* what, int err) {
  return io_error(path + ": " + what + ": " + std::strerror(err));
}
}  // namespace

Expected<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return os_error(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return os_error(path, "cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error(path + ": not a regular file");
  }
  MappedFile f;
  f.path_ = path;
  f.size_ = (uint64_t)st.st_size;
  if (f.size_ > 0) {
    void* addr = ::mmap(nullptr, (size_t)f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return os_error(path, "cannot mmap", err);
    }
    f.addr_ = addr;
  }
  ::close(fd);  // the mapping keeps the file alive
  return f;
}

bool MappedFile::release(std::span<const std::byte> range) const {
  const auto begin = reinterpret_cast<uintptr_t>(range.data()), end = begin + range.size();
  const auto map_begin = reinterpret_cast<uintptr_t>(addr_), map_end = map_begin + size_;
  if (!addr_ || begin < map_begin || end > map_end) return false;
  const uintptr_t page = (uintptr_t)::sysconf(_SC_PAGESIZE);
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  // A private read-only file map: the dropped pages are clean, and refault from the file.
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  return true;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), addr_(other.addr_), size_(other.size_) {
  other.addr_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    path_ = std::move(other.path_);
    addr_ = other.addr_;
    size_ = other.size_;
    other.addr_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (addr_) ::munmap(addr_, (size_t)size_);
  addr_ = nullptr;
  size_ = 0;
}

}  // namespace tessera
