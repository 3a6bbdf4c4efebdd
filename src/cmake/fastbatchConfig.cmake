# fastbatch's CMake package, for native env plugins built out of tree.
#
#   find_package(fastbatch CONFIG REQUIRED)   # with -Dfastbatch_DIR="$(python -m fastbatch --cmakedir)"
#   fastbatch_add_env(my_env my_env.cc)       # a loadable module exporting FASTBATCH_EXPORT_ENV(...)
#
# Provides the interface target fastbatch::headers (the public headers, C++17), the variables
# fastbatch_INCLUDE_DIR and fastbatch_ABI_VERSION, and the function fastbatch_add_env. A plugin
# needs neither pybind11 nor the Python headers.
get_filename_component(_fastbatch_root "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(fastbatch_INCLUDE_DIR "${_fastbatch_root}/include")
set(fastbatch_ABI_VERSION 1)

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
  set_target_properties(${target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
endfunction()
