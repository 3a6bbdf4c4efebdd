# fastbatch's CMake package, for native env plugins built out of tree.
#
#   find_package(fastbatch CONFIG REQUIRED)   # with -Dfastbatch_DIR="$(python -m fastbatch --cmakedir)"
#                                             # (or -Dfastbatch_DIR=<fastbatch checkout>/src/cmake)
#   fastbatch_add_env(my_env my_env.cc)       # a loadable module exporting FASTBATCH_EXPORT_ENVS(...)
#
# Provides the interface target fastbatch::headers (the public headers, C++17), the variables
# fastbatch_INCLUDE_DIR and fastbatch_ABI_VERSION, and the function fastbatch_add_env. A plugin
# needs neither pybind11 nor the Python headers.
#
# fastbatch_add_env compiles without floating-point contraction and fast-math
# (-ffp-contract=off -fno-fast-math, as fastbatch's own envs): a fused multiply-add rounds
# differently from NumPy's separate multiply and add, so results would stop being bit-exact
# across compilers and against Python references.
#
# The package works from two places, told apart by where the headers are: installed
# (<package>/share/cmake/fastbatch, headers in <package>/include) and the source tree
# (src/cmake, headers in src/cpp/include; no version file there, so find_package without a
# version). Plugin libraries are checked against the ABI when fastbatch loads them, not here.
if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/../cpp/include/fastbatch/abi.h")
  get_filename_component(fastbatch_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../cpp/include" ABSOLUTE)
elseif(EXISTS "${CMAKE_CURRENT_LIST_DIR}/../../../include/fastbatch/abi.h")
  get_filename_component(fastbatch_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../../../include"
                         ABSOLUTE)
else()
  set(fastbatch_FOUND FALSE)
  string(CONCAT fastbatch_NOT_FOUND_MESSAGE
    "${CMAKE_CURRENT_LIST_FILE} finds fastbatch's headers neither at ../cpp/include (source "
    "tree) nor at ../../../include (installed)")
  return()
endif()
# The ABI version the headers declare (FASTBATCH_ABI_VERSION in fastbatch/abi.h).
file(STRINGS "${fastbatch_INCLUDE_DIR}/fastbatch/abi.h" fastbatch_ABI_VERSION
     REGEX "^#define FASTBATCH_ABI_VERSION [0-9]+")
string(REGEX REPLACE "^#define FASTBATCH_ABI_VERSION ([0-9]+).*" "\\1" fastbatch_ABI_VERSION
       "${fastbatch_ABI_VERSION}")

if(NOT TARGET fastbatch::headers)
  add_library(fastbatch::headers INTERFACE IMPORTED)
  set_target_properties(fastbatch::headers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${fastbatch_INCLUDE_DIR}"
    INTERFACE_COMPILE_FEATURES cxx_std_17)
endif()

# fastbatch_add_env(<target> <sources>...): a shared module for fastbatch.register_native_env.
function(fastbatch_add_env target)
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE fastbatch::headers)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -ffp-contract=off -fno-fast-math)
  endif()
  set_target_properties(${target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
endfunction()
