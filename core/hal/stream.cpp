#include "core/hal/stream.h"

#include <string>

namespace tessera {

Status check_copy_range(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes) {
  if (src_offset > src.size() || bytes > src.size() - src_offset)
    return out_of_range("copy: " + std::to_string(bytes) + " bytes at source offset " + std::to_string(src_offset) +
                        " run past the end of a " + std::to_string(src.size()) + "-byte buffer");
  if (dst_offset > dst.size() || bytes > dst.size() - dst_offset)
    return out_of_range("copy: " + std::to_string(bytes) + " bytes at destination offset " + std::to_string(dst_offset) +
                        " run past the end of a " + std::to_string(dst.size()) + "-byte buffer");
  return Status::ok();
}

Status check_block_copies(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks) {
  for (size_t p = 0; p < pools.size(); ++p) {
    const KvPoolCopy& pc = pools[p];
    if (!pc.src || !pc.dst || pc.block_bytes == 0)
      return invalid_argument("copy_blocks: pool " + std::to_string(p) + " needs a source, a destination and a block size");
    const uint64_t src_blocks = pc.src->size() / pc.block_bytes, dst_blocks = pc.dst->size() / pc.block_bytes;
    for (size_t i = 0; i < blocks.size(); ++i) {
      const BlockCopy& b = blocks[i];
      if (b.src < 0 || (uint64_t)b.src >= src_blocks || b.dst < 0 || (uint64_t)b.dst >= dst_blocks)
        return out_of_range("copy_blocks: copy " + std::to_string(i) + " {" + std::to_string(b.src) + " -> " +
                            std::to_string(b.dst) + "} is outside pool " + std::to_string(p) + "'s " +
                            std::to_string(src_blocks) + " source / " + std::to_string(dst_blocks) + " destination blocks");
      if (pc.src == pc.dst && b.src == b.dst)
        return invalid_argument("copy_blocks: copy " + std::to_string(i) + " copies block " + std::to_string(b.src) +
                                " onto itself");
    }
  }
  return Status::ok();
}

}  // namespace tessera
