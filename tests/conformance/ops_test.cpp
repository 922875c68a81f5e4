// The small ops on the CPU against the reference, on every runnable ISA,
// at odd sizes (5, 63, 172) and at model sizes, with aliasing where the
// contract allows it.
#include <string>
#include <vector>

#include "conformance.h"

namespace tessera::testing {
namespace {

const std::vector<int64_t> kDims = {1, 5, 63, 172, 4096};

TEST_CASE("embedding matches reference for f32, f16, bf16, q8_0, q4_0 and q4_K tables") {
  Rng rng(301);
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_K}) {
    const int64_t dim = t == DType::q4_K ? 512 : traits(t).block_elems == 1 ? 172 : 96, vocab = 50;
    INFO(std::string(name(t)) << " dim=" << dim);
    const std::vector<std::byte> table = random_weights(t, vocab, dim, rng);
    const std::vector<int32_t> ids = {0, 49, 7, 7, 31, 2, 48};
    const int64_t n = (int64_t)ids.size();
    std::vector<float> want((size_t)(n * dim));
    ref::embedding({table.data(), t, vocab, dim, ids.data(), n, want.data()});
    for_each_isa([&](cpu::Isa) {
      std::vector<float> got(want.size(), -777.0f);
      cpu::embedding({table.data(), t, vocab, dim, ids.data(), n, got.data()}, pool());
      CHECK(got == want);  // widening and dequantization are exact
    });
  }
}

TEST_CASE("embedding reads a table reordered to rows_x4 or rows_x16 (a tied classifier's) as the reference reads rows") {
  Rng rng(306);
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0}) {
    for (int64_t vocab : {1, 15, 50}) {  // one short group; three whole groups of 16 and a last of 2
      const int64_t dim = traits(t).block_elems == 1 ? 174 : 96;
      const std::vector<std::byte> table = random_weights(t, vocab, dim, rng);
      std::vector<int32_t> ids;
      for (int i = 0; i < 9; ++i) ids.push_back(rng.integer(0, (int32_t)vocab - 1));
      ids.push_back((int32_t)vocab - 1);
      const int64_t n = (int64_t)ids.size();
      std::vector<float> want((size_t)(n * dim));
      ref::embedding({table.data(), t, vocab, dim, ids.data(), n, want.data()});
      for (WeightLayout l : {WeightLayout::rows_x4, WeightLayout::rows_x16}) {
        if (!check_weight_layout(l, t, Shape{vocab, dim}, "table").is_ok()) continue;
        INFO(name(t) << " vocab=" << vocab << " layout=" << name(l));
        const std::vector<std::byte> reordered = relayout(WeightLayout::rows, l, t, vocab, dim, table).value();
        std::vector<float> ref_got(want.size(), -777.0f);
        ref::embedding({reordered.data(), t, vocab, dim, ids.data(), n, ref_got.data(), l});
        CHECK(ref_got == want);
        for_each_isa([&](cpu::Isa) {
          std::vector<float> got(want.size(), -777.0f);
          cpu::embedding({reordered.data(), t, vocab, dim, ids.data(), n, got.data(), l}, pool());
          CHECK(got == want);
        });
      }
    }
  }
}

TEST_CASE("rms_norm matches reference for dims 1, 5, 63, 172, 4096 and 1, 3, 7 rows, also in place") {
  Rng rng(302);
  for (int64_t rows : {1, 3, 7}) {
    for (int64_t dim : kDims) {
      INFO("rows=" << rows << " dim=" << dim);
      const std::vector<float> x = rng.floats((size_t)(rows * dim), -3.0f, 3.0f), w = rng.floats((size_t)dim);
      std::vector<float> want(x.size());
      ref::rms_norm({x.data(), w.data(), want.data(), rows, dim, RmsNormParams{1e-5f}});
      for_each_isa([&](cpu::Isa) {
        std::vector<float> got(x.size());
        cpu::rms_norm({x.data(), w.data(), got.data(), rows, dim, RmsNormParams{1e-5f}}, pool());
        // f32 sum of squares against f64: a few ulps per element.
        CHECK(rel_error(got, want) <= 1e-6);
        std::vector<float> in_place = x;
        cpu::rms_norm({in_place.data(), w.data(), in_place.data(), rows, dim, RmsNormParams{1e-5f}}, pool());
        CHECK(in_place == got);
      });
    }
  }
}

TEST_CASE("rope matches reference for interleaved and half-split layouts, partial rotation, long positions") {
  Rng rng(303);
  struct Case {
    int32_t n_heads, head_dim, rot_dims;
    RopeLayout layout;
  };
  for (const Case& c : {Case{4, 16, 16, RopeLayout::interleaved}, Case{3, 64, 64, RopeLayout::half_split},
                        Case{2, 10, 6, RopeLayout::interleaved}, Case{5, 63, 32, RopeLayout::half_split},
                        Case{32, 128, 128, RopeLayout::interleaved}}) {
    INFO("heads=" << c.n_heads << " head_dim=" << c.head_dim << " rot_dims=" << c.rot_dims
                  << " layout=" << (c.layout == RopeLayout::interleaved ? "interleaved" : "half_split"));
    const int64_t n_tokens = 9;
    std::vector<int32_t> positions((size_t)n_tokens);
    for (auto& p : positions) p = rng.integer(0, 8191);
    positions[0] = 0;
    RopeParams p{c.n_heads, c.head_dim, c.rot_dims, 10000.0f, c.layout};
    const std::vector<float> x = rng.floats((size_t)(n_tokens * c.n_heads * c.head_dim));
    std::vector<float> want = x;
    ref::rope({want.data(), positions.data(), n_tokens, p});
    for_each_isa([&](cpu::Isa) {
      std::vector<float> got = x;
      cpu::rope({got.data(), positions.data(), n_tokens, p}, pool());
      // Same f32 formulas on both sides: equal to the bit with GCC on x86;
      // 1e-6 leaves room for a compiler that contracts a*c - b*s into an FMA.
      CHECK(max_abs_diff(got, want) <= 1e-6);
    });
  }
}

TEST_CASE("silu_mul and add match reference, including out aliasing an input") {
  Rng rng(304);
  for (int64_t n : {1, 5, 63, 172, 70000}) {
    INFO("n=" << n);
    const std::vector<float> g = rng.floats((size_t)n, -8.0f, 8.0f), u = rng.floats((size_t)n);
    std::vector<float> want_silu((size_t)n), want_add((size_t)n);
    ref::silu_mul({g.data(), u.data(), want_silu.data(), n});
    ref::add({g.data(), u.data(), want_add.data(), n});
    for_each_isa([&](cpu::Isa) {
      std::vector<float> gate = g, up = u;
      cpu::silu_mul({gate.data(), up.data(), gate.data(), n}, pool());
      CHECK(rel_error(gate, want_silu) <= 1e-6);  // same f32 formula as the reference
      std::vector<float> a = g;
      cpu::add({a.data(), up.data(), a.data(), n}, pool());
      CHECK(a == want_add);
    });
  }
}

TEST_CASE("softmax matches reference for cols 1, 5, 63, 172, 32000 with large logits") {
  Rng rng(305);
  for (int64_t rows : {1, 3, 7}) {
    for (int64_t cols : {1, 5, 63, 172, 32000}) {
      INFO("rows=" << rows << " cols=" << cols);
      const std::vector<float> x = rng.floats((size_t)(rows * cols), -30.0f, 90.0f);
      std::vector<float> want = x;
      ref::softmax({want.data(), rows, cols});
      for_each_isa([&](cpu::Isa) {
        std::vector<float> got = x;
        cpu::softmax({got.data(), rows, cols}, pool());
        CHECK(rel_error(got, want) <= 1e-5);  // f32 exp and sum against f64
      });
    }
  }
}

TEST_CASE("argmax returns the first index of the maximum, ties and negative rows included") {
  Rng rng(306);
  const int64_t rows = 6, cols = 32000;
  std::vector<float> x = rng.floats((size_t)(rows * cols), -5.0f, -1.0f);
  x[0 * cols + 17] = 3.0f;                                               // unique max
  x[1 * cols + 100] = 2.0f, x[1 * cols + 9000] = 2.0f;                   // tie: first wins
  for (int64_t j = 0; j < cols; ++j) x[(size_t)(2 * cols + j)] = -1.5f;  // all equal: index 0
  x[3 * cols + cols - 1] = 0.0f;                                         // max in the last column
  std::vector<int32_t> want((size_t)rows);
  ref::argmax({x.data(), want.data(), rows, cols});
  CHECK(want[0] == 17);
  CHECK(want[1] == 100);
  CHECK(want[2] == 0);
  CHECK(want[3] == cols - 1);
  for_each_isa([&](cpu::Isa) {
    for (int64_t c : {(int64_t)1, (int64_t)5, cols}) {
      INFO("cols=" << c);
      std::vector<float> sub;
      for (int64_t r = 0; r < rows; ++r) sub.insert(sub.end(), x.begin() + r * cols, x.begin() + r * cols + c);
      std::vector<int32_t> w((size_t)rows), got((size_t)rows, -1);
      ref::argmax({sub.data(), w.data(), rows, c});
      cpu::argmax({sub.data(), got.data(), rows, c}, pool());
      CHECK(got == w);
    }
  });
}

TEST_CASE("gather_rows copies the selected rows byte for byte, repeats and odd row sizes included") {
  Rng rng(307);
  for (int64_t row_bytes : {1, 7, 172, 16384}) {
    INFO("row_bytes=" << row_bytes);
    const int64_t n_src = 11;
    std::vector<std::byte> src((size_t)(n_src * row_bytes));
    for (auto& b : src) b = (std::byte)rng.integer(0, 255);
    const std::vector<int32_t> rows = {10, 0, 3, 3, 7};
    const int64_t n = (int64_t)rows.size();
    std::vector<std::byte> want((size_t)(n * row_bytes));
    ref::gather_rows({src.data(), rows.data(), want.data(), n, n_src, row_bytes});
    for_each_isa([&](cpu::Isa) {
      std::vector<std::byte> got(want.size());
      cpu::gather_rows({src.data(), rows.data(), got.data(), n, n_src, row_bytes}, pool());
      CHECK(got == want);
    });
  }
}

}  // namespace
}  // namespace tessera::testing
