#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstring>

int main(int argc, char** argv) {
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  // CTest's discovery (--list-test-cases) lists skipped cases too, so that a
  // case whose requirement is missing here (support/requirements.h) becomes a
  // test that CTest reports Skipped, by name, instead of never being listed.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--list-test-cases") == 0 || std::strcmp(argv[i], "-ltc") == 0) context.setOption("no-skip", true);
  return context.run();
}
