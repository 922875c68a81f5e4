#pragma once
// Moving bytes between processes over UCX (UCP): one context and one worker
// per transport, a listener on a TCP address, endpoints to peers, tagged
// messages for control and bulk data, and one-sided puts into memory a peer
// registered (ucp_mem_map, a packed rkey, ucp_put_nbx). UCX picks the wire:
// RDMA where the machine has it, shared memory or TCP on loopback; nothing
// here restricts UCX_TLS.
//
// Every wait has a deadline (UcxOptions::timeout_ms): a peer that vanished
// is an io_error naming the ucp call, never a hang. Every UCX failure is a
// Status naming the ucp call and ucs_status_string.
//
// Thread-safe: one mutex guards the worker; a wait holds it only while it
// progresses the worker, so a thread receiving and another sending share one
// transport. Waits sleep on the worker's event descriptor between polls.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::disagg {

// "HOST:PORT" as a flag gives it; `flag` names the flag in the error.
struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string to_string() const { return host + ":" + std::to_string(port); }
};
Expected<HostPort> parse_host_port(std::string_view text, std::string_view flag);

// Whether this build has UCX; without it every create() is `unsupported`
// with the one line "built without UCX".
bool ucx_available();

struct UcxOptions {
  int timeout_ms = 10000;  // the longest any one wait may take
};

// A peer connection, by number; 0 is none.
using EndpointId = uint64_t;

// A message received: who sent it is in its tag (the protocol puts it there).
struct UcxReceived {
  uint64_t tag = 0;
  size_t bytes = 0;
};

// Memory registered for one-sided access (ucp_mem_map): what a peer puts into.
class UcxMemory {
 public:
  virtual ~UcxMemory() = default;
  virtual std::byte* data() const = 0;
  virtual size_t size() const = 0;
  // The remote key a peer needs to put into this memory (ucp_rkey_pack).
  virtual Expected<std::vector<std::byte>> packed_rkey() const = 0;
};

// A send or receive in flight (send_async / recv_async): wait() finishes it.
class UcxPending {
 public:
  virtual ~UcxPending() = default;
  // Until done or timeout_ms (-1: the transport's timeout); on a timeout the
  // operation is cancelled (a send by closing its endpoint) before this returns.
  virtual Expected<UcxReceived> wait(int timeout_ms = -1) = 0;
  // Progresses for up to `ms`: the result once done, nullopt while still in
  // flight (nothing is cancelled: a receive matched to a large message keeps
  // its buffer until it completes).
  virtual Expected<std::optional<UcxReceived>> poll(int ms) = 0;
};

class UcxTransport {
 public:
  static Expected<std::unique_ptr<UcxTransport>> create(const UcxOptions& options = {});
  virtual ~UcxTransport() = default;

  // Listens on host:port (port 0: a free one, then listen_port() says which);
  // connections arrive through accept().
  virtual Status listen(const std::string& host, uint16_t port) = 0;
  virtual uint16_t listen_port() const = 0;
  // The next connection a peer made to the listener, waiting up to timeout_ms.
  virtual Expected<EndpointId> accept(int timeout_ms) = 0;
  virtual Expected<EndpointId> connect(const HostPort& peer) = 0;
  // Waits until everything sent on the endpoint has left this process and
  // reached the peer (ucp_ep_flush_nbx). A send completes once UCX holds the
  // bytes; over TCP the tail of a message may still sit in UCX's queue, and
  // only progress here pushes it out, so a sender that goes idle flushes.
  virtual Status flush(EndpointId ep) = 0;
  // Closes the endpoint (flushing what was sent); unknown ids are a no-op.
  virtual void close(EndpointId ep) = 0;

  // Tagged messages. send() returns when `bytes` may be reused (sent or
  // buffered by UCX). recv() takes the first message whose tag matches
  // (tag & mask) == (want & mask), from any peer, into `into`, which must be
  // large enough (a longer message is an error naming the buffer's size).
  // timeout_ms -1: the transport's.
  virtual Status send(EndpointId ep, uint64_t tag, std::span<const std::byte> bytes) = 0;
  virtual Expected<UcxReceived> recv(uint64_t want, uint64_t mask, std::span<std::byte> into, int timeout_ms = -1) = 0;
  // The same, not waiting: the buffers must live until wait() returns.
  virtual Expected<std::unique_ptr<UcxPending>> send_async(EndpointId ep, uint64_t tag, std::span<const std::byte> bytes) = 0;
  virtual Expected<std::unique_ptr<UcxPending>> recv_async(uint64_t want, uint64_t mask, std::span<std::byte> into) = 0;

  // One-sided: register memory (ucp_mem_map), and put local bytes at
  // remote_address of a peer's registered memory, given its packed rkey;
  // put() returns when the bytes are in the peer's memory (ucp_ep_flush_nbx).
  virtual Expected<std::unique_ptr<UcxMemory>> map(std::byte* data, size_t bytes) = 0;
  virtual Status put(EndpointId ep, std::span<const std::byte> local, uint64_t remote_address, std::span<const std::byte> packed_rkey) = 0;

  // Progresses the worker for up to `ms` (a peer's put into our memory over a
  // transport without hardware RMA needs the target to progress).
  virtual void progress_for(int ms) = 0;

  // The transports UCX chose for an endpoint ("tcp", "rc_mlx5", "posix"...), when it says.
  virtual std::string describe(EndpointId ep) const = 0;
};

}  // namespace tessera::disagg
