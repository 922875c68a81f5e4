# `cmake --install build --prefix P` (docs/api.md):
#   P/bin/tessera                         the CLI, RPATH $ORIGIN/../lib
#   P/lib/libtessera.so                   the public API, nothing else exported
#   P/include/tessera/*.h                 its headers, self-contained
#   P/lib/tessera/libtessera-backend-*.so plugins, where the registry looks beside libtessera.so
#   P/lib/cmake/tessera/                  find_package(tessera) -> tessera::tessera
#   P/lib/pkgconfig/tessera.pc            pkg-config --cflags --libs tessera
include(CMakePackageConfigHelpers)

set(TESSERA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tessera)

install(TARGETS tessera_shared EXPORT tesseraTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tessera RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tessera DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
foreach(plugin vulkan cuda rocm)
  if(TARGET tessera-backend-${plugin})
    install(TARGETS tessera-backend-${plugin} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/tessera)
  endif()
endforeach()

install(EXPORT tesseraTargets NAMESPACE tessera:: DESTINATION ${TESSERA_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tesseraConfig.cmake INSTALL_DESTINATION ${TESSERA_CMAKE_DIR})
# 0.x: a minor version may change the API, so only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tesseraConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tesseraConfig.cmake ${PROJECT_BINARY_DIR}/tesseraConfigVersion.cmake
  DESTINATION ${TESSERA_CMAKE_DIR})

# The .pc file finds its prefix from its own place, so an installed tree can be moved.
file(RELATIVE_PATH TESSERA_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" TESSERA_PC_TO_PREFIX "${TESSERA_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/tessera.pc.in ${PROJECT_BINARY_DIR}/tessera.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tessera.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
