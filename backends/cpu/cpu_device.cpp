#include "backends/cpu/cpu_device.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/cpu_executable.h"
#include "backends/cpu/cpu_info.h"
#include "backends/cpu/cpu_stream.h"

namespace tessera::cpu {

int default_cpu_threads() {
  if (const char* env = std::getenv("TESSERA_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return (int)std::max(1u, std::thread::hardware_concurrency());
}

CpuDevice::CpuDevice(int threads) : pool_(threads), info_(probe_cpu_info(pool_.num_threads())) {}

Expected<std::unique_ptr<Buffer>> CpuDevice::allocate(uint64_t bytes, MemoryUse use) {
  auto* b = CpuBuffer::owned(bytes, use);
  if (!b) return resource_exhausted("cpu: cannot allocate " + std::to_string(bytes) + " bytes of " + to_string(use));
  return std::unique_ptr<Buffer>(b);
}

Expected<std::unique_ptr<Buffer>> CpuDevice::import_weights(std::span<const std::byte> bytes) {
  // Host memory already: keep the caller's bytes (often an mmap) in place.
  return std::unique_ptr<Buffer>(CpuBuffer::borrowed(bytes.data(), bytes.size(), MemoryUse::weights));
}

Expected<std::unique_ptr<Stream>> CpuDevice::create_stream() { return std::unique_ptr<Stream>(new CpuStream()); }

Expected<std::unique_ptr<Event>> CpuDevice::create_event() { return std::unique_ptr<Event>(new CpuEvent()); }

Expected<std::unique_ptr<Executable>> CpuDevice::compile(const Plan& plan, std::span<Buffer* const> bound) {
  TS_ASSIGN_OR_RETURN(auto exe, CpuExecutable::create(plan, bound, pool_, comm_.get()));
  return std::unique_ptr<Executable>(std::move(exe));
}

Expected<uint64_t> CpuDevice::free_memory() const { return available_host_memory(); }

Status CpuDevice::use_communicator(std::shared_ptr<Communicator> comm) {
  comm_ = std::move(comm);
  return Status::ok();
}

std::vector<DeviceInfo> CpuBackend::enumerate() { return {probe_cpu_info(default_cpu_threads())}; }

Expected<std::unique_ptr<Device>> CpuBackend::open(int index) {
  if (index != 0) return not_found("cpu backend: device " + std::to_string(index) + " does not exist (only device 0)");
  return std::unique_ptr<Device>(new CpuDevice(default_cpu_threads()));
}

}  // namespace tessera::cpu
