# The object table's lock-free dense entries under threads (recorder/pf_objtable.c): frees against lookups
# that move objects to hashed slots, objects freed on another thread than their allocation's.
pf_unit_test(test_recorder_objtable_races
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_objtable_races.c ${PROJECT_SOURCE_DIR}/recorder/pf_objtable.c
          ${PROJECT_SOURCE_DIR}/recorder/pf_objdense.c
  LIBS pf_core pthread)
target_include_directories(test_recorder_objtable_races PRIVATE ${PROJECT_SOURCE_DIR}/recorder ${PROJECT_SOURCE_DIR}/recorder/internal)
