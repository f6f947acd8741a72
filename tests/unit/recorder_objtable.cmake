# The object table's layout (recorder/pf_objtable.c, pf_objslot.h, pf_objdense.c): a word per small object,
# wide records for the rest, the dense map of --exact.
pf_unit_test(test_recorder_objtable_layout
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_objtable_layout.c ${PROJECT_SOURCE_DIR}/recorder/pf_objtable.c
          ${PROJECT_SOURCE_DIR}/recorder/pf_objdense.c
  LIBS pf_core pthread)
target_include_directories(test_recorder_objtable_layout PRIVATE ${PROJECT_SOURCE_DIR}/recorder ${PROJECT_SOURCE_DIR}/recorder/internal)
