# What `cmake --install` puts in place: libkplay.so (versioned), the public headers, the kplay
# command, the shipped tunings (share/kplay/tunings), an exported CMake package (find_package(kplay)
# -> kplay::kplay) with its version file, and kplay.pc for pkg-config. Only when kplay is the top-level project or KPLAY_INSTALL is on.
include(CMakePackageConfigHelpers)

if(CMAKE_SOURCE_DIR STREQUAL PROJECT_SOURCE_DIR)
  set(KPLAY_INSTALL_DEFAULT ON)
else()
  set(KPLAY_INSTALL_DEFAULT OFF)
endif()
option(KPLAY_INSTALL "Install kplay with the project that includes it" ${KPLAY_INSTALL_DEFAULT})
if(NOT KPLAY_INSTALL)
  return()
endif()

set(KPLAY_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kplay)

install(TARGETS kplay_shared EXPORT kplayTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kplay RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kplay DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT development FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
# The shipped tunings, where the library and the command look for them (../share/kplay/tunings).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tunings/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kplay/tunings
  COMPONENT runtime FILES_MATCHING PATTERN "*.json" PATTERN "README.md")

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/kplay COMPONENT runtime)

install(EXPORT kplayTargets NAMESPACE kplay:: DESTINATION ${KPLAY_CMAKE_DIR} COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kplayConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kplayConfig.cmake INSTALL_DESTINATION ${KPLAY_CMAKE_DIR})
# 0.x: a different minor version may break the API, so only the same minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kplayConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kplayConfig.cmake ${PROJECT_BINARY_DIR}/kplayConfigVersion.cmake
  DESTINATION ${KPLAY_CMAKE_DIR} COMPONENT development)

# pkg-config: relative to the prefix it is installed in, so the tree can be moved.
file(RELATIVE_PATH KPLAY_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
configure_file(${PROJECT_SOURCE_DIR}/cmake/kplay.pc.in ${PROJECT_BINARY_DIR}/kplay.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kplay.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)
