# liblayerkit.so.1: the C API (include/layerkit.h, implemented in
# Sources/LayerKitC) with the Swift runtime and Foundation linked in
# statically, so a C program needs no Swift toolchain.
#
# SwiftPM builds the objects (product LayerKitCAPI, a static archive of every
# module the API uses, in the package's own .build so `make` and `pip install`
# share one release build); swiftc links them here, because SwiftPM can link a
# dynamic library only against the shared Swift runtime.
find_program(SWIFT swift HINTS /opt/swift/usr/bin REQUIRED)
find_program(SWIFTC swiftc HINTS /opt/swift/usr/bin REQUIRED)

set(LAYERKIT_SWIFT_BUILD ${PROJECT_SOURCE_DIR}/.build/release)
# The SONAME's number is the C API's LK_API_VERSION (include/layerkit.h), not the
# package's version: it changes only when the API breaks.
set(LAYERKIT_API_VERSION 1)
include(${CMAKE_CURRENT_LIST_DIR}/LayerKitVersions.cmake)
set(LAYERKIT_SONAME liblayerkit.so.${LAYERKIT_API_VERSION})
set(LAYERKIT_LIBRARY_FILE ${CMAKE_CURRENT_BINARY_DIR}/${LAYERKIT_SONAME})

# SwiftPM decides what is stale; it always runs. It runs in an environment of
# its own (env -i): SwiftPM rebuilds every module when its environment differs
# from the last build's, and callers' environments do (pip's isolated build
# adds variables and PATH entries that change on every run), so `pip install .`
# twice, or `make test-c` after it, would each rebuild everything. This also
# leaves out CC/CXX/CFLAGS, with which SwiftPM would compile its C targets with
# the gcc they name and fail.
find_program(LAYERKIT_ENV env REQUIRED)
get_filename_component(LAYERKIT_SWIFT_BIN ${SWIFT} DIRECTORY)
add_custom_target(layerkit_swift_objects
  COMMAND ${LAYERKIT_ENV} -i HOME=$ENV{HOME} PATH=${LAYERKIT_SWIFT_BIN}:/usr/local/bin:/usr/bin:/bin
          ${SWIFT} build -c release --product LayerKitCAPI --package-path ${PROJECT_SOURCE_DIR}
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
