# watch/: unit tests that run anywhere (decoder, values, reservoir, record encoding), and the end-to-end
# silent-store program (tests/watch/watch_silent.c) that skips (77) where perf_event_open is not allowed.
pf_unit_test(test_watch
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_watch.c
  LIBS pf_watch)
target_include_directories(test_watch PRIVATE ${PROJECT_SOURCE_DIR}/watch)

add_executable(watch_silent ${PROJECT_SOURCE_DIR}/tests/watch/watch_silent.c)
target_link_libraries(watch_silent PRIVATE pf_watch)
add_test(NAME watch.silent_store COMMAND watch_silent)
set_tests_properties(watch.silent_store PROPERTIES LABELS watch SKIP_RETURN_CODE 77 TIMEOUT 60)
