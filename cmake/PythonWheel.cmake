# The Python wheel's native files (pyproject.toml; scikit-build-core sets
# SKBUILD and SKBUILD_PLATLIB_DIR): the libraries go beside the package's
# modules, where layerkit/_native.py loads them. Component `python` keeps the
# CMake package's own install rules out of the wheel.
set(LAYERKIT_WHEEL_DIR ${SKBUILD_PLATLIB_DIR}/layerkit)
install(FILES ${LAYERKIT_LIBRARY_FILE} DESTINATION ${LAYERKIT_WHEEL_DIR} COMPONENT python)
# scikit-build-core installs with --strip, which strips only targets CMake
# links itself; swiftc links the library, so it is stripped here (91 MB with
# symbols; the build tree keeps them).
install(CODE "if(CMAKE_INSTALL_DO_STRIP)
    execute_process(COMMAND \"${CMAKE_STRIP}\" \"${LAYERKIT_WHEEL_DIR}/${LAYERKIT_SONAME}\" COMMAND_ERROR_IS_FATAL ANY)
  endif()" COMPONENT python)
# The onnxruntime custom-op library (RUNPATH $ORIGIN: it finds liblayerkit.so.1 beside it).
if(TARGET layerkit_ort)
  install(TARGETS layerkit_ort LIBRARY DESTINATION ${LAYERKIT_WHEEL_DIR} COMPONENT python)
endif()
