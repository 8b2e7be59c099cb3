# SPDX-License-Identifier: MIT
# Install rules for the desktop integration files and the CPack setup: one .deb per component (shardscape for the
# desktop app, shardscape-cli for the headless planner) and one .tar.gz holding both. Build them on a built tree:
#   cpack --config <build>/CPackConfig.cmake -G "DEB;TGZ" -B <build>/packages
include(GNUInstallDirs)

if(TARGET shardscape)
    # The app id (reverse DNS) names the .desktop file, the metainfo and the themed icon alike, as AppStream wants.
    set(app_id io.github.shardscape.Shardscape)
    set(desktop_dir ${PROJECT_SOURCE_DIR}/resources/desktop)
    install(FILES ${desktop_dir}/${app_id}.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT gui)
    install(FILES ${desktop_dir}/${app_id}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo COMPONENT gui)
    install(FILES ${desktop_dir}/shardscape.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps
            RENAME ${app_id}.svg COMPONENT gui)
    foreach(size 48 128 256)
        install(FILES ${desktop_dir}/shardscape-${size}.png
                DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps RENAME ${app_id}.png
                COMPONENT gui)
    endforeach()
    # The same checks the distributions' tools run; skipped where the validators are not installed.
    if(BUILD_TESTING)
        find_program(SHARDSCAPE_DESKTOP_FILE_VALIDATE desktop-file-validate)
        find_program(SHARDSCAPE_APPSTREAMCLI appstreamcli)
        if(SHARDSCAPE_DESKTOP_FILE_VALIDATE)
            add_test(NAME desktop_file_valid COMMAND ${SHARDSCAPE_DESKTOP_FILE_VALIDATE} ${desktop_dir}/${app_id}.desktop)
        endif()
        if(SHARDSCAPE_APPSTREAMCLI)
            add_test(NAME metainfo_valid
                     COMMAND ${SHARDSCAPE_APPSTREAMCLI} validate --no-net ${desktop_dir}/${app_id}.metainfo.xml)
        endif()
    endif()
endif()

set(SHARDSCAPE_PACKAGE_MAINTAINER "Shardscape maintainers <maintainers@users.noreply.a-seed-a900d30e.example>"
    CACHE STRING "Maintainer field of the .deb packages")

set(CPACK_PACKAGE_NAME shardscape)
set(CPACK_PACKAGE_VENDOR "Shardscape")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# CPackDeb puts a non-default summary in front of every component's description, so both .debs would share one
# synopsis; with CPack's default summary each takes the first line of its own description below.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_NAME} built using CMake")
set(CPACK_PACKAGE_CONTACT "${SHARDSCAPE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB TGZ)
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/build/" "/\\\\.git/" "/\\\\.cache/")

# Only the two front ends: the profiler (app/profile) has its own CUDA dependencies and is not packaged here.
set(CPACK_COMPONENTS_ALL cli gui)
if(NOT TARGET shardscape)
    set(CPACK_COMPONENTS_ALL cli)
endif()
set(CPACK_COMPONENT_CLI_DISPLAY_NAME "shardscape-cli")
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "Parallelism planner for LLM training (command line)\n\
Plans tensor, pipeline, data, context and expert parallelism, ZeRO and\n\
recomputation for a model on a GPU cluster, simulates the step, and exports\n\
the plan for torchtitan, Megatron-LM, DeepSpeed or torchrun.")
set(CPACK_COMPONENT_GUI_DISPLAY_NAME "shardscape")
set(CPACK_COMPONENT_GUI_DESCRIPTION
    "Parallelism planner for LLM training (desktop app)\n\
Plans tensor, pipeline, data, context and expert parallelism, ZeRO and\n\
recomputation for a model on a GPU cluster and shows the candidates, the\n\
pipeline timeline, memory and time per stage, what-if edits and comparisons.")

# TGZ: one archive with both front ends. DEB: one package per component.
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SHARDSCAPE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# dpkg-shlibdeps (package dpkg-dev) turns the linked shared libraries into Depends on Debian's Qt, TBB, ... packages.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_CLI_PACKAGE_NAME shardscape-cli)
set(CPACK_DEBIAN_GUI_PACKAGE_NAME shardscape)
set(CPACK_DEBIAN_GUI_PACKAGE_SECTION science)

include(CPack)
