#pragma once
// Whether the client of a request is still there, for responses that are
// not streamed. cpp-httplib (0.11, Debian 12's) hands a handler the request
// but not its socket, and notices a closed connection only when it writes;
// a whole (non-streamed) response is written after generation ends, so a
// client that left would otherwise keep its request running to max_tokens.
// The probe finds the connection's socket among the process's descriptors
// by its peer address and port, once, and then peeks at it.
#include <string>

namespace tessera::cli {

class ConnectionProbe {
 public:
  // The peer as the request names it (httplib's remote_addr, remote_port).
  ConnectionProbe(std::string remote_addr, int remote_port) : addr_(std::move(remote_addr)), port_(remote_port) {}
  // True once the peer has closed the connection or it failed; never
  // blocks. False while the socket cannot be found (nothing is cancelled
  // on a guess).
  bool client_gone();

 private:
  std::string addr_;
  int port_ = 0;
  int fd_ = -2;  // -2: not looked up yet, -1: not found
};

}  // namespace tessera::cli
