# The runtime's stores behind interned stacks: the id table (recorder/pf_idtable.c: lookups while it grows,
# the pages of the arrays it grew out of given back) and the shared-segment copies of stacks' words
# (recorder/pf_seqstore.c).
pf_unit_test(test_recorder_stackstore
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_stackstore.c ${PROJECT_SOURCE_DIR}/recorder/pf_idtable.c
          ${PROJECT_SOURCE_DIR}/recorder/pf_seqstore.c
  LIBS pf_core)
target_include_directories(test_recorder_stackstore PRIVATE ${PROJECT_SOURCE_DIR}/recorder ${PROJECT_SOURCE_DIR}/recorder/internal)
