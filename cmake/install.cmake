# What `cmake --install` and CPack put where, for others to build on:
#   include/extmem/...            the public headers (extmem/version.h generated)
#   LIBDIR/libextmem.a            the C++ library (static), for find_package(extmem)
#   LIBDIR/libextmem.so.0         the C interface (zerocopy_c.h) as a shared library, for pkg-config
#   LIBDIR/cmake/extmem/          extmemConfig.cmake, extmemTargets*.cmake
#   LIBDIR/pkgconfig/extmem.pc    -lextmem: the shared C library
#   bin/extmem                    the command
# The C interface is shared because a C program cannot link the static C++
# library with `pkg-config --libs extmem` alone (it would need the C++ runtime
# and fmt on its command line); libextmem.so carries those as its own
# dependencies and exports only extmem_zc_* (cmake/extmem_c.map).

# The shared C library: zerocopy_c.cpp compiled into it, the rest of what it
# calls taken from the static library (position-independent already).
add_library(extmem_c SHARED ${CMAKE_CURRENT_SOURCE_DIR}/src/core/zerocopy_c.cpp)
add_library(extmem::extmem_c ALIAS extmem_c)
target_include_directories(extmem_c
  PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_compile_options(extmem_c PRIVATE -Wall -Wextra)
target_link_libraries(extmem_c PRIVATE extmem)
# (No --no-undefined: in a sanitizer build the runtime comes with the executable.)
target_link_options(extmem_c PRIVATE "LINKER:--version-script=${CMAKE_CURRENT_SOURCE_DIR}/cmake/extmem_c.map")
set_target_properties(extmem_c PROPERTIES OUTPUT_NAME extmem VERSION ${PROJECT_VERSION} SOVERSION 0
  LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cmake/extmem_c.map)

install(TARGETS extmem extmem_c extmem_cli EXPORT extmemTargets)
install(DIRECTORY include/extmem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${EXTMEM_PUBLIC_GENERATED_DIR}/extmem/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/extmem)
install(EXPORT extmemTargets NAMESPACE extmem:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/extmem)
include(CMakePackageConfigHelpers)
configure_package_config_file(cmake/extmemConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/extmemConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/extmem)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/extmemConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/extmemConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/extmemConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/extmem)
# The .pc file finds its prefix from where it lies (${pcfiledir}), so the same
# file is right in a temporary prefix, in /usr/local and in the .deb's /usr.
file(RELATIVE_PATH EXTMEM_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" EXTMEM_PC_TO_PREFIX "${EXTMEM_PC_TO_PREFIX}")
configure_file(cmake/extmem.pc.in ${CMAKE_CURRENT_BINARY_DIR}/extmem.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/extmem.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

include(cmake/package.cmake)
