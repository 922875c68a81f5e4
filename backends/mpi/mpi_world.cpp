#include "backends/mpi/mpi_world.h"

#include <cstdlib>
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <vector>
#include <string>

#ifdef TESSERA_HAVE_MPI
#include <mpi.h>
#endif

namespace tessera::mpi {

namespace {
int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : -1;
}
}  // namespace

// Open MPI's mpirun, then PMIx and PMI (MPICH, Slurm): the first that is set.
int launched_size() {
  for (const char* n : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const int v = env_int(n); v > 0) return v;
  return 1;
}

int launched_rank() {
  for (const char* n : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const int v = env_int(n); v >= 0) return v;
  return 0;
}

#ifndef TESSERA_HAVE_MPI

bool available() { return false; }
Expected<MpiWorld> join_world() {
  return unsupported("this tessera was built without MPI (install libopenmpi-dev and rebuild) and cannot run across ranks");
}
void at_leave(void (*)()) {}
void abort_world(int) {}

#else

bool available() { return true; }

namespace {

Status mpi_status(int code, const char* call) {
  if (code == MPI_SUCCESS) return Status::ok();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return internal_error(std::string("MPI: ") + call + " failed: " + std::string(text, (size_t)len));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::i32: return MPI_INT32_T;
    default: return MPI_DATATYPE_NULL;
  }
}

Status check_type(DType t, const char* what) {
  if (mpi_type(t) == MPI_DATATYPE_NULL)
    return unsupported(std::string("MPI: ") + what + " of " + std::string(name(t)) + " (f32 and i32 are implemented)");
  return Status::ok();
}

class MpiGroup final : public HostGroup {
 public:
  MpiGroup(MPI_Comm c, int rank, int size) : comm_(c), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status broadcast(std::span<std::byte> bytes, int root) override {
    // MPI counts are int: large payloads go in pieces.
    constexpr size_t kPiece = 1u << 30;
    for (size_t at = 0; at < bytes.size(); at += kPiece) {
      const int n = (int)std::min(kPiece, bytes.size() - at);
      TS_TRY(mpi_status(MPI_Bcast(bytes.data() + at, n, MPI_BYTE, root, comm_), "MPI_Bcast"));
    }
    return Status::ok();
  }
  Expected<int64_t> min(int64_t value) override {
    int64_t out = 0;
    TS_TRY(mpi_status(MPI_Allreduce(&value, &out, 1, MPI_INT64_T, MPI_MIN, comm_), "MPI_Allreduce(MIN)"));
    return out;
  }
  // One MPI_Isend to each other rank from a copy the group keeps until they
  // complete; completed sends are reaped at the next call, the rest at leave.
  Status send_to_all(std::span<const std::byte> message) override {
    if (message.size() > (size_t)std::numeric_limits<int>::max())
      return invalid_argument("MPI: a control message of " + std::to_string(message.size()) + " bytes (at most 2 GiB)");
    std::lock_guard lock(sending_mutex_);
    TS_TRY(reap_sent());
    Sending& s = sending_.emplace_back();
    s.bytes.assign(message.begin(), message.end());
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request req = MPI_REQUEST_NULL;
      TS_TRY(mpi_status(MPI_Isend(s.bytes.data(), (int)s.bytes.size(), MPI_BYTE, r, kControlTag, comm_, &req), "MPI_Isend"));
      s.requests.push_back(req);
    }
    return Status::ok();
  }
  // A matched probe, so the size is known before the receive and no other
  // thread's receive can take this message in between.
  Status receive_from(int from, std::vector<std::byte>& message) override {
    MPI_Message matched = MPI_MESSAGE_NULL;
    MPI_Status st;
    TS_TRY(mpi_status(MPI_Mprobe(from, kControlTag, comm_, &matched, &st), "MPI_Mprobe"));
    int count = 0;
    TS_TRY(mpi_status(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count"));
    message.resize((size_t)count);
    return mpi_status(MPI_Mrecv(message.data(), count, MPI_BYTE, &matched, MPI_STATUS_IGNORE), "MPI_Mrecv");
  }
  // Every control message sent has been taken: before MPI_Finalize, which
  // must not find a send pending.
  Status drain() {
    std::lock_guard lock(sending_mutex_);
    for (Sending& s : sending_)
      TS_TRY(mpi_status(MPI_Waitall((int)s.requests.size(), s.requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall"));
    sending_.clear();
    return Status::ok();
  }

 private:
  static constexpr int kControlTag = 1;
  struct Sending {
    std::vector<std::byte> bytes;
    std::vector<MPI_Request> requests;
  };
  // Drops the messages every rank has taken (sent in order, so from the front).
  Status reap_sent() {
    while (!sending_.empty()) {
      Sending& s = sending_.front();
      int done = 0;
      TS_TRY(mpi_status(MPI_Testall((int)s.requests.size(), s.requests.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall"));
      if (!done) break;
      sending_.pop_front();
    }
    return Status::ok();
  }

  MPI_Comm comm_;
  int rank_, size_;
  std::mutex sending_mutex_;
  std::deque<Sending> sending_;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm c, int rank, int size) : comm_(c), rank_(rank), size_(size), displs_((size_t)size), counts_((size_t)size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  Status all_reduce_sum(void* data, size_t count, DType dtype, Stream*) override {
    TS_TRY(check_type(dtype, "all_reduce"));
    return mpi_status(MPI_Allreduce(MPI_IN_PLACE, data, (int)count, mpi_type(dtype), MPI_SUM, comm_), "MPI_Allreduce");
  }
  Status all_gather(const void* send, void* recv, std::span<const size_t> counts, DType dtype, Stream*) override {
    TS_TRY(check_type(dtype, "all_gather"));
    if (counts.size() != (size_t)size_)
      return invalid_argument("MPI: all_gather given " + std::to_string(counts.size()) + " counts for " + std::to_string(size_) + " ranks");
    int at = 0;
    for (int r = 0; r < size_; ++r) {
      counts_[(size_t)r] = (int)counts[(size_t)r];
      displs_[(size_t)r] = at;
      at += counts_[(size_t)r];
    }
    return mpi_status(MPI_Allgatherv(send, counts_[(size_t)rank_], mpi_type(dtype), recv, counts_.data(), displs_.data(),
                                     mpi_type(dtype), comm_),
                      "MPI_Allgatherv");
  }
  Status send(const void* data, size_t bytes, int peer, Stream*) override {
    return mpi_status(MPI_Send(data, (int)bytes, MPI_BYTE, peer, 0, comm_), "MPI_Send");
  }
  Status recv(void* data, size_t bytes, int peer, Stream*) override {
    return mpi_status(MPI_Recv(data, (int)bytes, MPI_BYTE, peer, 0, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
  }
  Expected<uint64_t> post_recv(void* data, size_t bytes, int peer) override {
    std::lock_guard lock(posted_mutex_);
    MPI_Request req = MPI_REQUEST_NULL;
    TS_TRY(mpi_status(MPI_Irecv(data, (int)bytes, MPI_BYTE, peer, 0, comm_, &req), "MPI_Irecv"));
    const uint64_t handle = next_handle_++;
    posted_.emplace(handle, req);
    return handle;
  }
  Status wait_recv(uint64_t handle) override {
    MPI_Request req = MPI_REQUEST_NULL;
    {
      std::lock_guard lock(posted_mutex_);
      auto it = posted_.find(handle);
      if (it == posted_.end()) return invalid_argument("MPI: no posted receive " + std::to_string(handle));
      req = it->second;
      posted_.erase(it);
    }
    return mpi_status(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
  }

 private:
  MPI_Comm comm_;
  int rank_, size_;
  std::vector<int> displs_, counts_;  // all_gather's, sized once: the step allocates nothing
  std::mutex posted_mutex_;
  std::map<uint64_t, MPI_Request> posted_;
  uint64_t next_handle_ = 1;
};

std::mutex g_mutex;
std::optional<MpiWorld> g_world;
std::shared_ptr<MpiGroup> g_group;  // g_world's group, to drain at leave
std::vector<void (*)()> g_leave;

void leave_world() {
  for (auto fn : g_leave) fn();
  if (g_group) (void)g_group->drain();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

Expected<MpiWorld> join_world() {
  std::lock_guard lock(g_mutex);
  if (g_world) return *g_world;
  int provided = 0;
  TS_TRY(mpi_status(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread"));
  // Errors come back as codes, so a failed call is a Status, not an abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_SERIALIZED)
    return unsupported("MPI: this MPI gives thread level " + std::to_string(provided) +
                       "; tessera calls it from the engine's step thread and the main thread (MPI_THREAD_SERIALIZED at least)");
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm control = MPI_COMM_NULL, data = MPI_COMM_NULL;
  TS_TRY(mpi_status(MPI_Comm_dup(MPI_COMM_WORLD, &control), "MPI_Comm_dup"));
  TS_TRY(mpi_status(MPI_Comm_dup(MPI_COMM_WORLD, &data), "MPI_Comm_dup"));
  MPI_Comm_set_errhandler(control, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(data, MPI_ERRORS_RETURN);
  g_group = std::make_shared<MpiGroup>(control, rank, size);
  g_world = MpiWorld{g_group, std::make_shared<MpiCommunicator>(data, rank, size)};
  std::atexit(leave_world);
  return *g_world;
}

void at_leave(void (*fn)()) {
  std::lock_guard lock(g_mutex);
  g_leave.push_back(fn);
}

void abort_world(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

#endif

}  // namespace tessera::mpi
