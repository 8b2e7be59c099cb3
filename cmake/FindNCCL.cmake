# SPDX-License-Identifier: MIT
# FindNCCL: NCCL has no CMake package of its own. Looks next to the CUDA toolkit, then in the usual
# prefixes; NCCL_ROOT (or the NCCL_HOME / NCCL_ROOT environment variables) points elsewhere, e.g. at the
# nvidia/nccl folder of the nvidia-nccl-cu13 pip wheel (which ships only libnccl.so.2, no libnccl.so link).
# Defines NCCL::NCCL, NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION.
set(_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME})
if(CUDAToolkit_LIBRARY_ROOT)
    list(APPEND _nccl_hints ${CUDAToolkit_LIBRARY_ROOT})
endif()
if(CUDAToolkit_INCLUDE_DIRS)
    list(APPEND _nccl_include_hints ${CUDAToolkit_INCLUDE_DIRS})
endif()
if(CUDAToolkit_LIBRARY_DIR)
    list(APPEND _nccl_lib_hints ${CUDAToolkit_LIBRARY_DIR})
endif()

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_include_hints} ${_nccl_hints} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_lib_hints} ${_nccl_hints} PATH_SUFFIXES lib lib64)

if(NCCL_INCLUDE_DIR AND EXISTS ${NCCL_INCLUDE_DIR}/nccl.h)
    file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_version_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
    foreach(_part MAJOR MINOR PATCH)
        string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _match "${_nccl_version_lines}")
        set(_nccl_${_part} ${CMAKE_MATCH_1})
    endforeach()
    set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)

if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
    add_library(NCCL::NCCL UNKNOWN IMPORTED)
    set_target_properties(NCCL::NCCL PROPERTIES IMPORTED_LOCATION ${NCCL_LIBRARY}
                                                INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
endif()
