#include "backends/cpu/cpu_stream.h"

#include <cstring>
#include <string>

#include "backends/cpu/cpu_executable.h"

namespace tessera::cpu {

namespace {

Status host_range(Buffer& b, uint64_t offset, uint64_t bytes, const char* what) {
  if (!b.host_data()) return invalid_argument(std::string("cpu ") + what + ": the buffer is not host memory");
  if (offset > b.size() || bytes > b.size() - offset)
    return out_of_range(std::string("cpu ") + what + ": " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                        " run past the end of a " + std::to_string(b.size()) + "-byte buffer");
  return Status::ok();
}

}  // namespace

Status CpuStream::upload(Buffer& dst, uint64_t offset, std::span<const std::byte> src) {
  TS_TRY(host_range(dst, offset, src.size(), "upload"));
  if (!src.empty()) std::memcpy(dst.host_data() + offset, src.data(), src.size());
  return Status::ok();
}

Status CpuStream::download(std::span<std::byte> dst, Buffer& src, uint64_t offset) {
  TS_TRY(host_range(src, offset, dst.size(), "download"));
  if (!dst.empty()) std::memcpy(dst.data(), src.host_data() + offset, dst.size());
  return Status::ok();
}

Status CpuStream::copy(Buffer& src, uint64_t src_offset, Buffer& dst, uint64_t dst_offset, uint64_t bytes) {
  if (!src.host_data() || !dst.host_data()) return invalid_argument("cpu copy: a buffer is not host memory");
  TS_TRY(check_copy_range(src, src_offset, dst, dst_offset, bytes));
  // memmove: a copy within one buffer may overlap itself.
  if (bytes) std::memmove(dst.host_data() + dst_offset, src.host_data() + src_offset, bytes);
  return Status::ok();
}

Status CpuStream::copy_blocks(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks) {
  TS_TRY(check_block_copies(pools, blocks));
  for (const KvPoolCopy& p : pools)
    if (!p.src->host_data() || !p.dst->host_data()) return invalid_argument("cpu copy_blocks: a pool is not host memory");
  for (const KvPoolCopy& p : pools)
    for (const BlockCopy& b : blocks)
      std::memcpy(p.dst->host_data() + (uint64_t)b.dst * p.block_bytes, p.src->host_data() + (uint64_t)b.src * p.block_bytes,
                  p.block_bytes);
  return Status::ok();
}

Status CpuStream::run(Executable& exe, const StepArgs& args) {
  auto* cpu = dynamic_cast<CpuExecutable*>(&exe);
  if (!cpu) return invalid_argument("cpu stream: executable was compiled for another device");
  return cpu->run(args);
}

Status CpuStream::record(Event& e) {
  if (!dynamic_cast<CpuEvent*>(&e)) return invalid_argument("cpu stream: the event was made by another device");
  return Status::ok();  // the work before it is done already
}

Status CpuStream::wait(Event& e) {
  // A CPU event is complete at its record; another device's is waited for here.
  return e.synchronize();
}

}  // namespace tessera::cpu
