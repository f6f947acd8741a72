# The exports' protobuf writer, the JSON reader of `pyflow diff` and its --fail-on conditions.
pf_unit_test(test_report_exports
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_exports.c
  LIBS pf_report)
target_include_directories(test_report_exports PRIVATE ${PROJECT_SOURCE_DIR}/report)
