# SPDX-License-Identifier: MIT
# Checks that one member of a JSON file equals one member of another (numbers compared as CMake prints them, which
# is exact for the same double): -DA=file -DA_MEMBER="key|0|key" -DB=file -DB_MEMBER="key|key". Leaves the files.
foreach(side A B)
    if(NOT EXISTS "${${side}}")
        message(FATAL_ERROR "${${side}} was not written")
    endif()
    file(READ "${${side}}" content)
    string(REPLACE "|" ";" path "${${side}_MEMBER}")
    string(JSON value_${side} ERROR_VARIABLE err GET "${content}" ${path})
    if(err)
        message(FATAL_ERROR "${${side}}: ${err}")
    endif()
endforeach()
if(NOT value_A STREQUAL value_B)
    message(FATAL_ERROR "${A}: ${A_MEMBER} is ${value_A}, but ${B}: ${B_MEMBER} is ${value_B}")
endif()
