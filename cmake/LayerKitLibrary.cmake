# liblayerkit.so.1: the C API (include/layerkit.h, implemented in
# Sources/LayerKitC) with the Swift runtime and Foundation linked in
# statically, so a C program needs no Swift toolchain.
#
# SwiftPM builds the objects (product LayerKitCAPI, a static archive of every
# module the API uses, in the package's own .build so `make` and `pip install`
# share one release build); swiftc links them here, because SwiftPM can link a
# dynamic library only against the shared Swift runtime.
find_program(SWIFTC swiftc HINTS /opt/swift/usr/bin REQUIRED)

set(LAYERKIT_SWIFT_BUILD ${PROJECT_SOURCE_DIR}/.build/release)
# The SONAME's number is the C API's LK_API_VERSION (include/layerkit.h), not the
# package's version: it changes only when the API breaks.
set(LAYERKIT_API_VERSION 1)
include(${CMAKE_CURRENT_LIST_DIR}/LayerKitVersions.cmake)
set(LAYERKIT_SONAME liblayerkit.so.${LAYERKIT_API_VERSION})
set(LAYERKIT_LIBRARY_FILE ${CMAKE_CURRENT_BINARY_DIR}/${LAYERKIT_SONAME})

# SwiftPM decides what is stale; it always runs, through
# Scripts/swift-release-build: the one environment every release build of the
# package uses, so this build, pip's and make's share their objects. Under pip
# (SKBUILD), whose build output is hidden without -v, its progress is copied to
# the terminal.
set(LAYERKIT_PROGRESS_ENV)
if(SKBUILD)
  set(LAYERKIT_PROGRESS_ENV ${CMAKE_COMMAND} -E env LAYERKIT_PROGRESS_TO_TTY=1)
endif()
add_custom_target(layerkit_swift_objects
  COMMAND ${LAYERKIT_PROGRESS_ENV} ${PROJECT_SOURCE_DIR}/Scripts/swift-release-build --product LayerKitCAPI --package-path ${PROJECT_SOURCE_DIR}
  BYPRODUCTS ${LAYERKIT_SWIFT_BUILD}/libLayerKitCAPI.a
  COMMENT "swift build -c release --product LayerKitCAPI"
  USES_TERMINAL VERBATIM)

# The API's own objects are linked as objects, the rest from the archive:
# swiftc's -static-stdlib hides every archive's symbols (--exclude-libs ALL),
# which would hide the lk_* functions too. swiftc adds the libraries the
# objects name (autolink); the Foundation archives' own dependencies are not
# followed, so they are named here. The system libraries are those of
# Package.swift's targets (glslang's archives in dependency order).
# lld, the toolchain's linker, and not gold: libdispatch's thread-local
# __dispatch_tsd is hidden, but gold writes its TLS relocations against the
# symbol itself, which puts it in the dynamic symbol table (`nm -D` lists it);
# lld resolves them within the library.
add_custom_command(
  OUTPUT ${LAYERKIT_LIBRARY_FILE}
  COMMAND ${SWIFTC} -emit-library -static-stdlib -use-ld=lld -o ${LAYERKIT_LIBRARY_FILE}
          ${LAYERKIT_SWIFT_BUILD}/LayerKitC.build/*.o ${LAYERKIT_SWIFT_BUILD}/libLayerKitCAPI.a
          -Xlinker -soname=${LAYERKIT_SONAME}
          -Xlinker --version-script=${PROJECT_SOURCE_DIR}/cmake/layerkit.map
          -lFoundationInternationalization -lFoundationEssentials -lCoreFoundation -l_FoundationICU
          -l_FoundationCShims -l_FoundationCollections
          -lvulkan -lpng16 -ljpeg -lsleef
          -lglslang-default-resource-limits -lSPIRV -lglslang -lMachineIndependent -lGenericCodeGen
          -lOGLCompiler -lOSDependent -lSPIRV-Tools-opt -lSPIRV-Tools -lstdc++ -lpthread -lm
  COMMAND ${CMAKE_COMMAND} -E create_symlink ${LAYERKIT_SONAME} ${CMAKE_CURRENT_BINARY_DIR}/liblayerkit.so
  DEPENDS layerkit_swift_objects ${LAYERKIT_SWIFT_BUILD}/libLayerKitCAPI.a ${PROJECT_SOURCE_DIR}/cmake/layerkit.map
  COMMENT "Linking ${LAYERKIT_SONAME} (Swift runtime inside)")
add_custom_target(layerkit_library ALL DEPENDS ${LAYERKIT_LIBRARY_FILE})

# The library for targets of this build (the onnxruntime op library, the C tests).
add_library(layerkit SHARED IMPORTED GLOBAL)
set_target_properties(layerkit PROPERTIES
  IMPORTED_LOCATION ${LAYERKIT_LIBRARY_FILE}
  IMPORTED_SONAME ${LAYERKIT_SONAME}
  INTERFACE_INCLUDE_DIRECTORIES ${PROJECT_SOURCE_DIR}/include)
add_dependencies(layerkit layerkit_library)
add_library(LayerKit::layerkit ALIAS layerkit)
