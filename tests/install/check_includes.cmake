# cmake -DSOURCE_DIR=<repo> -P check_includes.cmake
# The public headers (include/tessera/) include only the standard library and
# each other; the CLI (tools/tessera/) includes only the public headers, its
# own headers (tools/tessera/*.h), CLI11, nlohmann json, cpp-httplib (<httplib.h>) and POSIX's
# system headers (<sys/socket.h>: the server's connection probe). Either reaching into core/,
# engine/, graph/, backends/ or kernels/ fails, naming the file and line.
file(GLOB_RECURSE public_headers ${SOURCE_DIR}/include/tessera/*.h)
file(GLOB_RECURSE cli_sources ${SOURCE_DIR}/tools/tessera/*.cpp ${SOURCE_DIR}/tools/tessera/*.h)
if(NOT public_headers OR NOT cli_sources)
  message(FATAL_ERROR "check_includes: no files under ${SOURCE_DIR}/include/tessera or tools/tessera")
endif()

set(bad "")
foreach(f ${public_headers} ${cli_sources})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include")
  file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
  foreach(line ${lines})
    string(REGEX MATCH "[<\"]([^>\"]+)[>\"]" _ "${line}")
    set(inc "${CMAKE_MATCH_1}")
    if(inc MATCHES "^(core|engine|graph|backends|kernels)/")
      list(APPEND bad "${rel}: ${line}")
    elseif(rel MATCHES "^include/" AND inc MATCHES "/" AND NOT inc MATCHES "^tessera/")
      # a public header may name only its siblings; a path elsewhere is not installed
      list(APPEND bad "${rel}: ${line}")
    elseif(rel MATCHES "^tools/" AND inc MATCHES "/" AND
           NOT inc MATCHES "^(tessera/|tools/tessera/[a-z_]+\\.h$|CLI/|nlohmann/|sys/|netinet/|arpa/)")
      list(APPEND bad "${rel}: ${line}")
    endif()
  endforeach()
endforeach()

if(bad)
  list(JOIN bad "\n  " lines)
  message(FATAL_ERROR "includes outside the public API:\n  ${lines}")
endif()
list(LENGTH public_headers np)
list(LENGTH cli_sources nc)
message(STATUS "check_includes: ${np} public headers and ${nc} CLI files include only the public API")
