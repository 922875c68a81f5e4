#pragma once
// `mpirun -np N ...` for tests that start Tessera's ranks as a user would:
// on loopback over shared memory, as root where the machine runs the tests
// as root, each rank one thread (the ranks share this machine's cores).
#include <cstdlib>
#include <string>
#include <vector>

#include "support/requirements.h"

namespace tessera::testing {

inline bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// Open MPI's mpirun; tools/quickstart.sh test installs it (openmpi-bin).
inline const Requirement& mpirun_tests() {
  static const Requirement r =
      announce({"the mpirun tests", have_mpirun() ? "" : "mpirun is not installed (apt install openmpi-bin)"});
  return r;
}

inline std::vector<std::string> mpirun_launcher(int ranks) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OMPI_MCA_btl", "self,vader", 1);
  // Containers often forbid the cross-process copies (CMA) vader would use for large messages.
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(ranks), "--oversubscribe", "-x", "TESSERA_THREADS=1"};
#if defined(__SANITIZE_ADDRESS__)
  // Open MPI leaks what MPI_Init allocates and is built without frame
  // pointers: with ASan's fast unwinder a leak's stack stops inside Open MPI
  // at an unnamed frame, and tests/lsan-suppressions.txt cannot match it.
  // The slow unwinder reaches the MPI call. Only the ranks pay for it.
  const char* asan = std::getenv("ASAN_OPTIONS");
  argv.insert(argv.end(), {"-x", std::string("ASAN_OPTIONS=") + (asan ? asan : "") + ":fast_unwind_on_malloc=0"});
#endif
  return argv;
}

}  // namespace tessera::testing
