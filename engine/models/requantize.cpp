#include "engine/models/requantize.h"

#include <cstring>
#include <vector>

#include "core/quant.h"

namespace tessera {

Expected<ModelWeights> requantize(const ModelWeights& m, DType type, ParallelFor& pf) {
  const auto& tr = traits(type);
  std::vector<float> probe(tr.block_elems, 0.0f);
  std::vector<std::byte> probe_out(tr.block_bytes);
  if (!quantize_row(type, probe.data(), probe_out.data(), tr.block_elems))
    return invalid_argument("requantize: no quantizer for " + std::string(name(type)));
  // Which tensors change, and where each lands in one allocation.
  struct Plan {
    bool convert = false;
    uint64_t offset = 0, bytes = 0;
  };
  std::vector<Plan> plan(m.tensors.size());
  uint64_t total = 0;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const TensorDesc& d = m.tensors[i].desc;
    const int64_t row = d.shape.rank == 2 ? d.shape.last() : 0;
    plan[i].convert = row > 0 && row % tr.block_elems == 0 && d.dtype != type;
    plan[i].bytes = plan[i].convert ? TensorDesc::contiguous(type, d.shape).bytes() : m.tensors[i].data.size();
    plan[i].offset = total;
    total += (plan[i].bytes + 63) & ~uint64_t{63};
  }
  auto storage = std::shared_ptr<std::byte[]>(new std::byte[std::max<uint64_t>(total, 64)]);
  ModelWeights out;
  out.source = m.source + " as " + std::string(name(type));
  out.format = m.format;
  out.config = m.config;
  out.metadata = m.metadata;
  out.chat_template = m.chat_template;
  out.tokenizer = m.tokenizer;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const WeightTensor& t = m.tensors[i];
    std::byte* dst = storage.get() + plan[i].offset;
    WeightTensor nt = t;
    if (!plan[i].convert) {
      std::memcpy(dst, t.data.data(), t.data.size());
    } else {
      const int64_t cols = t.desc.shape.last(), rows = t.desc.rows();
      const uint64_t src_row = t.data.size() / (uint64_t)rows, dst_row = plan[i].bytes / (uint64_t)rows;
      pf.run(rows, 16, [&](int64_t r0, int64_t r1) {
        std::vector<float> f((size_t)cols);
        for (int64_t r = r0; r < r1; ++r) {
          dequantize_row(t.desc.dtype, t.data.data() + r * src_row, f.data(), cols);
          quantize_row(type, f.data(), dst + r * dst_row, cols);
        }
      });
      nt.desc = TensorDesc::contiguous(type, t.desc.shape);
    }
    nt.data = std::span<const std::byte>(dst, plan[i].bytes);
    out.tensors.push_back(std::move(nt));
  }
  out.storage = std::shared_ptr<const void>(storage, storage.get());
  return out;
}

}  // namespace tessera
