# core: where pyflow's descriptors go (above the program's soft RLIMIT_NOFILE, else just below it).
pf_unit_test(test_core_fd
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_core_fd.c
  LIBS pf_core)
