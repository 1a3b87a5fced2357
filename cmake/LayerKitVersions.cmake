# The versions written in three places must agree, or the configure fails:
#   project(LayerKit VERSION ...)        = LayerKitVersion.number (Sources/LayerKit/Version.swift)
#   LAYERKIT_API_VERSION (the SONAME's) = LK_API_VERSION (include/layerkit.h)
# Editing either file re-runs the configure, so a drift cannot outlive a build.

# The one value `pattern` (with one capture group) finds in `file`.
function(layerkit_read_version file pattern out)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  file(STRINGS ${file} lines REGEX "${pattern}")
  list(LENGTH lines count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "${file}: expected one line matching '${pattern}', found ${count}")
  endif()
  string(REGEX MATCH "${pattern}" match "${lines}")
  set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
endfunction()

layerkit_read_version(${PROJECT_SOURCE_DIR}/Sources/LayerKit/Version.swift
  "static let number = \"([^\"]+)\"" LAYERKIT_SWIFT_VERSION)
if(NOT LAYERKIT_SWIFT_VERSION STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "CMakeLists.txt's project version ${PROJECT_VERSION} differs from "
                      "LayerKitVersion.number ${LAYERKIT_SWIFT_VERSION} (Sources/LayerKit/Version.swift)")
endif()

layerkit_read_version(${PROJECT_SOURCE_DIR}/include/layerkit.h
  "^#define LK_API_VERSION ([0-9]+)$" LAYERKIT_HEADER_API_VERSION)
if(NOT LAYERKIT_HEADER_API_VERSION STREQUAL LAYERKIT_API_VERSION)
  message(FATAL_ERROR "cmake/LayerKitLibrary.cmake's LAYERKIT_API_VERSION ${LAYERKIT_API_VERSION} differs "
                      "from LK_API_VERSION ${LAYERKIT_HEADER_API_VERSION} (include/layerkit.h)")
endif()
