# The dense map's page release (recorder/pf_objdense.c): entry pages of a freed arena leave the resident set.
pf_unit_test(test_recorder_objdense
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_objdense.c ${PROJECT_SOURCE_DIR}/recorder/pf_objdense.c
  LIBS pf_core)
target_include_directories(test_recorder_objdense PRIVATE ${PROJECT_SOURCE_DIR}/recorder ${PROJECT_SOURCE_DIR}/recorder/internal)
