# The recorder's live-object table alone (recorder/pf_objtable.c), from many threads.
pf_unit_test(test_flowgraph_objtable
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flowgraph_objtable.c ${PROJECT_SOURCE_DIR}/recorder/pf_objtable.c ${PROJECT_SOURCE_DIR}/recorder/pf_objdense.c
  LIBS pf_core pthread)
target_include_directories(test_flowgraph_objtable PRIVATE ${PROJECT_SOURCE_DIR}/recorder ${PROJECT_SOURCE_DIR}/recorder/internal)
