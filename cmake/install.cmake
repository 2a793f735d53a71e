# `cmake --install`: the co_up runtime and the plugin SDK, in two components.
#
#   runtime  bin/co_up, the shipped plugins in lib/co_up/plugins/ (every co_up_add_plugin target),
#            and the library lib/libco_up.so.<API major> (end of this file)
#   sdk      include/co_up/plugin_abi.h and plugin_helpers.h (C99), the CMake package
#            (find_package(co_up CONFIG) -> co_up::plugin_sdk) and the pkg-config file co_up-plugin.pc
#
# Plugins go under lib/, not next to the binary, because bin/ holds executables (FHS, GNUInstallDirs);
# the binary finds them at the same relative path, fixed here at configure time (so `--prefix` at
# install time still works), after plugins/ next to itself, which is the build tree's layout.
# Both files are relocatable: the package and the .pc file find the prefix from where they lie.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(CO_UP_INSTALL_PLUGINDIR ${CMAKE_INSTALL_LIBDIR}/co_up/plugins)
set(CO_UP_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/co_up)
set(CO_UP_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The ABI version, from the header, for the package variables and the .pc file.
file(STRINGS ${PROJECT_SOURCE_DIR}/core/include/co_up/plugin_abi.h abi_lines
     REGEX "^#define CO_UP_ABI_VERSION_(MAJOR|MINOR) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+)u?.*" "\\1" CO_UP_ABI_MAJOR "${abi_lines}")
string(REGEX REPLACE ".*MINOR ([0-9]+)u?.*" "\\1" CO_UP_ABI_MINOR "${abi_lines}")

# --- runtime ---------------------------------------------------------------------------------------
install(TARGETS co_up RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
get_property(co_up_shipped_plugins GLOBAL PROPERTY CO_UP_SHIPPED_PLUGINS)
install(TARGETS ${co_up_shipped_plugins}
        LIBRARY DESTINATION ${CO_UP_INSTALL_PLUGINDIR} COMPONENT runtime)
file(RELATIVE_PATH co_up_plugins_from_bin ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_FULL_LIBDIR}/co_up/plugins)
set_source_files_properties(${PROJECT_SOURCE_DIR}/core/plugin_registry.cpp
  TARGET_DIRECTORY co_up_core
  PROPERTIES COMPILE_DEFINITIONS CO_UP_INSTALLED_PLUGIN_DIR="${co_up_plugins_from_bin}")

# --- sdk -------------------------------------------------------------------------------------------
set_target_properties(co_up_plugin_sdk PROPERTIES EXPORT_NAME plugin_sdk)
add_library(co_up::plugin_sdk ALIAS co_up_plugin_sdk)
install(TARGETS co_up_plugin_sdk EXPORT co_upTargets COMPONENT sdk)
install(FILES ${PROJECT_SOURCE_DIR}/core/include/co_up/plugin_abi.h
              ${PROJECT_SOURCE_DIR}/core/include/co_up/plugin_helpers.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/co_up COMPONENT sdk)
install(EXPORT co_upTargets NAMESPACE co_up:: DESTINATION ${CO_UP_INSTALL_CMAKEDIR} COMPONENT sdk)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/co_upConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/co_upConfig.cmake
  INSTALL_DESTINATION ${CO_UP_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CO_UP_INSTALL_PLUGINDIR CMAKE_INSTALL_BINDIR)
# A plugin is a native shared object: the version file also checks the pointer size (no
# ARCH_INDEPENDENT), so a 32-bit plugin build does not pick up a 64-bit co_up.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/co_upConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/co_upConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/co_upConfigVersion.cmake
        DESTINATION ${CO_UP_INSTALL_CMAKEDIR} COMPONENT sdk)

# pkg-config: the prefix is found from the .pc file's own directory (${pcfiledir}).
file(RELATIVE_PATH co_up_prefix_from_pc ${CMAKE_INSTALL_PREFIX}/${CO_UP_INSTALL_PKGCONFIGDIR}
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" co_up_prefix_from_pc "${co_up_prefix_from_pc}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/co_up-plugin.pc.in
               ${PROJECT_BINARY_DIR}/cmake/co_up-plugin.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/co_up-plugin.pc
        DESTINATION ${CO_UP_INSTALL_PKGCONFIGDIR} COMPONENT sdk)

# --- library ---------------------------------------------------------------------------------------
# libco_up.so.<API major> (runtime) with its headers co_up/co_up.h (C) and co_up/co_up.hpp (C++20),
# the namelink, co_up::co_up in the same CMake package, and co_up.pc (sdk). The library finds the
# plugins in co_up/plugins/ beside itself, which is where the runtime component puts them.
# Its own export set, installed with the library (runtime): an sdk-only install (a plugin vendor's)
# then still gives a package whose targets all exist; co_upConfig.cmake includes it when present.
install(TARGETS co_up_lib EXPORT co_upLibraryTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT sdk)
install(EXPORT co_upLibraryTargets NAMESPACE co_up:: DESTINATION ${CO_UP_INSTALL_CMAKEDIR}
        COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/include/co_up/co_up.h ${PROJECT_SOURCE_DIR}/include/co_up/co_up.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/co_up COMPONENT sdk)
configure_file(${CMAKE_CURRENT_LIST_DIR}/co_up.pc.in ${PROJECT_BINARY_DIR}/cmake/co_up.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/co_up.pc
        DESTINATION ${CO_UP_INSTALL_PKGCONFIGDIR} COMPONENT sdk)
