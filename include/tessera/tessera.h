#pragma once
// Tessera's public C++ API: open a model on a device, create a generation
// session, feed tokens, sample, read metrics. Everything under include/tessera/
// is self-contained: it names no header of the library's own source tree.
// The `tessera` CLI is a client of these headers and nothing else
// (tessera/model_file.h, tessera/bench.h and tessera/ir.h for its other commands).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/device_info.h"
#include "tessera/export.h"
#include "tessera/metrics.h"
#include "tessera/model_config.h"
#include "tessera/sampling.h"
#include "tessera/status.h"

namespace tessera {

// "synthetic[:TYPE]" (when no such file exists) names the bench's synthetic
// llama (random weights of TYPE, q8_0 by default, vocab 32,000;
// engine/bench/synthetic_model.h), so that serving and the CLI can be
// measured at a real model's size without a file; this gives its TYPE, or
// nullopt for a file. It has no tokenizer: pair it with -z (Llama 2's
// 32,000-token tokenizer.bin fits) or drive it with token ids.
TESSERA_API std::optional<std::string> synthetic_model_type(const std::string& path);

struct ModelOptions {
  std::string path;            // GGUF or llama2.c .bin, or synthetic[:TYPE] (synthetic_model_type)
  std::string tokenizer_path;  // Hugging Face tokenizer.json or llama2.c tokenizer.bin; empty: the model file's own
  std::string backend = "cpu";
  int device = 0;
  int32_t max_context = 0;     // 0: the model's context length, capped at 4096
  int32_t max_prefill_tokens = 256;
  uint64_t kv_cache_bytes = 0;  // K/V pools over every layer; 0: one whole context (docs/architecture.md, KvCache)
  bool strict = false;         // refuse rather than run nodes the backend lacks on the CPU
  std::string passes = "default";  // graph passes: "default", "none", "default,-fuse_qkv", ... (docs/ir.md)
  std::string tile;                // tile overrides: "matmul.chunk_bytes=32768,..." (docs/ir.md)
  std::string place;               // nodes pinned to a device: "paged_attention=cpu,..." (docs/ir.md)
  std::string weight_layout = "auto";  // matmul weights' block order: auto (the target's preference), rows, rows_x4
  // The KV pools' element type: f32, f16, bf16, q8_0 or fp8_e4m3 (8-bit: head_dim a
  // multiple of 32); "auto": f32 for a model whose
  // matrices are all f32, else f16 (docs/cli.md, --kv-type).
  std::string kv_type = "auto";
  // A token's logits never depend on the other sequences of its steps, the
  // step's size or whether it was computed in a prompt chunk or alone, on
  // backends and dtypes where the default kernels do not already promise
  // that (docs/backends.md, "Batch invariance").
  bool batch_invariant = false;
  // --tensor-parallel N: the model split over the N ranks `mpirun -np N`
  // started (docs/parallelism.md); rank 0 runs the command, the others
  // follow it (follow_rank0). 1: one process.
  int32_t tensor_parallel = 1;
  // --pipeline-parallel N: the layers split into N stages, one per rank
  // (docs/parallelism.md); one kind of split at a time. 1: one process.
  int32_t pipeline_parallel = 1;
};

class Model;
struct RunnerOptions;  // the library's own (engine/runtime/model_runner.h)

// A generation session over one sequence of a Model.
class TESSERA_API Generation {
 public:
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  Status feed(std::span<const int32_t> tokens);   // the prompt, or the next token
  std::span<const float> logits() const;           // after the last token fed
  // As feed, keeping the logits after every token fed (one vocabulary-wide
  // row each, in order) in all_logits(), the prompt's rows included.
  Status feed_all(std::span<const int32_t> tokens);
  std::span<const float> all_logits() const;
  int32_t sample();                                // from logits(), with the session's sampler
  int32_t position() const;
  // llama2.c's loop: -n forward passes including the prompt; returns every id.
  Expected<std::vector<int32_t>> generate(std::span<const int32_t> prompt, int32_t steps,
                                          const std::function<bool(int32_t)>& on_token = {});
  const GenerationMetrics& metrics() const;

  struct Impl;

 private:
  friend class Model;
  explicit Generation(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class TESSERA_API Model {
 public:
  static Expected<std::unique_ptr<Model>> open(const ModelOptions& options);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const;
  const DeviceInfo& device() const;
  int32_t max_context() const;  // positions a session can hold
  // Nodes the asked-for backend could not run, one line each, when the model
  // runs on the CPU instead; empty when it runs where asked.
  const std::vector<std::string>& placement_notes() const;
  bool has_tokenizer() const;
  // The tokenizer's BOS id (1, llama2.c's, without a tokenizer).
  int32_t bos_id() const;
  // The model's own chat template (Jinja; render it with tessera::ChatTemplate):
  // the GGUF key tokenizer.chat_template, or, when a tokenizer.json was given
  // (ModelOptions::tokenizer_path), the chat_template of the
  // tokenizer_config.json beside it. Empty when there is none.
  std::string chat_template() const;
  // The text as the model's tokenizer splits it, with BOS (and EOS) where the
  // vocabulary asks for them (llama2.c and SentencePiece vocabularies: BOS).
  // Text spelling a special token is plain text.
  Expected<std::vector<int32_t>> encode(const std::string& text) const;
  // The text of ids[1..] as llama2.c prints it.
  Expected<std::string> decode(const std::vector<int32_t>& ids) const;
  std::string decode_piece(int32_t prev, int32_t id) const;

  Expected<std::unique_ptr<Generation>> start(const SamplerParams& sampler = {});

  struct Impl;
  Impl& impl() { return *impl_; }  // the library's own tests reach the runtime through it

 private:
  // The library's own: a model opened with runner options the public ones do not reach (engine/api/model_impl.h).
  friend Expected<std::unique_ptr<Model>> open_model(const ModelOptions& o, const RunnerOptions& ro);
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Every backend and device this process can see.
struct BackendReport {
  std::string backend;
  std::vector<DeviceInfo> devices;
  std::string why_none;  // when devices is empty
};
TESSERA_API std::vector<BackendReport> list_devices();

// Multi-rank runs (docs/parallelism.md). This process's rank among those
// mpirun started (0 without mpirun), read from mpirun's environment.
TESSERA_API int launched_rank();
// What a rank other than 0 runs instead of its command: it opens each runner
// rank 0 opens, runs its steps on its part of the model, and returns when
// rank 0 leaves (its process ends). An error is one this rank met.
TESSERA_API Status follow_rank0();
// Ends every rank of a multi-rank run with `code`, where this process took
// part in one: a rank that failed must not leave the others waiting on it.
TESSERA_API void abort_ranks(int code);
// Bytes of memory free now on device `index` of `backend` (it opens the
// device to ask; docs/backends.md says how each backend measures).
TESSERA_API Expected<uint64_t> free_device_memory(const std::string& backend, int index);
// Plugins (libtessera-backend-*.so) that were found but could not be loaded, one line each.
TESSERA_API std::vector<std::string> backend_load_errors();

}  // namespace tessera
