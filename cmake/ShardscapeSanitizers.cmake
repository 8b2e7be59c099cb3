# SPDX-License-Identifier: MIT
# SHARDSCAPE_SANITIZERS is a comma list passed to -fsanitize (e.g. "address,undefined" or "thread").
set(SHARDSCAPE_SANITIZERS "" CACHE STRING "Sanitizers to build with, e.g. address,undefined or thread")
if(SHARDSCAPE_SANITIZERS)
    add_compile_options(-fsanitize=${SHARDSCAPE_SANITIZERS} -fno-omit-frame-pointer -fno-sanitize-recover=all)
    add_link_options(-fsanitize=${SHARDSCAPE_SANITIZERS})
endif()
