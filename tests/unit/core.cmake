# core: where pyflow's descriptors go (above the program's soft RLIMIT_NOFILE, else just below it).
pf_unit_test(test_core_fd
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_core_fd.c
  LIBS pf_core)

# core: the content fingerprint behind recomputed values (pf_content_scan.h, header only).
pf_unit_test(test_core_content_scan
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_core_content_scan.c)
target_include_directories(test_core_content_scan PRIVATE ${PROJECT_SOURCE_DIR}/core)
