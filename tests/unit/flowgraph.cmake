pf_unit_test(test_flowgraph_objtable
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flowgraph_objtable.c
  LIBS pf_flowgraph pthread)
