# CPack: `cpack -G DEB` in the build directory makes extmem_<version>_amd64.deb
# with everything cmake/install.cmake installs, under /usr.
#
# Depends: the shared libraries the binaries link (libc6, libstdc++6,
# libgcc-s1, libfmt9 on bookworm, libfmt10 on trixie), read off the ELF files by dpkg-shlibdeps, and the
# libraries extmem dlopen()s at run time, which dpkg-shlibdeps cannot see:
# the Vulkan loader, EGL and GLES dispatch (libvulkan1, libegl1, libgles2).
# Recommends: Mesa's CPU drivers, so that `extmem probe` has a device on a
# machine without a GPU driver (lavapipe, llvmpipe, zink), and UCX's libraries
# (libucx0: libucp.so.0 is dlopen()ed by the T5-ucx-* rows, which SKIP without
# it). Suggests: the
# development packages a consumer of the CMake package needs (fmt's CMake
# config comes with libfmt-dev). libcuda.so.1 is NVIDIA's, outside Debian
# main: nothing is declared for it.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME extmem)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "extmem maintainers <extmem@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "probe and tools for GPU memory shared across processes")
set(CPACK_PACKAGE_DESCRIPTION "extmem probe reports, route by route, whether memory exported by one process
is really seen (not copied) by another and by the GPU on both sides; the
library checks alias-or-copy (C and C++), reclaims orphaned buffer stores,
and watches the memory of process trees.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${EXTMEM_PACKAGE_PREFIX})  # CMakeLists.txt: the library looks for its executable there
set(CPACK_STRIP_FILES ON)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/strip_static.cmake)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libvulkan1, libegl1, libgles2")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "mesa-vulkan-drivers, libegl-mesa0, libgl1-mesa-dri, libucx0")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libfmt-dev, cmake, pkg-config")
# libextmem.so.0 in /usr/lib: a shlibs file, and ldconfig run by postinst/postrm.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
