#include "tools/tessera/connection_probe.h"

#include <dirent.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

namespace tessera::cli {

namespace {

// The descriptor whose peer is addr:port, numeric as httplib writes it
// (getnameinfo with NI_NUMERICHOST), or -1.
int find_socket(const std::string& addr, int port) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    if (getpeername((int)fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<sockaddr*>(&peer), len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
      continue;
    if (addr == host && port == std::atoi(serv)) {
      found = (int)fd;
      break;
    }
  }
  closedir(dir);
  return found;
}

}  // namespace

bool ConnectionProbe::client_gone() {
  if (fd_ == -2) fd_ = find_socket(addr_, port_);
  if (fd_ < 0) return false;
  // A request body is read whole before the handler runs, so what a peek
  // can see now is the next pipelined request (alive) or end-of-file (gone).
  char byte;
  const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  if (n == 0) return true;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace tessera::cli
