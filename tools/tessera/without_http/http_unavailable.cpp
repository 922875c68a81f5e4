// `serve` and `bench serve --url` in a CLI built without cpp-httplib
// (TESSERA_HTTP=OFF: the arm64 cross build, where Debian's compiled
// libcpp-httplib has no arm64 copy on an x86 host). Both say so and fail;
// every other command is the same as in a full build.
#include <cstdio>

#include "tools/tessera/http_load_target.h"
#include "tools/tessera/serve_http.h"
#include "tools/tessera/serve_router.h"

namespace tessera::cli {

int serve(const ServeOptions&) {
  std::fprintf(stderr, "tessera serve: this tessera was built without HTTP (TESSERA_HTTP=OFF, no cpp-httplib)\n");
  return 1;
}

int serve_router(const RouterOptions&) {
  std::fprintf(stderr, "tessera serve --role router: this tessera was built without HTTP (TESSERA_HTTP=OFF, no cpp-httplib)\n");
  return 1;
}

Expected<std::unique_ptr<LoadTarget>> open_http_load_target(const HttpTargetOptions& o) {
  return unsupported("bench serve --url " + o.url + ": this tessera was built without HTTP (TESSERA_HTTP=OFF, no cpp-httplib)");
}

}  // namespace tessera::cli
