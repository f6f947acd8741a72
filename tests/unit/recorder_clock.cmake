# The times records carry (recorder/pf_clock.c): under --exact a small packed event takes the thread's
# latest time again only while events come densely, at most three in a row, never once a second thread
# records, and again in a fork child; never when sampled; times never go back.
pf_unit_test(test_recorder_clock
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_clock.c ${PROJECT_SOURCE_DIR}/recorder/pf_clock.c
  LIBS pf_core)
target_include_directories(test_recorder_clock PRIVATE ${PROJECT_SOURCE_DIR}/recorder
                           ${PROJECT_SOURCE_DIR}/recorder/internal)
target_compile_options(test_recorder_clock PRIVATE -ftls-model=initial-exec)
