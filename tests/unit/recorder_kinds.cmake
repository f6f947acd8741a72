# What Python object a tracked block is (recorder/pf_objkind.c), on blocks laid out as CPython lays them
# out, with the interpreter's type objects stood in for by symbols of the test (found by dlsym).
pf_unit_test(test_recorder_objkind
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_objkind.c ${PROJECT_SOURCE_DIR}/recorder/pf_objkind.c
          ${PROJECT_SOURCE_DIR}/recorder/pf_objtable.c ${PROJECT_SOURCE_DIR}/recorder/pf_objdense.c
  LIBS pf_core pthread ${CMAKE_DL_LIBS})
target_include_directories(test_recorder_objkind PRIVATE ${PROJECT_SOURCE_DIR}/recorder ${PROJECT_SOURCE_DIR}/recorder/internal)
set_target_properties(test_recorder_objkind PROPERTIES ENABLE_EXPORTS ON)
