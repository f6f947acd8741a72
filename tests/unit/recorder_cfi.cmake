# The native walk's shared table of unwind rules (recorder/pf_cfi.c): it grows with the addresses stepped
# through, is swapped for a small one once the reads go quiet, and keeps its size when it grows back.
pf_unit_test(test_recorder_cfi
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_cfi.c ${PROJECT_SOURCE_DIR}/recorder/pf_cfi.c
          ${PROJECT_SOURCE_DIR}/recorder/pf_eh_pages.c
  LIBS pf_core)
target_include_directories(test_recorder_cfi PRIVATE ${PROJECT_SOURCE_DIR}/recorder ${PROJECT_SOURCE_DIR}/recorder/internal)
