# Offline checks of the GLSL shaders: every Shaders/*.comp is compiled to
# SPIR-V by glslangValidator at build time, and each result is checked by
# spirv-val as a ctest test. (The Swift package compiles the same sources at
# run time through glslang's C interface; this catches errors before that.)
find_program(GLSLANG_VALIDATOR glslangValidator REQUIRED)
find_program(SPIRV_VAL spirv-val REQUIRED)

set(SHADER_DIR ${PROJECT_SOURCE_DIR}/Shaders)
file(GLOB SHADERS CONFIGURE_DEPENDS ${SHADER_DIR}/*.comp)
file(GLOB SHADER_INCLUDES CONFIGURE_DEPENDS ${SHADER_DIR}/*.glsl)

set(SPIRV_FILES)
foreach(SHADER ${SHADERS})
  get_filename_component(NAME ${SHADER} NAME_WE)
  set(SPIRV ${CMAKE_CURRENT_BINARY_DIR}/shaders/${NAME}.spv)
  add_custom_command(
    OUTPUT ${SPIRV}
    COMMAND ${GLSLANG_VALIDATOR} -V --target-env vulkan1.1 -I${SHADER_DIR} ${SHADER} -o ${SPIRV}
    DEPENDS ${SHADER} ${SHADER_INCLUDES}
    COMMENT "glslangValidator ${NAME}.comp")
  list(APPEND SPIRV_FILES ${SPIRV})
  add_test(NAME spirv-val-${NAME} COMMAND ${SPIRV_VAL} --target-env vulkan1.1 ${SPIRV})
endforeach()

add_custom_target(shaders ALL DEPENDS ${SPIRV_FILES})
