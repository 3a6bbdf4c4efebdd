# fastbatch's CMake package, for native env plugins built out of tree.
#
#   find_package(fastbatch CONFIG REQUIRED)   # with -Dfastbatch_DIR="$(python -m fastbatch --cmakedir)"
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
get_filename_component(_fastbatch_root "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(fastbatch_INCLUDE_DIR "${_fastbatch_root}/include")
set(fastbatch_ABI_VERSION 6)

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
