# hardboiled.cmake: a CMake function that runs hardboiled at build time.
#
#   include(hardboiled.cmake)
#   hardboiled_kernel(<library target>
#       INPUT <Halide IR: a HL_DEBUG_CODEGEN=2 log, a stmt, or a lowered module>
#       NAME <the generated function>
#       [ARGS <buffer,buffer,...>]          # Halide's argument order (--args)
#       [STORE_IN <BUFFER=MEMORY> ...]      # buffers to put in AMXTile/WMMAAccumulator memory
#       [AMX emulate|native])               # how the AMX intrinsics are compiled (default emulate)
#
# makes a static library <target> from NAME.c (C with AMX intrinsics and
# both entry points, see docs/cli.md), whose users get NAME.h and, when
# HARDBOILED_HALIDE_INCLUDE names it, HalideRuntime.h on their include path.
# HARDBOILED (the hardboiled program) and HARDBOILED_HALIDE_INCLUDE (the
# halide package's include directory) are cache variables.

set(HARDBOILED hardboiled CACHE STRING "The hardboiled command")
set(HARDBOILED_HALIDE_INCLUDE "" CACHE PATH "Directory of HalideRuntime.h (the halide package's include/)")

function(hardboiled_kernel target)
  cmake_parse_arguments(HB "" "INPUT;NAME;ARGS;AMX" "STORE_IN" ${ARGN})
  if(NOT HB_INPUT OR NOT HB_NAME)
    message(FATAL_ERROR "hardboiled_kernel(${target}): INPUT and NAME are required")
  endif()
  if(NOT HB_AMX)
    set(HB_AMX emulate)
  endif()
  set(source "${CMAKE_CURRENT_BINARY_DIR}/${HB_NAME}.c")
  set(options --name "${HB_NAME}" --emit c --quiet)
  if(HB_ARGS)
    list(APPEND options --args "${HB_ARGS}")
  endif()
  foreach(store_in IN LISTS HB_STORE_IN)
    list(APPEND options --store-in "${store_in}")
  endforeach()
  # hardboiled writes NAME.c and NAME.h whole, or nothing when it fails.
  add_custom_command(
    OUTPUT "${source}" "${CMAKE_CURRENT_BINARY_DIR}/${HB_NAME}.h"
    COMMAND ${HARDBOILED} compile "${HB_INPUT}" ${options} -o "${source}"
    DEPENDS "${HB_INPUT}"
    COMMENT "hardboiled: tensorizing ${HB_NAME}"
    VERBATIM)
  add_library(${target} STATIC "${source}")
  target_include_directories(${target} PUBLIC "${CMAKE_CURRENT_BINARY_DIR}")
  if(HARDBOILED_HALIDE_INCLUDE)
    target_include_directories(${target} PUBLIC "${HARDBOILED_HALIDE_INCLUDE}")
  endif()
  # Generated C is compiled as hardboiled checks it: no contraction of a*b+c.
  target_compile_options(${target} PRIVATE -ffp-contract=off)
  if(HB_AMX STREQUAL "native")
    target_compile_options(${target} PRIVATE -mamx-tile -mamx-bf16 -mamx-int8)
  else()
    target_compile_definitions(${target} PRIVATE HB_AMX_EMULATE)
  endif()
endfunction()
