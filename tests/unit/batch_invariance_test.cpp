// Whole-model batch invariance on the CPU (docs/backends.md, "Batch
// invariance"): sequences run through ModelRunner in mixed steps, several
// sequences per step, prompt chunks of 1, 7 or 64 tokens, sequences joining
// and leaving, give every token the same logits, to the bit, as each
// sequence alone fed one token a step. With the default kernels where the
// docs claim it (every weight dtype while steps stay under 64 rows; every
// dtype but f32 at any size), and with batch_invariant for f32 at 64 rows or
// more.
#include <doctest/doctest.h>

#include "support/mixed_steps.h"

using namespace tessera;
using namespace tessera::testing;

TEST_CASE("batch_invariant reaches every matmul-family and attention node, even with --passes none") {
  for (const char* passes : {"default", "none"}) {
    CAPTURE(passes);
    for (bool on : {false, true}) {
      CAPTURE(on);
      RunnerOptions o;
      o.passes = passes;
      o.batch_invariant = on;
      auto r = ModelRunner::create(load_shared_model("models/stories260K.bin"), o);
      REQUIRE_MESSAGE(r.has_value(), r.status().message());
      int marked = 0, kernels = 0;
      for (const graph::Node& n : (*r)->graph().nodes) {
        if (!is_matmul_family(n.op) && n.op != OpKind::paged_attention) continue;
        ++kernels;
        marked += n.tile.batch_invariant == 1;
      }
      CHECK(kernels > 0);
      CHECK(marked == (on ? kernels : 0));
    }
  }
}

TEST_CASE("stories260K: mixed steps of chunks of 1 and 7 give every token the bits it gets alone, with the default kernels") {
  Rng rng(401);
  check_mixed_against_alone(load_shared_model("models/stories260K.bin"), RunnerOptions{}, {1, 7}, rng);
}

TEST_CASE("stories260K: mixed steps of chunks of 1, 7 and 64 give every token the bits it gets alone, with batch_invariant") {
  Rng rng(402);
  RunnerOptions o;
  o.batch_invariant = true;
  check_mixed_against_alone(load_shared_model("models/stories260K.bin"), o, {1, 7, 64}, rng);
}

TEST_CASE("f16, bf16, q8_0, q4_0 and q4_K llamas: mixed steps of chunks of 1, 7 and 64 give every token the bits it gets alone, with the default kernels") {
  Rng rng(403);
  for (DType t : {DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_K}) {
    CAPTURE(name(t));
    check_mixed_against_alone(small_llama(t, rng.engine()()), RunnerOptions{}, {1, 7, 64}, rng);
  }
}
