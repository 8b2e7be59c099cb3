# SPDX-License-Identifier: MIT
# The timeline and chart tests; included by tests/ui/CMakeLists.txt, which defines shardscape_add_ui_test.
shardscape_add_ui_test(tst_time_axis tst_time_axis.cpp)
shardscape_add_ui_test(tst_timeline tst_timeline.cpp)
shardscape_add_ui_test(tst_charts tst_charts.cpp)
