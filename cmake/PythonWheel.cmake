# The Python wheel's native files (pyproject.toml; scikit-build-core sets
# SKBUILD and SKBUILD_PLATLIB_DIR): the libraries go beside the package's
# modules, where layerkit/_native.py loads them. Component `python` keeps the
# CMake package's own install rules out of the wheel.
install(FILES ${LAYERKIT_LIBRARY_FILE} DESTINATION ${SKBUILD_PLATLIB_DIR}/layerkit COMPONENT python)
# The onnxruntime custom-op library, where this build makes it.
if(TARGET layerkit_ort)
  install(TARGETS layerkit_ort LIBRARY DESTINATION ${SKBUILD_PLATLIB_DIR}/layerkit COMPONENT python)
endif()
