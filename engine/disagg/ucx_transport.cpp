#include "engine/disagg/ucx_transport.h"

#include <charconv>
#include <thread>

#if TESSERA_HAVE_UCX
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#endif

namespace tessera::disagg {

Expected<HostPort> parse_host_port(std::string_view text, std::string_view flag) {
  const size_t colon = text.rfind(':');
  const std::string f(flag);
  if (colon == std::string_view::npos || colon == 0)
    return invalid_argument(f + ": expected HOST:PORT, got '" + std::string(text) + "'");
  HostPort hp;
  hp.host = std::string(text.substr(0, colon));
  const std::string_view port = text.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535)
    return invalid_argument(f + ": port '" + std::string(port) + "' is not a number in [0, 65535]");
  hp.port = (uint16_t)value;
  return hp;
}

#if !TESSERA_HAVE_UCX

bool ucx_available() { return false; }
Expected<std::unique_ptr<UcxTransport>> UcxTransport::create(const UcxOptions&) { return unsupported("built without UCX"); }

#else

bool ucx_available() { return true; }

namespace {

using Clock = std::chrono::steady_clock;

Status ucx_error(const char* call, ucs_status_t st, const std::string& what = {}) {
  return io_error(std::string(call) + ": " + ucs_status_string(st) + (what.empty() ? "" : " (" + what + ")"));
}

// Resolves host (a name or a numeric address) to an IPv4/IPv6 sockaddr.
Expected<sockaddr_storage> resolve(const std::string& host, uint16_t port, socklen_t* len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = host.empty() ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || !res) return not_found("getaddrinfo: " + host + ": " + gai_strerror(rc));
  sockaddr_storage ss{};
  std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
  *len = (socklen_t)res->ai_addrlen;
  freeaddrinfo(res);
  return ss;
}

class UcxTransportImpl;

struct Endpoint {
  ucp_ep_h ep = nullptr;
  std::string peer;
  ucs_status_t failed = UCS_OK;  // set by the error handler: every later use reports it
};

// The per-endpoint error handler's user data: the transport and the id.
struct EpErrorArg {
  UcxTransportImpl* transport;
  EndpointId id;
};

class UcxMemoryImpl final : public UcxMemory {
 public:
  UcxMemoryImpl(ucp_context_h ctx, ucp_mem_h memh, std::byte* data, size_t size) : ctx_(ctx), memh_(memh), data_(data), size_(size) {}
  ~UcxMemoryImpl() override { ucp_mem_unmap(ctx_, memh_); }
  std::byte* data() const override { return data_; }
  size_t size() const override { return size_; }
  Expected<std::vector<std::byte>> packed_rkey() const override {
    void* buf = nullptr;
    size_t len = 0;
    const ucs_status_t st = ucp_rkey_pack(ctx_, memh_, &buf, &len);
    if (st != UCS_OK) return ucx_error("ucp_rkey_pack", st);
    std::vector<std::byte> out((const std::byte*)buf, (const std::byte*)buf + len);
    ucp_rkey_buffer_release(buf);
    return out;
  }

 private:
  ucp_context_h ctx_;
  ucp_mem_h memh_;
  std::byte* data_;
  size_t size_;
};

class UcxTransportImpl final : public UcxTransport {
 public:
  explicit UcxTransportImpl(const UcxOptions& o) : options_(o) {}
  ~UcxTransportImpl() override;
  Status init();

  Status listen(const std::string& host, uint16_t port) override;
  uint16_t listen_port() const override { return listen_port_; }
  Expected<EndpointId> accept(int timeout_ms) override;
  Expected<EndpointId> connect(const HostPort& peer) override;
  void close(EndpointId ep) override;
  Status flush(EndpointId ep) override;
  Status send(EndpointId ep, uint64_t tag, std::span<const std::byte> bytes) override;
  Expected<UcxReceived> recv(uint64_t want, uint64_t mask, std::span<std::byte> into, int timeout_ms) override;
  Expected<std::unique_ptr<UcxPending>> send_async(EndpointId ep, uint64_t tag, std::span<const std::byte> bytes) override;
  Expected<std::unique_ptr<UcxPending>> recv_async(uint64_t want, uint64_t mask, std::span<std::byte> into) override;
  Expected<std::unique_ptr<UcxMemory>> map(std::byte* data, size_t bytes) override;
  Status put(EndpointId ep, std::span<const std::byte> local, uint64_t remote_address, std::span<const std::byte> packed_rkey) override;
  void progress_for(int ms) override;
  std::string describe(EndpointId ep) const override;

  // Waits for a request (a pointer ucp_*_nbx returned) until done or the
  // deadline; returns its final status. On a timeout it cancels: a receive
  // by ucp_request_cancel, a send by force-closing `ep`.
  ucs_status_t wait_request(void* req, Clock::time_point deadline, EndpointId ep, ucp_tag_recv_info_t* info, bool* timed_out);
  // Progresses up to `ms` while the request runs; its status (freed) once
  // done, UCS_INPROGRESS (kept) otherwise.
  ucs_status_t poll_request(void* req, int ms, ucp_tag_recv_info_t* info) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(ms);
    auto last_progress = Clock::now();
    for (;;) {
      {
        std::lock_guard l(mu_);
        const ucs_status_t st = progress_and_test(req, info, last_progress);
        if (st != UCS_INPROGRESS) return st;
      }
      if (Clock::now() >= deadline) return UCS_INPROGRESS;
      idle(last_progress);
    }
  }
  // Under mu_: progresses the worker once (noting when it last moved) and
  // tests the request, which is freed once it is done.
  ucs_status_t progress_and_test(void* req, ucp_tag_recv_info_t* info, Clock::time_point& last_progress) {
    if (ucp_worker_progress(worker_) != 0) last_progress = Clock::now();
    const ucs_status_t st = info ? ucp_tag_recv_request_test(req, info) : ucp_request_check_status(req);
    if (st != UCS_INPROGRESS) ucp_request_free(req);
    return st;
  }
  // A transfer in flight moves every few microseconds, and a sleep on the
  // worker's descriptor costs about a millisecond to wake from over TCP (each
  // rendezvous step would pay it), so a wait spins (yielding: two cores, let
  // the peer's thread run) while the worker keeps making progress, and
  // sleeps only after kSpinWindow without any: an idle wait costs no core.
  void idle(Clock::time_point last_progress) {
    constexpr auto kSpinWindow = std::chrono::milliseconds(2);
    if (Clock::now() - last_progress < kSpinWindow) std::this_thread::yield();
    else progress_or_sleep(1);
  }
  void on_endpoint_error(EndpointId id, ucs_status_t st) {
    auto it = endpoints_.find(id);  // called inside progress, under mu_
    if (it != endpoints_.end()) it->second.failed = st;
  }
  const UcxOptions& options() const { return options_; }
  std::mutex& mutex() { return mu_; }

 private:
  static void on_connection(ucp_conn_request_h req, void* arg);
  // Progresses once; sleeps on the worker's descriptor for up to `ms` when
  // nothing moved. Takes mu_ itself.
  void progress_or_sleep(int ms);
  Expected<EndpointId> add_endpoint(const ucp_ep_params_t& base, std::string peer);
  Expected<ucp_ep_h> endpoint(EndpointId id);  // under mu_
  void force_close(ucp_ep_h ep);               // under mu_

  UcxOptions options_;
  mutable std::mutex mu_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  ucp_listener_h listener_ = nullptr;
  uint16_t listen_port_ = 0;
  std::map<EndpointId, Endpoint> endpoints_;
  std::map<EndpointId, std::unique_ptr<EpErrorArg>> error_args_;
  std::deque<ucp_conn_request_h> incoming_;
  EndpointId next_id_ = 1;
};

class PendingImpl final : public UcxPending {
 public:
  PendingImpl(UcxTransportImpl* t, void* req, EndpointId ep, const char* call, bool is_recv, size_t capacity)
      : t_(t), req_(req), ep_(ep), call_(call), is_recv_(is_recv), capacity_(capacity) {}
  // A receive nobody waits for any more is cancelled at once; a send is given
  // the transport's timeout to finish.
  ~PendingImpl() override {
    if (req_) (void)wait(is_recv_ ? 0 : -1);
  }
  void set_immediate(UcxReceived r) { immediate_ = r; }
  Expected<std::optional<UcxReceived>> poll(int ms) override {
    if (!req_) return std::optional<UcxReceived>(immediate_);
    ucp_tag_recv_info_t info{};
    const ucs_status_t st = t_->poll_request(req_, ms, is_recv_ ? &info : nullptr);
    if (st == UCS_INPROGRESS) return std::optional<UcxReceived>();
    req_ = nullptr;
    if (st == UCS_ERR_MESSAGE_TRUNCATED)
      return ucx_error(call_, st, "the message is longer than the " + std::to_string(capacity_) + "-byte buffer");
    if (st != UCS_OK) return ucx_error(call_, st);
    return std::optional<UcxReceived>(UcxReceived{info.sender_tag, info.length});
  }
  Expected<UcxReceived> wait(int timeout_ms) override {
    if (!req_) return immediate_;
    if (timeout_ms < 0) timeout_ms = t_->options().timeout_ms;
    ucp_tag_recv_info_t info{};
    bool timed_out = false;
    const ucs_status_t st =
        t_->wait_request(req_, Clock::now() + std::chrono::milliseconds(timeout_ms), ep_, is_recv_ ? &info : nullptr, &timed_out);
    req_ = nullptr;
    if (timed_out) return io_error(std::string(call_) + ": timed out after " + std::to_string(timeout_ms) + " ms");
    if (st == UCS_ERR_MESSAGE_TRUNCATED)
      return ucx_error(call_, st, "the message is longer than the " + std::to_string(capacity_) + "-byte buffer");
    if (st != UCS_OK) return ucx_error(call_, st);
    return UcxReceived{info.sender_tag, info.length};
  }

 private:
  UcxTransportImpl* t_;
  void* req_;
  EndpointId ep_;
  const char* call_;
  bool is_recv_;
  size_t capacity_;
  UcxReceived immediate_{};
};

void ep_error_handler(void* arg, ucp_ep_h, ucs_status_t st) {
  auto* a = (EpErrorArg*)arg;
  a->transport->on_endpoint_error(a->id, st);
}

Status UcxTransportImpl::init() {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucx_error("ucp_config_read", st);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) return ucx_error("ucp_init", st);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;  // mu_ serializes every call
  st = ucp_worker_create(context_, &wp, &worker_);
  if (st != UCS_OK) return ucx_error("ucp_worker_create", st);
  st = ucp_worker_get_efd(worker_, &efd_);
  if (st != UCS_OK) return ucx_error("ucp_worker_get_efd", st);
  return Status::ok();
}

UcxTransportImpl::~UcxTransportImpl() {
  std::lock_guard l(mu_);
  for (ucp_conn_request_h r : incoming_) ucp_listener_reject(listener_, r);
  if (listener_) ucp_listener_destroy(listener_);
  for (auto& [id, e] : endpoints_) force_close(e.ep);
  endpoints_.clear();
  if (worker_) ucp_worker_destroy(worker_);
  if (context_) ucp_cleanup(context_);
}

void UcxTransportImpl::on_connection(ucp_conn_request_h req, void* arg) {
  // Inside progress, under mu_: queued for accept().
  ((UcxTransportImpl*)arg)->incoming_.push_back(req);
}

Status UcxTransportImpl::listen(const std::string& host, uint16_t port) {
  socklen_t len = 0;
  TS_ASSIGN_OR_RETURN(sockaddr_storage ss, resolve(host, port, &len));
  ucp_listener_params_t p{};
  p.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  p.sockaddr.addr = (const sockaddr*)&ss;
  p.sockaddr.addrlen = len;
  p.conn_handler.cb = &UcxTransportImpl::on_connection;
  p.conn_handler.arg = this;
  std::lock_guard l(mu_);
  if (listener_) return invalid_argument("ucp_listener_create: this transport listens already");
  const ucs_status_t st = ucp_listener_create(worker_, &p, &listener_);
  if (st != UCS_OK) {
    listener_ = nullptr;
    return ucx_error("ucp_listener_create", st, host + ":" + std::to_string(port));
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  const ucs_status_t qs = ucp_listener_query(listener_, &attr);
  if (qs != UCS_OK) return ucx_error("ucp_listener_query", qs);
  const sockaddr* sa = (const sockaddr*)&attr.sockaddr;
  listen_port_ = ntohs(sa->sa_family == AF_INET6 ? ((const sockaddr_in6*)sa)->sin6_port : ((const sockaddr_in*)sa)->sin_port);
  return Status::ok();
}

Expected<EndpointId> UcxTransportImpl::add_endpoint(const ucp_ep_params_t& base, std::string peer) {
  // under mu_
  const EndpointId id = next_id_++;
  auto arg = std::make_unique<EpErrorArg>(EpErrorArg{this, id});
  ucp_ep_params_t p = base;
  // Peer error handling: a peer that goes away fails its requests instead of
  // leaving them waiting.
  p.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = &ep_error_handler;
  p.err_handler.arg = arg.get();
  ucp_ep_h ep = nullptr;
  const ucs_status_t st = ucp_ep_create(worker_, &p, &ep);
  if (st != UCS_OK) return ucx_error("ucp_ep_create", st, peer);
  endpoints_[id] = Endpoint{ep, std::move(peer), UCS_OK};
  error_args_[id] = std::move(arg);
  return id;
}

Expected<EndpointId> UcxTransportImpl::accept(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    {
      std::lock_guard l(mu_);
      if (!incoming_.empty()) {
        ucp_conn_request_h req = incoming_.front();
        incoming_.pop_front();
        ucp_conn_request_attr_t attr{};
        attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
        std::string peer = "a peer";
        if (ucp_conn_request_query(req, &attr) == UCS_OK) {
          char host[NI_MAXHOST], serv[NI_MAXSERV];
          if (getnameinfo((const sockaddr*)&attr.client_address, sizeof attr.client_address, host, sizeof host, serv, sizeof serv,
                          NI_NUMERICHOST | NI_NUMERICSERV) == 0)
            peer = std::string(host) + ":" + serv;
        }
        ucp_ep_params_t p{};
        p.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST;
        p.conn_request = req;
        return add_endpoint(p, std::move(peer));
      }
    }
    if (Clock::now() >= deadline) return io_error("ucp_listener: no connection within " + std::to_string(timeout_ms) + " ms");
    progress_or_sleep(5);
  }
}

Expected<EndpointId> UcxTransportImpl::connect(const HostPort& peer) {
  socklen_t len = 0;
  TS_ASSIGN_OR_RETURN(sockaddr_storage ss, resolve(peer.host, peer.port, &len));
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
  p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  p.sockaddr.addr = (const sockaddr*)&ss;
  p.sockaddr.addrlen = len;
  EndpointId id = 0;
  {
    std::lock_guard l(mu_);
    TS_ASSIGN_OR_RETURN(id, add_endpoint(p, peer.to_string()));
  }
  // The connection is made in the background; a flush waits for it, so a
  // peer that is not there fails here rather than at the first send.
  void* req = nullptr;
  {
    std::lock_guard l(mu_);
    ucp_request_param_t rp{};
    req = ucp_ep_flush_nbx(endpoints_[id].ep, &rp);
  }
  if (UCS_PTR_IS_ERR(req)) {
    close(id);
    return ucx_error("ucp_ep_flush_nbx", UCS_PTR_STATUS(req), "connecting to " + peer.to_string());
  }
  if (req) {
    bool timed_out = false;
    const ucs_status_t st = wait_request(req, Clock::now() + std::chrono::milliseconds(options_.timeout_ms), id, nullptr, &timed_out);
    if (timed_out || st != UCS_OK) {
      close(id);
      if (timed_out) return io_error("ucp_ep_create: connecting to " + peer.to_string() + " timed out after " + std::to_string(options_.timeout_ms) + " ms");
      return ucx_error("ucp_ep_create", st, "connecting to " + peer.to_string());
    }
  }
  std::lock_guard l(mu_);
  if (endpoints_[id].failed != UCS_OK) {
    const ucs_status_t st = endpoints_[id].failed;
    force_close(endpoints_[id].ep);
    endpoints_.erase(id);
    return ucx_error("ucp_ep_create", st, "connecting to " + peer.to_string());
  }
  return id;
}

void UcxTransportImpl::force_close(ucp_ep_h ep) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* req = ucp_ep_close_nbx(ep, &p);
  if (req && !UCS_PTR_IS_ERR(req)) {
    // A forced close completes without the peer; bounded anyway.
    const auto deadline = Clock::now() + std::chrono::milliseconds(1000);
    while (ucp_request_check_status(req) == UCS_INPROGRESS && Clock::now() < deadline) ucp_worker_progress(worker_);
    ucp_request_free(req);
  }
}

void UcxTransportImpl::close(EndpointId id) {
  void* req = nullptr;
  ucp_ep_h ep = nullptr;
  {
    std::lock_guard l(mu_);
    auto it = endpoints_.find(id);
    if (it == endpoints_.end()) return;
    ep = it->second.ep;
    const bool failed = it->second.failed != UCS_OK;
    endpoints_.erase(it);
    if (failed) {
      force_close(ep);
      error_args_.erase(id);
      return;
    }
    ucp_request_param_t p{};
    req = ucp_ep_close_nbx(ep, &p);  // flushes first
  }
  if (req && !UCS_PTR_IS_ERR(req)) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
    for (;;) {
      {
        std::lock_guard l(mu_);
        if (ucp_request_check_status(req) != UCS_INPROGRESS) {
          ucp_request_free(req);
          break;
        }
        if (Clock::now() >= deadline) {
          // The peer does not answer the flush: cancel what is left.
          ucp_request_cancel(worker_, req);
          ucp_request_free(req);
          break;
        }
      }
      progress_or_sleep(1);
    }
  }
  std::lock_guard l(mu_);
  error_args_.erase(id);
}

Status UcxTransportImpl::flush(EndpointId id) {
  void* req = nullptr;
  {
    std::lock_guard l(mu_);
    TS_ASSIGN_OR_RETURN(ucp_ep_h ep, endpoint(id));
    ucp_request_param_t p{};
    req = ucp_ep_flush_nbx(ep, &p);
  }
  if (UCS_PTR_IS_ERR(req)) return ucx_error("ucp_ep_flush_nbx", UCS_PTR_STATUS(req));
  if (!req) return Status::ok();
  bool timed_out = false;
  const ucs_status_t st = wait_request(req, Clock::now() + std::chrono::milliseconds(options_.timeout_ms), id, nullptr, &timed_out);
  if (timed_out) return io_error("ucp_ep_flush_nbx: timed out after " + std::to_string(options_.timeout_ms) + " ms");
  if (st != UCS_OK) return ucx_error("ucp_ep_flush_nbx", st);
  return Status::ok();
}

Expected<ucp_ep_h> UcxTransportImpl::endpoint(EndpointId id) {
  auto it = endpoints_.find(id);
  if (it == endpoints_.end()) return not_found("ucx: no endpoint " + std::to_string(id));
  if (it->second.failed != UCS_OK) return ucx_error("ucp_ep", it->second.failed, "peer " + it->second.peer);
  return it->second.ep;
}

void UcxTransportImpl::progress_or_sleep(int ms) {
  {
    std::lock_guard l(mu_);
    if (ucp_worker_progress(worker_) != 0) return;
    // Nothing moved: arm the descriptor; UCS_ERR_BUSY means events are
    // pending already, so poll again at once.
    if (ucp_worker_arm(worker_) != UCS_OK) return;
  }
  pollfd pfd{efd_, POLLIN, 0};
  (void)::poll(&pfd, 1, ms);
}

void UcxTransportImpl::progress_for(int ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < deadline) progress_or_sleep(1);
}

ucs_status_t UcxTransportImpl::wait_request(void* req, Clock::time_point deadline, EndpointId ep, ucp_tag_recv_info_t* info, bool* timed_out) {
  *timed_out = false;
  auto last_progress = Clock::now();
  for (;;) {
    {
      std::lock_guard l(mu_);
      const ucs_status_t st = progress_and_test(req, info, last_progress);
      if (st != UCS_INPROGRESS) return st;
      if (Clock::now() >= deadline) {
        *timed_out = true;
        if (info) {
          ucp_request_cancel(worker_, req);
        } else if (auto it = endpoints_.find(ep); it != endpoints_.end()) {
          // A send cannot be cancelled: closing its endpoint completes it.
          force_close(it->second.ep);
          it->second.failed = UCS_ERR_TIMED_OUT;
        }
        const auto bound = Clock::now() + std::chrono::milliseconds(1000);
        while (ucp_request_check_status(req) == UCS_INPROGRESS && Clock::now() < bound) ucp_worker_progress(worker_);
        ucp_request_free(req);
        return UCS_ERR_TIMED_OUT;
      }
    }
    idle(last_progress);
  }
}

Expected<std::unique_ptr<UcxPending>> UcxTransportImpl::send_async(EndpointId id, uint64_t tag, std::span<const std::byte> bytes) {
  std::lock_guard l(mu_);
  TS_ASSIGN_OR_RETURN(ucp_ep_h ep, endpoint(id));
  ucp_request_param_t p{};
  void* req = ucp_tag_send_nbx(ep, bytes.data(), bytes.size(), tag, &p);
  if (UCS_PTR_IS_ERR(req)) return ucx_error("ucp_tag_send_nbx", UCS_PTR_STATUS(req));
  auto pending = std::make_unique<PendingImpl>(this, req, id, "ucp_tag_send_nbx", false, bytes.size());
  if (!req) pending->set_immediate({tag, bytes.size()});
  return std::unique_ptr<UcxPending>(std::move(pending));
}

Status UcxTransportImpl::send(EndpointId ep, uint64_t tag, std::span<const std::byte> bytes) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<UcxPending> p, send_async(ep, tag, bytes));
  TS_ASSIGN_OR_RETURN(UcxReceived r, p->wait(-1));
  (void)r;
  return Status::ok();
}

Expected<std::unique_ptr<UcxPending>> UcxTransportImpl::recv_async(uint64_t want, uint64_t mask, std::span<std::byte> into) {
  std::lock_guard l(mu_);
  ucp_tag_recv_info_t info{};
  ucp_request_param_t p{};
  // Always a request, tested for its tag and length once complete: UCX 1.13
  // leaves recv_info unset when a receive completes at once.
  p.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.recv_info.tag_info = &info;
  void* req = ucp_tag_recv_nbx(worker_, into.data(), into.size(), want, mask, &p);
  if (UCS_PTR_IS_ERR(req)) {
    const ucs_status_t st = UCS_PTR_STATUS(req);
    if (st == UCS_ERR_MESSAGE_TRUNCATED)
      return ucx_error("ucp_tag_recv_nbx", st, "the message is longer than the " + std::to_string(into.size()) + "-byte buffer");
    return ucx_error("ucp_tag_recv_nbx", st);
  }
  auto pending = std::make_unique<PendingImpl>(this, req, 0, "ucp_tag_recv_nbx", true, into.size());
  if (!req) pending->set_immediate({info.sender_tag, info.length});
  return std::unique_ptr<UcxPending>(std::move(pending));
}

Expected<UcxReceived> UcxTransportImpl::recv(uint64_t want, uint64_t mask, std::span<std::byte> into, int timeout_ms) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<UcxPending> p, recv_async(want, mask, into));
  return p->wait(timeout_ms);
}

Expected<std::unique_ptr<UcxMemory>> UcxTransportImpl::map(std::byte* data, size_t bytes) {
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = data;
  p.length = bytes;
  ucp_mem_h memh = nullptr;
  const ucs_status_t st = ucp_mem_map(context_, &p, &memh);
  if (st != UCS_OK) return ucx_error("ucp_mem_map", st, std::to_string(bytes) + " bytes");
  return std::unique_ptr<UcxMemory>(new UcxMemoryImpl(context_, memh, data, bytes));
}

Status UcxTransportImpl::put(EndpointId id, std::span<const std::byte> local, uint64_t remote_address, std::span<const std::byte> packed_rkey) {
  void* req = nullptr;
  ucp_rkey_h rkey = nullptr;
  {
    std::lock_guard l(mu_);
    TS_ASSIGN_OR_RETURN(ucp_ep_h ep, endpoint(id));
    ucs_status_t st = ucp_ep_rkey_unpack(ep, packed_rkey.data(), &rkey);
    if (st != UCS_OK) return ucx_error("ucp_ep_rkey_unpack", st);
    ucp_request_param_t p{};
    void* put_req = ucp_put_nbx(ep, local.data(), local.size(), remote_address, rkey, &p);
    if (UCS_PTR_IS_ERR(put_req)) {
      ucp_rkey_destroy(rkey);
      return ucx_error("ucp_put_nbx", UCS_PTR_STATUS(put_req));
    }
    if (put_req) ucp_request_free(put_req);  // the flush below completes it
    // The bytes are in the peer's memory when the endpoint's flush completes.
    req = ucp_ep_flush_nbx(ep, &p);
    if (UCS_PTR_IS_ERR(req)) {
      ucp_rkey_destroy(rkey);
      return ucx_error("ucp_ep_flush_nbx", UCS_PTR_STATUS(req));
    }
  }
  ucs_status_t st = UCS_OK;
  bool timed_out = false;
  if (req) st = wait_request(req, Clock::now() + std::chrono::milliseconds(options_.timeout_ms), id, nullptr, &timed_out);
  {
    std::lock_guard l(mu_);
    ucp_rkey_destroy(rkey);
  }
  if (timed_out) return io_error("ucp_put_nbx: timed out after " + std::to_string(options_.timeout_ms) + " ms");
  if (st != UCS_OK) return ucx_error("ucp_put_nbx", st);
  return Status::ok();
}

std::string UcxTransportImpl::describe(EndpointId id) const {
  std::lock_guard l(mu_);
  auto it = endpoints_.find(id);
  if (it == endpoints_.end()) return {};
  // ucp_ep_print_info writes the lanes and their transports; keep the names.
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return {};
  ucp_ep_print_info(it->second.ep, f);
  fclose(f);
  std::string text(buf, len);
  free(buf);
  std::string out;
  for (const char* name : {"rc_mlx5", "rc_verbs", "dc_mlx5", "ud_mlx5", "ud_verbs", "cma", "posix", "sysv", "xpmem", "knem", "tcp", "cuda_ipc", "rocm_ipc"})
    if (text.find(name) != std::string::npos) out += (out.empty() ? "" : ",") + std::string(name);
  return out;
}

}  // namespace

Expected<std::unique_ptr<UcxTransport>> UcxTransport::create(const UcxOptions& options) {
  if (options.timeout_ms <= 0) return invalid_argument("ucx timeout: must be > 0 ms, got " + std::to_string(options.timeout_ms));
  auto t = std::make_unique<UcxTransportImpl>(options);
  TS_TRY(t->init());
  return std::unique_ptr<UcxTransport>(std::move(t));
}

#endif

}  // namespace tessera::disagg
