#===- AddDist.cmake - Helpers for dist-opt libraries -----------------------===#
# SPDX-License-Identifier: Apache-2.0
#
# add_dist_library wraps add_mlir_library so every dist library links only the
# shared MLIR and LLVM libraries (never single MLIRFoo archives).
include_guard()

function(add_dist_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;LINK_LIBS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_LINK_LIBS} MLIR LLVM)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
