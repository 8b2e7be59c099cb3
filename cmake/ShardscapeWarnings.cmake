# SPDX-License-Identifier: MIT
# One interface target carries the warning flags; every project target links it.
add_library(shardscape_warnings INTERFACE)
target_compile_options(shardscape_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                                     -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough)
if(SHARDSCAPE_WERROR)
    target_compile_options(shardscape_warnings INTERFACE -Werror)
endif()
