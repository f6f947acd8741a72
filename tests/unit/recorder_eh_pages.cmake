# Giving back the call frame information pages the unwinders read (recorder/pf_eh_pages.c): which spans are
# filed, when they are given back, and that nothing is once the loader has removed an object.
pf_unit_test(test_recorder_eh_pages
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_eh_pages.c ${PROJECT_SOURCE_DIR}/recorder/pf_eh_pages.c
          ${PROJECT_SOURCE_DIR}/recorder/pf_cfi.c
  LIBS pf_core)
target_include_directories(test_recorder_eh_pages PRIVATE ${PROJECT_SOURCE_DIR}/recorder ${PROJECT_SOURCE_DIR}/recorder/internal)
