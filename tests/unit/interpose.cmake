pf_unit_test(test_interpose_sampler
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_interpose_sampler.c
  LIBS pf_core m)
target_include_directories(test_interpose_sampler PRIVATE ${PROJECT_SOURCE_DIR}/recorder)

# The writer alone (no hooks): records from several threads, chunk turnover, and a writer killed with
# SIGKILL mid-stream whose committed records all survive.
pf_unit_test(test_interpose_writer
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_interpose_writer.c ${PROJECT_SOURCE_DIR}/recorder/pf_writer.c
          ${PROJECT_SOURCE_DIR}/recorder/pf_eh_pages.c ${PROJECT_SOURCE_DIR}/recorder/pf_cfi.c
  LIBS pf_core pthread)
target_include_directories(test_interpose_writer PRIVATE ${PROJECT_SOURCE_DIR}/recorder ${PROJECT_SOURCE_DIR}/recorder/internal)

# Which environments profile a child, which programs run Python, the command line kept of an unprofiled one.
pf_unit_test(test_interpose_child_env
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_interpose_child_env.c ${PROJECT_SOURCE_DIR}/interpose/pf_child_env.c
  LIBS pf_core)
target_include_directories(test_interpose_child_env PRIVATE ${PROJECT_SOURCE_DIR}/interpose)
