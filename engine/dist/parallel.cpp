#include "engine/dist/parallel.h"

#include <cstring>
#include <map>

#include "backends/mpi/mpi_world.h"
#include "engine/runtime/model_runner.h"

namespace tessera {

namespace {

// The leader leaves the world at exit: its followers stop waiting for work.
void tell_followers_to_leave() {
  auto w = mpi::join_world();
  if (w && w->group->rank() == 0 && w->group->size() > 1) (void)send_control(*w->group, ControlKind::leave);
}

template <typename T>
void put(std::vector<std::byte>& out, const T* data, size_t n) {
  const auto* b = reinterpret_cast<const std::byte*>(data);
  out.insert(out.end(), b, b + n * sizeof(T));
}

}  // namespace

std::string Parallelism::flag() const {
  return pipeline > 1 ? "--pipeline-parallel " + std::to_string(pipeline) : "--tensor-parallel " + std::to_string(tensor);
}

Expected<ResolvedGroup> resolve_group(const Parallelism& p) {
  if (p.tensor < 1 || p.pipeline < 1) return invalid_argument(p.flag() + ": the number of ranks must be at least 1");
  if (p.tensor > 1 && p.pipeline > 1)
    return unsupported("--tensor-parallel " + std::to_string(p.tensor) + " with --pipeline-parallel " + std::to_string(p.pipeline) +
                       ": one kind of split at a time (docs/parallelism.md)");
  ResolvedGroup r{p.group, p.host_comm};
  if (!r.group) {
    const int launched = mpi::launched_size();
    if (launched == 1)
      return invalid_argument(p.flag() + ": start it with `mpirun -np " + std::to_string(p.ranks()) +
                              " tessera ...` (this process was not started by mpirun)");
    TS_ASSIGN_OR_RETURN(mpi::MpiWorld w, mpi::join_world());
    static const bool registered = (mpi::at_leave(tell_followers_to_leave), true);  // once, whichever thread gets here first
    (void)registered;
    r.group = w.group;
    r.host_comm = w.comm;
  }
  if (r.group->size() != p.ranks())
    return invalid_argument(p.flag() + ": mpirun started " + std::to_string(r.group->size()) + " ranks; give -np " +
                            std::to_string(p.ranks()));
  return r;
}

// One message: the kind (4 bytes), then the payload. Sent without waiting
// for the followers (HostGroup::send_to_all), so the leader's next step or
// micro-batch never waits for a follower to finish the last.
Status send_control(HostGroup& g, ControlKind kind, std::span<const std::byte> payload) {
  std::vector<std::byte> message(sizeof(uint32_t) + payload.size());
  const uint32_t k = (uint32_t)kind;
  std::memcpy(message.data(), &k, sizeof k);
  if (!payload.empty()) std::memcpy(message.data() + sizeof k, payload.data(), payload.size());
  return g.send_to_all(message);
}

Expected<ControlMessage> receive_control(HostGroup& g) {
  std::vector<std::byte> message;
  TS_TRY(g.receive_from(0, message));
  uint32_t k = 0;
  if (message.size() < sizeof k)
    return internal_error("parallel: rank 0 sent a control message of " + std::to_string(message.size()) + " bytes (4 at least)");
  std::memcpy(&k, message.data(), sizeof k);
  if (k < 1 || k > 4) return internal_error("parallel: rank 0 sent control message kind " + std::to_string(k));
  ControlMessage m;
  m.kind = (ControlKind)k;
  m.payload.assign(message.begin() + sizeof k, message.end());
  return m;
}

// key, a tab, the value, a newline: every option a follower's runner must share with the leader's.
std::vector<std::byte> encode_open(const RunnerOptions& o) {
  std::string s;
  auto kv = [&](const char* k, const std::string& v) { s += std::string(k) + "\t" + v + "\n"; };
  kv("model", o.parallel.model_path);
  kv("backend", o.backend);
  kv("device", std::to_string(o.device));
  kv("block_size", std::to_string(o.block_size));
  kv("max_context", std::to_string(o.max_context));
  kv("max_seqs", std::to_string(o.max_seqs));
  kv("max_prefill_tokens", std::to_string(o.max_prefill_tokens));
  kv("kv_cache_bytes", std::to_string(o.kv_cache_bytes));
  kv("kv_memory_fraction", std::to_string(o.kv_memory_fraction));
  kv("sample_on_device", o.sample_on_device ? "1" : "0");
  kv("strict", o.strict ? "1" : "0");
  kv("place", o.place);
  kv("passes", o.passes);
  kv("tile", o.tile);
  kv("min_context_bucket", std::to_string(o.min_context_bucket));
  kv("weight_layout", o.weight_layout);
  kv("kv_type", o.kv_type);
  kv("batch_invariant", o.batch_invariant ? "1" : "0");
  kv("tensor_parallel", std::to_string(o.parallel.tensor));
  kv("pipeline_parallel", std::to_string(o.parallel.pipeline));
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

Expected<RunnerOptions> decode_open(std::span<const std::byte> payload) {
  const std::string s(reinterpret_cast<const char*>(payload.data()), payload.size());
  std::map<std::string, std::string> f;
  for (size_t at = 0; at < s.size();) {
    const size_t tab = s.find('\t', at), nl = s.find('\n', at);
    if (tab == std::string::npos || nl == std::string::npos || tab > nl) return internal_error("tensor parallel: a malformed open message");
    f[s.substr(at, tab - at)] = s.substr(tab + 1, nl - tab - 1);
    at = nl + 1;
  }
  RunnerOptions o;
  try {
    o.parallel.model_path = f.at("model");
    o.backend = f.at("backend");
    o.device = std::stoi(f.at("device"));
    o.block_size = std::stoi(f.at("block_size"));
    o.max_context = std::stoi(f.at("max_context"));
    o.max_seqs = std::stoi(f.at("max_seqs"));
    o.max_prefill_tokens = std::stoi(f.at("max_prefill_tokens"));
    o.kv_cache_bytes = std::stoull(f.at("kv_cache_bytes"));
    o.kv_memory_fraction = std::stod(f.at("kv_memory_fraction"));
    o.sample_on_device = f.at("sample_on_device") == "1";
    o.strict = f.at("strict") == "1";
    o.place = f.at("place");
    o.passes = f.at("passes");
    o.tile = f.at("tile");
    o.min_context_bucket = std::stoi(f.at("min_context_bucket"));
    o.weight_layout = f.at("weight_layout");
    o.kv_type = f.at("kv_type");
    o.batch_invariant = f.at("batch_invariant") == "1";
    o.parallel.tensor = std::stoi(f.at("tensor_parallel"));
    o.parallel.pipeline = std::stoi(f.at("pipeline_parallel"));
  } catch (const std::exception& e) {
    return internal_error(std::string("tensor parallel: the open message lacks a field or has a bad number (") + e.what() + ")");
  }
  return o;
}

void encode_step(const StepArgs& a, int32_t stride, std::span<const BlockCopy> copies, int32_t outputs, std::vector<std::byte>& out) {
  out.clear();
  const int32_t head[5] = {a.n_tokens, a.n_seqs, a.n_logit_rows, (int32_t)copies.size(), outputs};
  put(out, head, 5);
  put(out, a.token_ids, (size_t)a.n_tokens);
  put(out, a.positions, (size_t)a.n_tokens);
  put(out, a.slot_mapping, (size_t)a.n_tokens);
  put(out, a.query_start, (size_t)a.n_seqs + 1);
  put(out, a.seq_lens, (size_t)a.n_seqs);
  put(out, a.block_tables, (size_t)a.n_seqs * (size_t)stride);
  put(out, a.logit_rows, (size_t)a.n_logit_rows);
  put(out, copies.data(), copies.size());
}

Expected<StepWire> decode_step(std::span<const std::byte> payload, int32_t stride) {
  size_t at = 0;
  bool short_message = false;
  auto take = [&](auto& v, size_t n) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    if (short_message || at + n * sizeof(T) > payload.size()) {
      short_message = true;
      return;
    }
    v.resize(n);
    if (n > 0) std::memcpy(v.data(), payload.data() + at, n * sizeof(T));  // an empty vector's data() may be null
    at += n * sizeof(T);
  };
  std::vector<int32_t> head;
  take(head, 5);
  if (short_message || head[0] < 0 || head[1] < 0 || head[2] < 0 || head[3] < 0)
    return internal_error("tensor parallel: a malformed step message");
  StepWire w;
  StepArrays& a = w.arrays;
  take(a.token_ids, (size_t)head[0]);
  take(a.positions, (size_t)head[0]);
  take(a.slot_mapping, (size_t)head[0]);
  take(a.query_start, (size_t)head[1] + 1);
  take(a.seq_lens, (size_t)head[1]);
  take(a.block_tables, (size_t)head[1] * (size_t)stride);
  take(a.logit_rows, (size_t)head[2]);
  take(w.block_copies, (size_t)head[3]);
  if (short_message || at != payload.size()) return internal_error("tensor parallel: a step message of the wrong length");
  w.outputs = head[4];
  return w;
}


}  // namespace tessera
