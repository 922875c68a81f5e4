// The end-to-end references on the Vulkan backend (libtessera-backend-vulkan.so
// beside the tessera binary), with --strict so that no node runs on the CPU.
// CI installs Mesa's lavapipe, so a missing plugin or device is a failure;
// TESSERA_NO_VULKAN=1 makes every case here report itself skipped
// (tests/support/requirements.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "engine/api/model_impl.h"
#include "graph/builder.h"
#include "graph/lower.h"
#include "support/cli.h"
#include "support/reference_cases.h"
#include "support/requirements.h"
#include "support/vulkan_device.h"
#include "tessera/tessera.h"

using namespace tessera::testing;

namespace {

std::vector<int32_t> run_ids(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"run", "--backend", "vulkan", "--strict", "--print-ids"};
  all.insert(all.end(), args.begin(), args.end());
  const auto r = run_tessera(all);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return parse_ids(trim(r.out));
}

std::string convert(const std::string& in, const std::string& type) {
  const std::string out = temp_dir() + "/vk_" + type + "_" + std::to_string(std::hash<std::string>{}(in)) + ".gguf";
  const auto r = run_tessera({"convert", in, "-o", out, "--type", type});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return out;
}

// The public API on `backend`; the plugin is loaded from beside the tessera binary.
std::unique_ptr<tessera::Model> open_model(const std::string& path, const std::string& backend,
                                           const std::string& kv_type = "auto") {
  tessera::register_builtin_backends();
  tessera::BackendRegistry::global().load_plugins({std::filesystem::path(TESSERA_BIN).parent_path().string()});
  tessera::ModelOptions o;
  o.path = path;
  o.backend = backend;
  o.kv_type = kv_type;
  o.strict = true;
  auto m = tessera::Model::open(o);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  return std::move(*m);
}

// Logits after each token, fed one at a time (the decode path).
std::vector<float> decode_logits(tessera::Model& model, const std::vector<int32_t>& ids) {
  auto g = model.start({0.0f, 1.0f, 0, 1});
  REQUIRE(g.has_value());
  std::vector<float> all;
  for (int32_t id : ids) {
    REQUIRE((*g)->feed(std::span<const int32_t>(&id, 1)).is_ok());
    all.insert(all.end(), (*g)->logits().begin(), (*g)->logits().end());
  }
  return all;
}

// Per row: max |a - b| / max |b|; the worst row.
double worst_row_error(const std::vector<float>& a, const std::vector<float>& b, size_t vocab) {
  double worst = 0;
  for (size_t r = 0; r * vocab < b.size(); ++r) {
    double diff = 0, ref = 0;
    for (size_t i = r * vocab; i < (r + 1) * vocab; ++i) {
      diff = std::max(diff, (double)std::fabs(a[i] - b[i]));
      ref = std::max(ref, (double)std::fabs(b[i]));
    }
    worst = std::max(worst, diff / ref);
  }
  return worst;
}

constexpr int kLogitRows = 48, kStoriesVocab = 512;

std::vector<float> runc_logits() {
  std::ifstream f(shared_path("reference/stories260K.logits.f32"), std::ios::binary);
  std::vector<float> v((size_t)kLogitRows * kStoriesVocab);
  f.read(reinterpret_cast<char*>(v.data()), (std::streamsize)(v.size() * sizeof(float)));
  REQUIRE(f.gcount() == (std::streamsize)(v.size() * sizeof(float)));
  return v;
}

std::vector<int32_t> runc_fed_ids() {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 5);
  return std::vector<int32_t>(cases[4].full_ids.begin(), cases[4].full_ids.begin() + kLogitRows);
}

}  // namespace

TEST_CASE("vulkan: tessera devices lists a Vulkan device" * needs(vulkan_tests())) {
  require_vulkan_device();
}

TEST_CASE("vulkan: stories260K gives exactly run.c's greedy ids on every reference line" * needs(vulkan_tests())) {
  require_vulkan_device();
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 6);
  for (const auto& c : cases) {
    CAPTURE(c.prompt_ids);
    const auto ids = run_ids({"-m", shared_path("models/stories260K.bin"), "--prompt-ids", c.prompt_ids, "--temp", "0", "-n", "200"});
    CHECK(join_ids(ids) == join_ids(c.full_ids));
  }
}

TEST_CASE("vulkan: aidreams260K gives run.c's greedy ids on every reference line, and its text" * needs(vulkan_tests())) {
  require_vulkan_device();
  const auto cases = read_text_cases(shared_path("reference/aidreams260K.greedy.tsv"));
  REQUIRE(cases.size() >= 5);
  const std::string model = shared_path("models/aidreams260K.bin"), tok = shared_path("models/aidreams260K.tok512.bin");
  for (const auto& c : cases) {
    CAPTURE(c.prompt_text);
    CHECK(join_ids(run_ids({"-m", model, "-z", tok, "-p", c.prompt_text, "--temp", "0", "-n", "128"})) == join_ids(c.full_ids));
  }
  const auto text = run_tessera({"run", "--backend", "vulkan", "--strict", "-m", model, "-z", tok, "-p", cases[0].prompt_text,
                                 "--temp", "0", "-n", "128"});
  REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  REQUIRE(!text.out.empty());
  CHECK(text.out.substr(0, text.out.size() - 1) == cases[0].text);
}

TEST_CASE("vulkan: llama-2-tiny-random.gguf (f16 weights) gives run.c's greedy ids on every reference line" * needs(vulkan_tests())) {
  require_vulkan_device();
  const auto cases = read_text_cases(shared_path("reference/llama-2-tiny-random.greedy.tsv"));
  REQUIRE(!cases.empty());
  for (const auto& c : cases) {
    CAPTURE(c.prompt_text);
    const auto ids = run_ids({"-m", shared_path("models/llama-2-tiny-random.gguf"), "-p", c.prompt_text, "--temp", "0", "-n", "64"});
    CHECK(join_ids(ids) == join_ids(c.full_ids));
  }
}

TEST_CASE("vulkan: stories260K logits match run.c within 1e-4 relative, token by token and as one prefill" * needs(vulkan_tests())) {
  require_vulkan_device();
  const auto ref = runc_logits();
  const auto ids = runc_fed_ids();
  auto model = open_model(shared_path("models/stories260K.bin"), "vulkan");
  const double decode = worst_row_error(decode_logits(*model, ids), ref, kStoriesVocab);
  auto session = tessera::Session::create(*model->impl().runner, *model->impl().kv);
  REQUIRE(session.has_value());
  REQUIRE((*session)->feed(ids, /*all_logits=*/true).is_ok());
  const double prefill = worst_row_error((*session)->all_logits(), ref, kStoriesVocab);
  MESSAGE("worst row relative error: decode " << decode << ", prefill " << prefill);
  CHECK(decode <= 1e-4);
  CHECK(prefill <= 1e-4);
}

// Copy-on-write runs on the device: a fork sharing a partly filled block
// writes its own token there only after Stream::copy_blocks duplicated the
// block; both sequences then continue as two independent runs do.
TEST_CASE("vulkan: a forked sequence diverging in a shared partial block gives the ids of two independent runs" * needs(vulkan_tests())) {
  require_vulkan_device();
  auto model = open_model(shared_path("models/stories260K.bin"), "vulkan");
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  std::vector<int32_t> prompt(cases[0].full_ids.begin(), cases[0].full_ids.begin() + 21);
  std::vector<int32_t> prompt_b = prompt;
  prompt_b.push_back(42);
  const int32_t steps = 12;
  auto independent = [&](const std::vector<int32_t>& p) {
    auto s = tessera::Session::create(*model->impl().runner, *model->impl().kv);
    REQUIRE(s.has_value());
    REQUIRE((*s)->feed_greedy(p).is_ok());
    std::vector<int32_t> out = {(*s)->greedy_token()};
    while ((int32_t)out.size() < steps) {
      REQUIRE((*s)->feed_greedy(std::span<const int32_t>(&out.back(), 1)).is_ok());
      out.push_back((*s)->greedy_token());
    }
    return out;
  };
  const auto want_a = independent(prompt), want_b = independent(prompt_b);
  CHECK(std::equal(want_a.begin(), want_a.end(), cases[0].full_ids.begin() + 21));  // run.c's continuation
  auto parent = tessera::Session::create(*model->impl().runner, *model->impl().kv);
  REQUIRE(parent.has_value());
  REQUIRE((*parent)->feed_greedy(prompt).is_ok());
  auto child = (*parent)->fork();
  REQUIRE(child.has_value());
  REQUIRE((*child)->feed_greedy(std::span<const int32_t>(&prompt_b.back(), 1)).is_ok());
  std::vector<int32_t> got_a = {(*parent)->greedy_token()}, got_b = {(*child)->greedy_token()};
  while ((int32_t)got_a.size() < steps) {
    REQUIRE((*parent)->feed_greedy(std::span<const int32_t>(&got_a.back(), 1)).is_ok());
    got_a.push_back((*parent)->greedy_token());
    REQUIRE((*child)->feed_greedy(std::span<const int32_t>(&got_b.back(), 1)).is_ok());
    got_b.push_back((*child)->greedy_token());
  }
  CHECK(got_a == want_a);
  CHECK(got_b == want_b);
}

// With f16 weights both backends widen every weight to f32 exactly and
// compute in f32, so they differ only in summation order: the logits agree
// to float rounding, far inside the f16 quantization error itself (~0.3% of
// the logit range for this model, tests/e2e/gguf_e2e_test.cpp). Measured on
// lavapipe: worst row 3.4e-6 of the range. Bound: 1e-4, and the same greedy ids.
// The K/V stay f32 here (an f16 model's default is f16 K/V): rounding K/V
// to f16 turns a last-bit difference of a K element into an f16 ulp, which
// measured 2.4e-4 of the range; this case is about the weights' path.
TEST_CASE("vulkan: stories260K with f16 weights matches the CPU's logits within 1e-4 of the range, and its greedy ids" * needs(vulkan_tests())) {
  require_vulkan_device();
  const std::string f16 = convert(shared_path("models/stories260K.bin"), "f16");
  const auto ids = runc_fed_ids();
  auto cpu = open_model(f16, "cpu", "f32");
  auto vk = open_model(f16, "vulkan", "f32");
  const double worst = worst_row_error(decode_logits(*vk, ids), decode_logits(*cpu, ids), kStoriesVocab);
  MESSAGE("f16 weights, vulkan vs cpu: worst row error " << worst << " of the logit range");
  CHECK(worst <= 1e-4);
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  const auto cli = [&](const std::string& backend) {
    const auto r = run_tessera({"run", "--backend", backend, "--strict", "--print-ids", "-m", f16, "--prompt-ids", cases[1].prompt_ids,
                                "--temp", "0", "-n", "200", "--kv-type", "f32"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return trim(r.out);
  };
  CHECK(cli("vulkan") == cli("cpu"));
}

// The 8-bit KV pools on the device: kv_append's quantization (one block an
// invocation) and the attention shaders' reads, against the CPU's with the
// same --kv-type, on the zoo llama (heads of 32), one token a step and as one
// prefill. The two backends' K and V differ in the last bits before they are
// quantized, and a value near a rounding tie then lands one step apart, so
// the bound allows a few such steps (1e-3 of the range); measured on
// lavapipe: no value flipped, worst row 8.5e-7 (q8_0) and 9.0e-7 (fp8) of
// the range, decode and prefill alike. --strict: every node on the device.
TEST_CASE("vulkan: the zoo llama with q8_0 and fp8_e4m3 KV matches the CPU's logits with the same KV type" * needs(vulkan_tests())) {
  require_vulkan_device();
  const std::string model = shared_path("models/zoo/llama-f32.gguf");
  const std::vector<int32_t> ids = {1, 30, 40, 50, 60, 70, 370, 377, 92, 116, 92, 116, 61, 61, 61, 61, 61, 183, 396, 396,
                                    396, 396, 396, 396, 396, 396, 396, 396, 396, 396, 396, 282, 128, 235, 282, 206, 209, 282};
  for (const std::string t : {"q8_0", "fp8_e4m3"}) {
    CAPTURE(t);
    auto cpu = open_model(model, "cpu", t);
    auto vk = open_model(model, "vulkan", t);
    const double decode = worst_row_error(decode_logits(*vk, ids), decode_logits(*cpu, ids), 512);
    const auto prefill = [&](tessera::Model& m) {
      auto g = m.start({0.0f, 1.0f, 0, 1});
      REQUIRE(g.has_value());
      REQUIRE((*g)->feed(ids).is_ok());
      return std::vector<float>((*g)->logits().begin(), (*g)->logits().end());
    };
    const double whole = worst_row_error(prefill(*vk), prefill(*cpu), 512);
    MESSAGE(t << " KV, vulkan vs cpu: worst decode row " << decode << ", prefill's last row " << whole << " of the logit range");
    CHECK(decode <= 1e-3);
    CHECK(whole <= 1e-3);
  }
}

// Paths lavapipe would not take by itself: staged copies (as on a discrete
// GPU, whose device memory the host cannot map), the portable shaders (for
// devices without subgroup arithmetic), and weights bound in chunks of rows
// (as when a tensor exceeds maxStorageBufferRange; here the 131 KB embedding
// and classifier of stories260K against a 64 KiB limit).
TEST_CASE("vulkan: staged copies, portable shaders and chunked weight bindings each give run.c's ids" * needs(vulkan_tests())) {
  require_vulkan_device();
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 5);
  for (const char* env : {"TESSERA_VULKAN_STAGING=1", "TESSERA_VULKAN_PORTABLE=1", "TESSERA_VULKAN_MAX_BINDING_BYTES=65536"}) {
    CAPTURE(env);
    const std::string kv = env;
    const std::string key = kv.substr(0, kv.find('='));
    setenv(key.c_str(), kv.substr(kv.find('=') + 1).c_str(), 1);
    // Every bucket compiles at open, so the largest step's logits must fit the
    // lowered binding range too: 32 tokens x 512 floats is 65536 bytes. A KV
    // pool is bound whole: one layer's K (or V) for one 256-token context is
    // 65536 bytes, so the cache holds one context (5 layers x K and V).
    const auto ids = run_ids({"-m", shared_path("models/stories260K.bin"), "--prompt-ids", cases[4].prompt_ids, "--temp", "0", "-n", "200",
                              "--max-prefill", "32", "--kv-cache-memory", "655360"});
    unsetenv(key.c_str());
    CHECK(join_ids(ids) == join_ids(cases[4].full_ids));
  }
}

// Tiles other than the tiling pass's choice (docs/backends.md): gemv workgroups
// that are not a whole number of subgroups and rows per workgroup that are
// not a power of two, every gemm tile shape, and the portable gemv with more
// rows than invocations: each output is the same dot in every tiling.
TEST_CASE("vulkan: stories260K with --tile overrides of every GPU field gives run.c's ids" * needs(vulkan_tests())) {
  require_vulkan_device();
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 5);
  struct Variant {
    const char* tile;
    bool portable;
  };
  for (const Variant& v : {Variant{"*.workgroup_size=64,*.rows_per_workgroup=8,*.tile_m=32,*.tile_n=128", false},
                           Variant{"*.workgroup_size=20,*.rows_per_workgroup=36,*.tile_m=128,*.tile_n=32", false},
                           Variant{"*.workgroup_size=16,*.rows_per_workgroup=44,*.tile_m=64,*.tile_n=32", true}}) {
    CAPTURE(v.tile);
    CAPTURE(v.portable);
    if (v.portable) setenv("TESSERA_VULKAN_PORTABLE", "1", 1);
    const auto ids = run_ids({"-m", shared_path("models/stories260K.bin"), "--prompt-ids", cases[4].prompt_ids, "--temp", "0",
                              "-n", "200", "--tile", v.tile});
    if (v.portable) unsetenv("TESSERA_VULKAN_PORTABLE");
    CHECK(join_ids(ids) == join_ids(cases[4].full_ids));
  }
  const auto bad = run_tessera({"run", "--backend", "vulkan", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", "1",
                                "-n", "2", "--tile", "*.tile_m=48"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("--tile: '*.tile_m=48': tile_m must be a power of two in [32, 128] (rows), got '48'") != std::string::npos);
}

// A plan that skipped the tiling pass (hand-written, or from another tool)
// can carry a tile the device cannot run: compile refuses it in one line.
TEST_CASE("vulkan: compiling a matmul whose tile exceeds the device's workgroup limit is a one-line error" * needs(vulkan_tests())) {
  require_vulkan_device();
  open_model(shared_path("models/stories260K.bin"), "cpu");  // registers the plugins
  tessera::Backend* vk = tessera::BackendRegistry::global().find("vulkan");
  REQUIRE(vk);
  auto device = vk->open(0);
  REQUIRE_MESSAGE(device.has_value(), device.status().message());
  const int64_t vocab = 8, dim = 32;
  tessera::graph::GraphBuilder b("tile_limit");
  const auto table = b.weight("table", tessera::TensorDesc::contiguous(tessera::DType::f32, tessera::Shape{vocab, dim}));
  const auto w = b.weight("w", tessera::TensorDesc::contiguous(tessera::DType::f32, tessera::Shape{dim, dim}));
  const auto ids = b.step_input(tessera::StepField::token_ids, tessera::RowCount::tokens);
  const auto y = b.matmul(b.embedding(table, ids, "embed"), w, "proj");
  b.mark_output(y);
  auto g = b.finish();
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  auto plan = tessera::graph::lower(*g, tessera::ShapeBucket{2, 1, 2, 2});
  REQUIRE(plan.has_value());
  const uint32_t max_invocations = (*device)->info().max_workgroup_invocations;
  REQUIRE(max_invocations > 0);
  for (auto& d : plan->dispatches)
    if (d.op == tessera::OpKind::matmul) d.tile.workgroup_size = 2 * (int64_t)max_invocations;
  std::vector<float> values((size_t)(vocab * dim), 0.5f), wv((size_t)(dim * dim), 0.25f);
  auto tb = (*device)->import_weights({reinterpret_cast<const std::byte*>(values.data()), values.size() * 4});
  auto wb = (*device)->import_weights({reinterpret_cast<const std::byte*>(wv.data()), wv.size() * 4});
  REQUIRE((tb.has_value() && wb.has_value()));
  std::vector<tessera::Buffer*> bound(plan->buffers.size(), nullptr);
  for (size_t i = 0; i < plan->buffers.size(); ++i) {
    if (plan->buffers[i].name == "table") bound[i] = tb->get();
    if (plan->buffers[i].name == "w") bound[i] = wb->get();
  }
  auto exe = (*device)->compile(*plan, bound);
  REQUIRE(!exe.has_value());
  CHECK(exe.status().message().find("matmul tile: workgroup_size=" + std::to_string(2 * max_invocations) + " exceeds the device's " +
                                    std::to_string(max_invocations) + " invocations per workgroup") != std::string::npos);
  CHECK(exe.status().message().find('\n') == std::string::npos);
}

// The CLI refuses bad ids itself; this goes under it, to the device's step check.
TEST_CASE("vulkan: a step with a token id outside the vocabulary or a slot outside the pool is refused, and the next step runs" * needs(vulkan_tests())) {
  require_vulkan_device();
  open_model(shared_path("models/stories260K.bin"), "cpu");  // registers the plugins
  tessera::Backend* vk = tessera::BackendRegistry::global().find("vulkan");
  REQUIRE(vk);
  auto device = vk->open(0);
  REQUIRE_MESSAGE(device.has_value(), device.status().message());
  const int64_t vocab = 37, dim = 64, slots = 32;
  tessera::graph::GraphBuilder b("bad_step");
  const auto table = b.weight("table", tessera::TensorDesc::contiguous(tessera::DType::f32, tessera::Shape{vocab, dim}));
  const auto ids = b.step_input(tessera::StepField::token_ids, tessera::RowCount::tokens);
  const auto x = b.embedding(table, ids, "embed");
  const auto slot_ids = b.step_input(tessera::StepField::slot_mapping, tessera::RowCount::tokens);
  const tessera::TensorDesc pool = tessera::TensorDesc::contiguous(tessera::DType::f32, tessera::Shape{slots, dim});
  const auto kp = b.kv_pool("k", pool), vp = b.kv_pool("v", pool);
  const auto pools = b.op_n(tessera::OpKind::kv_append, tessera::KvCacheParams{1, (int32_t)dim, 16}, {x, x, slot_ids, kp, vp}, "append");
  b.mark_output(x);
  auto g = b.finish();
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  auto plan = tessera::graph::lower(*g, tessera::ShapeBucket{2, 1, 2, 2});
  REQUIRE(plan.has_value());
  std::vector<float> values((size_t)(vocab * dim), 0.5f);
  auto wt = (*device)->import_weights({reinterpret_cast<const std::byte*>(values.data()), values.size() * 4});
  auto kbuf = (*device)->allocate(pool.bytes(), tessera::MemoryUse::kv_cache);
  auto vbuf = (*device)->allocate(pool.bytes(), tessera::MemoryUse::kv_cache);
  REQUIRE((wt.has_value() && kbuf.has_value() && vbuf.has_value()));
  std::vector<tessera::Buffer*> bound(plan->buffers.size(), nullptr);
  for (size_t i = 0; i < plan->buffers.size(); ++i) {
    const std::string& n = plan->buffers[i].name;
    if (n == "table") bound[i] = wt->get();
    if (n == "k") bound[i] = kbuf->get();
    if (n == "v") bound[i] = vbuf->get();
  }
  auto exe = (*device)->compile(*plan, bound);
  REQUIRE_MESSAGE(exe.has_value(), exe.status().message());
  auto stream = (*device)->create_stream();
  REQUIRE(stream.has_value());
  auto step = [&](std::vector<int32_t> tokens, std::vector<int32_t> slot) {
    const std::vector<int32_t> pos = {0, 1}, qs = {0, 2}, lens = {2}, tables = {0, 1}, rows = {0};
    tessera::StepArgs a{tokens.data(), pos.data(), slot.data(), 2, qs.data(), lens.data(), tables.data(), 1, rows.data(), 1};
    const tessera::Status s = (*stream)->run(**exe, a);
    return s.is_ok() ? (*stream)->synchronize() : s;
  };
  const tessera::Status bad_id = step({3, 40}, {0, 1});
  CHECK(bad_id.code() == tessera::StatusCode::out_of_range);
  CHECK(bad_id.message().find("vocabulary") != std::string::npos);
  const tessera::Status bad_slot = step({3, 4}, {0, 32});
  CHECK(bad_slot.code() == tessera::StatusCode::invalid_argument);
  CHECK(bad_slot.message().find("slot_mapping[1]") != std::string::npos);
  CHECK(step({3, 4}, {0, 31}).is_ok());
  CHECK(pools.size() == 2);
}

TEST_CASE("vulkan: without a Vulkan driver, tessera devices says so in one line and the CPU still runs" * needs(vulkan_tests())) {
  require_vulkan_device();
  setenv("VK_ICD_FILENAMES", "/nonexistent/icd.json", 1);
  setenv("VK_DRIVER_FILES", "/nonexistent/icd.json", 1);
  const auto devices = run_tessera({"devices"});
  const auto run = run_tessera({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", "1", "--temp", "0", "-n", "8",
                                "--print-ids"});
  unsetenv("VK_ICD_FILENAMES");
  unsetenv("VK_DRIVER_FILES");
  CHECK(devices.exit_code == 0);
  const auto at = devices.out.find("vulkan: no device (");
  REQUIRE_MESSAGE(at != std::string::npos, devices.out);
  CHECK(devices.out.find("vulkan:0") == std::string::npos);
  CHECK(run.exit_code == 0);
}
