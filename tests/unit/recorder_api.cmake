# The in-process counters (recorder/pf_api.c): the owned cells move to a thread that counts while their
# owner is idle, not while it counts, and the totals stay exact amid take-overs (every 16 counts here, with
# the owner's updates paused now and then).
pf_unit_test(test_recorder_api
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_api.c ${PROJECT_SOURCE_DIR}/recorder/pf_api.c
  LIBS pf_core pthread)
target_include_directories(test_recorder_api PRIVATE ${PROJECT_SOURCE_DIR}/recorder
                           ${PROJECT_SOURCE_DIR}/recorder/internal)
target_compile_definitions(test_recorder_api PRIVATE PF_API_MIGRATE_AFTER=16u PF_API_TEST_PAUSE)
target_compile_options(test_recorder_api PRIVATE -ftls-model=initial-exec)
