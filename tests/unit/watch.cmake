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

# watch's own copies never reach libpyflow.so's exported copy hooks (pf_watch_int.h): a copy made inside a
# watch handler or under a watch lock would be recorded there and could start the thread's watch (a deadlock
# between the page and slot locks). Its objects must not call memcpy or memmove at all; the library's symbols
# must be read (nm present, its own copies defined) for the test to pass.
add_test(NAME watch.no_copy_hooks
         COMMAND sh -c "syms=$(nm -A \"$1\") || exit 1; echo \"$syms\" | grep -q ' pf_watch_memcpy$' || exit 1; echo \"$syms\" | grep -E ' U (memcpy|memmove|mempcpy|__memcpy_chk|__memmove_chk)$' && exit 1; exit 0"
                 sh $<TARGET_FILE:pf_watch>)
set_tests_properties(watch.no_copy_hooks PROPERTIES LABELS watch)
