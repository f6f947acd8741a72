pf_unit_test(test_interpose_sampler
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_interpose_sampler.c
  LIBS pf_core m)
target_include_directories(test_interpose_sampler PRIVATE ${PROJECT_SOURCE_DIR}/interpose)
