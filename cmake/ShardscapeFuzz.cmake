# SPDX-License-Identifier: MIT
# SHARDSCAPE_BUILD_FUZZ: libFuzzer targets for every file loader (tests/fuzz). Everything in such a build is compiled
# with coverage instrumentation and ASan + UBSan (UB aborts instead of being reported and skipped), so a finding is a
# crash; the fuzz targets themselves link libFuzzer's main. clang only: GCC has no libFuzzer.
option(SHARDSCAPE_BUILD_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only; instruments the whole build)" OFF)
add_feature_info(Fuzz SHARDSCAPE_BUILD_FUZZ "libFuzzer targets for the file loaders (clang, ASan, UBSan)")
if(SHARDSCAPE_BUILD_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
        message(FATAL_ERROR "SHARDSCAPE_BUILD_FUZZ needs clang (libFuzzer), but the C++ compiler is "
                            "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}. Configure a separate build "
                            "directory with -DCMAKE_CXX_COMPILER=clang++ (see tests/fuzz/README.md).")
    endif()
    if(SHARDSCAPE_SANITIZERS)
        message(FATAL_ERROR "SHARDSCAPE_BUILD_FUZZ already builds with address,undefined: leave "
                            "SHARDSCAPE_SANITIZERS empty")
    endif()
    add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                        -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address,undefined)
endif()
