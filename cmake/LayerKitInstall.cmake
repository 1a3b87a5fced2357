# `cmake --install build/cmake --prefix P [--strip]` puts under P:
#   lib/liblayerkit.so.1 and the liblayerkit.so link, include/layerkit.h,
#   lib/cmake/LayerKit/LayerKitConfig.cmake (+ its version file), lib/pkgconfig/layerkit.pc.
# The config and the .pc find the rest relative to themselves, so P can be moved.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(FILES ${LAYERKIT_LIBRARY_FILE} DESTINATION ${CMAKE_INSTALL_LIBDIR}
        PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/liblayerkit.so DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/layerkit.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# --strip applies only to targets CMake links itself; the library is linked by
# swiftc, so it is stripped here (the build tree keeps the symbols).
install(CODE "
  if(CMAKE_INSTALL_DO_STRIP)
    execute_process(COMMAND \"${CMAKE_STRIP}\" \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/${LAYERKIT_SONAME}\"
                    COMMAND_ERROR_IS_FATAL ANY)
  endif()")

set(LAYERKIT_CONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/LayerKit)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/LayerKitConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/LayerKitConfig.cmake
  INSTALL_DESTINATION ${LAYERKIT_CONFIG_DIR}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
# Before 1.0 a minor release may change the API (semantic versioning), so a
# request for 0.10 accepts 0.10.x only. The C ABI itself is the SONAME's number.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/LayerKitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/LayerKitConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/LayerKitConfigVersion.cmake
        DESTINATION ${LAYERKIT_CONFIG_DIR})

# layerkit.pc's prefix is ${pcfiledir} and the way up from lib/pkgconfig.
file(RELATIVE_PATH LAYERKIT_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" LAYERKIT_PC_TO_PREFIX ${LAYERKIT_PC_TO_PREFIX})
configure_file(${CMAKE_CURRENT_LIST_DIR}/layerkit.pc.in ${CMAKE_CURRENT_BINARY_DIR}/layerkit.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/layerkit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
