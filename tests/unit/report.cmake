# Line tables, checked against each interpreter present: the vectors come from CPython itself at test time.
add_executable(test_report_linetable ${CMAKE_CURRENT_LIST_DIR}/test_report_linetable.c)
target_link_libraries(test_report_linetable PRIVATE PkgConfig::CMOCKA pf_report)
target_include_directories(test_report_linetable PRIVATE ${PROJECT_SOURCE_DIR}/report)
get_property(pf_lt_pythons GLOBAL PROPERTY PYFLOW_PYFRAMES_PYTHONS)
foreach(py /usr/bin/python3 ${pf_lt_pythons})
  string(REGEX REPLACE ".*/" "" tag ${py})
  if(py STREQUAL "/usr/bin/python3")
    set(tag debian-python3)
  endif()
  add_test(NAME unit.report_linetable.${tag}
           COMMAND sh -c "[ -x '${py}' ] || exit 77; '${py}' '${CMAKE_CURRENT_LIST_DIR}/data/linetable_vectors.py' | '$<TARGET_FILE:test_report_linetable>'")
  set_tests_properties(unit.report_linetable.${tag} PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 60)
endforeach()

# JSON writer, reader validation and the model, on profiles built by the test itself.
pf_unit_test(test_report_model
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_model.c
  LIBS pf_report dl)
target_include_directories(test_report_model PRIVATE ${PROJECT_SOURCE_DIR}/report)
target_compile_definitions(test_report_model PRIVATE PF_TEST_DATA_DIR="${CMAKE_CURRENT_LIST_DIR}/data")

# Merged processes (children's clocks, who started what, unprofiled children) and the call tree.
pf_unit_test(test_report_processes
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_processes.c
  LIBS pf_report dl)
target_include_directories(test_report_processes PRIVATE ${PROJECT_SOURCE_DIR}/report)

# The sweep (timelines, liveness, children's clocks) and the reader's walk and corruption messages.
pf_unit_test(test_report_sweep
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_sweep.c
  LIBS pf_report)
target_include_directories(test_report_sweep PRIVATE ${PROJECT_SOURCE_DIR}/report)

# The model built while the program runs: a file followed step by step as it grows.
pf_unit_test(test_report_follow
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_follow.c
  LIBS pf_report)
target_include_directories(test_report_follow PRIVATE ${PROJECT_SOURCE_DIR}/report)

# The terminal report's layout with hostile names (width by glibc's wcwidth, control characters).
pf_unit_test(test_report_text
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_text.c
  LIBS pf_report)
target_include_directories(test_report_text PRIVATE ${PROJECT_SOURCE_DIR}/report)

# Line tables against vectors embedded from real interpreters (regenerate with
# tests/unit/data/report/gen_linetable_vectors.py): runs without any interpreter installed.
pf_unit_test(test_report_linetable_vectors
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_linetable_vectors.c
  LIBS pf_report)
target_include_directories(test_report_linetable_vectors PRIVATE ${PROJECT_SOURCE_DIR}/report ${CMAKE_CURRENT_LIST_DIR})

# Native symbolization on this process's own libraries (libc's getpid, a static function of the test).
pf_unit_test(test_report_symbols
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_symbols.c
  LIBS pf_report dl)
target_include_directories(test_report_symbols PRIVATE ${PROJECT_SOURCE_DIR}/report)

# The reporter's map (hashed and by-address homes, deletion) and its tuple hash.
pf_unit_test(test_report_util
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_util.c
  LIBS pf_report)
target_include_directories(test_report_util PRIVATE ${PROJECT_SOURCE_DIR}/report)

# The sweep's map of live objects: homes kept through shifts and growth, and each key's place.
pf_unit_test(test_report_live_map
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_live_map.c
  LIBS pf_report_model)
target_include_directories(test_report_live_map PRIVATE ${PROJECT_SOURCE_DIR}/report)

# The leak test's survivors of an aggregated site: snapshot sequences of a bounded cache, a leak, real falls.
pf_unit_test(test_report_agg_survivors
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_agg_survivors.c
  LIBS pf_report)
target_include_directories(test_report_agg_survivors PRIVATE ${PROJECT_SOURCE_DIR}/report)

# The workers of a merged job: labels, endings, bytes at each process's peak, hosts on one clock.
pf_unit_test(test_report_workers
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_workers.c
  LIBS pf_report)
target_include_directories(test_report_workers PRIVATE ${PROJECT_SOURCE_DIR}/report)

# The reader's fast paths: interned stacks by id (dense) and by map (sparse) agree; the sweep's cached
# timeline bucket is pf_timeline_bucket's.
pf_unit_test(test_report_reader
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_reader.c
  LIBS pf_report)
target_include_directories(test_report_reader PRIVATE ${PROJECT_SOURCE_DIR}/report)

# Native stacks interned apart (NATIVE_STACK records named by id from STACK): the same model as inline, by
# arrays and by maps; a missing or mismatched native part is a missing stack; a short record is refused.
pf_unit_test(test_report_native_stacks
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_native_stacks.c
  LIBS pf_report)
target_include_directories(test_report_native_stacks PRIVATE ${PROJECT_SOURCE_DIR}/report)


# The peak's standard error: objects' variances by the share of the window they lived, plus the halves'.
pf_unit_test(test_report_peak
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_peak.c
  LIBS pf_report m)
target_include_directories(test_report_peak PRIVATE ${PROJECT_SOURCE_DIR}/report)

# Packed exact events (PF_REC_PACKED): varint/zigzag codes, decode of what was encoded, one model for the
# same events packed and not, a packed record cut mid-event and one with bytes that are no event.
pf_unit_test(test_report_packed
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_packed.c
  LIBS pf_report)
target_include_directories(test_report_packed PRIVATE ${PROJECT_SOURCE_DIR}/report)

# The merge of the events into time order (pf_model_events.c): several processes of several threads, packed
# records and records of one event, chunks shared by writers, ties across threads and processes, a stream
# that goes back in time, every batch size, merged inline and on a thread of its own through the ring of
# batches (pf_events_pipe.c): the order and each event's payload against the contract computed apart.
pf_unit_test(test_report_merge
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_report_merge.c
  LIBS pf_report)
target_include_directories(test_report_merge PRIVATE ${PROJECT_SOURCE_DIR}/report)
