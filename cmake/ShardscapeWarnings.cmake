# SPDX-License-Identifier: MIT
# One interface target carries the warning flags; every project target links it.
add_library(shardscape_warnings INTERFACE)
target_compile_options(shardscape_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                                     -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough)
# GCC 12 reports -Wrestrict on ordinary std::string concatenation ("x" + std::string) once it inlines at -O2
# (GCC bug 105329, fixed in GCC 13): a false positive, so it must not fail -Werror builds.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(shardscape_warnings INTERFACE -Wno-restrict)
endif()
if(SHARDSCAPE_WERROR)
    target_compile_options(shardscape_warnings INTERFACE -Werror)
endif()
