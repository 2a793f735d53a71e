# Cross-compiling co_up for aarch64 (arm64) Linux with Debian's cross toolchain
# (crossbuild-essential-arm64) against arm64 -dev packages unpacked into a sysroot directory
# (scripts/aarch64.sh builds it). The C/C++ runtime comes from the toolchain's own
# /usr/aarch64-linux-gnu; everything else (XNNPACK, pthreadpool, cpuinfo, gtest, png, jpeg, ...)
# from CO_UP_AARCH64_SYSROOT. Tests run under qemu-aarch64 through CMAKE_CROSSCOMPILING_EMULATOR.
#
#   cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DCO_UP_AARCH64_SYSROOT=$PWD/.aarch64/sysroot
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT CO_UP_AARCH64_SYSROOT)
  set(CO_UP_AARCH64_SYSROOT "$ENV{CO_UP_AARCH64_SYSROOT}")
endif()
if(NOT CO_UP_AARCH64_SYSROOT OR NOT EXISTS "${CO_UP_AARCH64_SYSROOT}/usr/include")
  message(FATAL_ERROR "CO_UP_AARCH64_SYSROOT='${CO_UP_AARCH64_SYSROOT}' is not an unpacked arm64 "
                      "sysroot (run scripts/aarch64.sh, which builds one)")
endif()
# try_compile projects see the variable too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CO_UP_AARCH64_SYSROOT)

set(_co_up_libdir "${CO_UP_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu")
set(CMAKE_FIND_ROOT_PATH "${CO_UP_AARCH64_SYSROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Headers of the sysroot after the toolchain's own; shared libraries of the sysroot resolve their
# dependencies (libXNNPACK -> libcpuinfo, libpthreadpool) there at link time.
# (Debian's cross g++ also searches the host's arch-independent /usr/include; the arm64
# arch-specific headers, e.g. jconfig.h, live in the sysroot's multiarch directory.)
set(_co_up_includes "-idirafter ${CO_UP_AARCH64_SYSROOT}/usr/include/aarch64-linux-gnu -idirafter ${CO_UP_AARCH64_SYSROOT}/usr/include")
set(CMAKE_C_FLAGS_INIT "${_co_up_includes}")
# -Wno-psabi: GCC notes a C++17 ABI change for pairs of floats, irrelevant within one build.
set(CMAKE_CXX_FLAGS_INIT "${_co_up_includes} -Wno-psabi")
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT
      "-L${_co_up_libdir} -Wl,-rpath-link,${_co_up_libdir} -Wl,-rpath-link,${CO_UP_AARCH64_SYSROOT}/lib/aarch64-linux-gnu")
endforeach()

# pkg-config (libgpiod) reads the sysroot's .pc files and prefixes their paths with it.
set(ENV{PKG_CONFIG_DIR} "")
set(ENV{PKG_CONFIG_LIBDIR} "${_co_up_libdir}/pkgconfig:${CO_UP_AARCH64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${CO_UP_AARCH64_SYSROOT}")

# Run target binaries (gtest discovery, ctest) under qemu-user with the arm64 loader and libraries.
set(CMAKE_CROSSCOMPILING_EMULATOR
    qemu-aarch64 -L /usr/aarch64-linux-gnu
    -E LD_LIBRARY_PATH=${_co_up_libdir}:${CO_UP_AARCH64_SYSROOT}/lib/aarch64-linux-gnu)
