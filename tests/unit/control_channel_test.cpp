// The leader's control channel (engine/dist/parallel.cpp) over MPI: rank 0's
// sends return before any follower takes them, and a follower takes every
// message whole and in order. Run by mpirun: the case starts this binary
// again as two ranks, each of which runs the case's other branch.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "backends/mpi/mpi_world.h"
#include "engine/dist/parallel.h"
#include "support/mpirun.h"
#include "support/requirements.h"

using namespace tessera;

namespace {

// Distinct contents per message, so a message taken out of order or cut short shows.
std::vector<std::byte> payload_of(size_t bytes, int salt) {
  std::vector<std::byte> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = (std::byte)((i * 131 + (size_t)salt * 7) & 0xff);
  return out;
}

// A small message, one past any eager limit (MPI sends it by rendezvous, a
// send that would wait for the receiver if it were blocking), and an empty one.
const size_t kSizes[] = {40, 4u << 20, 0};

void run_rank(HostGroup& g) {
  if (g.rank() == 0) {
    for (int i = 0; i < 3; ++i) REQUIRE(send_control(g, ControlKind::step, payload_of(kSizes[i], i)).is_ok());
    // Only now does rank 1 start to receive: had a send above waited for it, neither rank would get here.
    REQUIRE(g.min(0).has_value());
    REQUIRE(send_control(g, ControlKind::leave).is_ok());
    return;
  }
  REQUIRE(g.min(0).has_value());
  for (int i = 0; i < 3; ++i) {
    Expected<ControlMessage> m = receive_control(g);
    REQUIRE_MESSAGE(m.has_value(), m.status().message());
    CHECK(m->kind == ControlKind::step);
    CHECK(m->payload == payload_of(kSizes[i], i));
  }
  Expected<ControlMessage> leave = receive_control(g);
  REQUIRE(leave.has_value());
  CHECK(leave->kind == ControlKind::leave);
}

}  // namespace

TEST_CASE("control channel over MPI: rank 0's messages leave without waiting for the follower, who takes them whole and in order" *
          needs(testing::mpirun_tests())) {
  if (mpi::launched_size() > 1) {
    Expected<mpi::MpiWorld> w = mpi::join_world();
    REQUIRE_MESSAGE(w.has_value(), w.status().message());
    run_rank(*w->group);
    return;
  }
  std::vector<std::string> argv = testing::mpirun_launcher(2);
  argv.insert(argv.begin(), {"timeout", "120"});  // a send that waits would hang both ranks: fail instead
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  argv.insert(argv.end(), {std::string(self, (size_t)n), "--no-version",
                           "--test-case=control channel over MPI*"});
  std::string cmd;
  for (const std::string& a : argv) cmd += "'" + a + "' ";
  INFO(cmd);
  CHECK(std::system(cmd.c_str()) == 0);
}
