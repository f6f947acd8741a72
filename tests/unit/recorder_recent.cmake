# A thread's recent stacks, kept flat (recorder/pf_recent_stacks.c): a capture is found only when every
# word of it is the filed one's, ids pending until resolved, forgotten in a fork child, one table a thread.
pf_unit_test(test_recorder_recent_stacks
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_recent_stacks.c ${PROJECT_SOURCE_DIR}/recorder/pf_recent_stacks.c
  LIBS pf_core pthread)
target_include_directories(test_recorder_recent_stacks PRIVATE ${PROJECT_SOURCE_DIR}/recorder
                           ${PROJECT_SOURCE_DIR}/recorder/internal)
target_compile_options(test_recorder_recent_stacks PRIVATE -ftls-model=initial-exec -fno-strict-aliasing)
