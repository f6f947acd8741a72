# The fast native walk (recorder/pf_unwinder.c) and its .eh_frame rules (recorder/pf_cfi.c) against
# unw_backtrace, from frames of several shapes (tests/unit/walk/). The walk is built into a shared object
# of its own, as it is into libpyflow.so, so that its frames are the "own" ones both walks leave out.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  pkg_check_modules(WALK_LIBUNWIND REQUIRED IMPORTED_TARGET libunwind)
  set(PF_WALK_DIR ${CMAKE_CURRENT_LIST_DIR}/walk)
  add_library(walk_probe SHARED ${PF_WALK_DIR}/walk_probe.c ${PROJECT_SOURCE_DIR}/recorder/pf_unwinder.c
              ${PROJECT_SOURCE_DIR}/recorder/pf_unwinder_step.c
              ${PROJECT_SOURCE_DIR}/recorder/pf_cfi.c ${PROJECT_SOURCE_DIR}/recorder/pf_modules.c
              ${PROJECT_SOURCE_DIR}/recorder/pf_eh_pages.c)
  target_include_directories(walk_probe PRIVATE ${PROJECT_SOURCE_DIR}/recorder ${PROJECT_SOURCE_DIR}/recorder/internal
                             ${PROJECT_SOURCE_DIR}/core ${PF_WALK_DIR})
  target_compile_options(walk_probe PRIVATE -fno-strict-aliasing)
  target_link_libraries(walk_probe PRIVATE pf_core PkgConfig::WALK_LIBUNWIND pthread)

  add_library(walk_plugin MODULE ${PF_WALK_DIR}/walk_plugin.c)
  target_include_directories(walk_plugin PRIVATE ${PF_WALK_DIR})
  target_compile_options(walk_plugin PRIVATE -O2 -fomit-frame-pointer)
  add_library(walk_plugin_narrow MODULE ${PF_WALK_DIR}/walk_plugin.c)
  target_include_directories(walk_plugin_narrow PRIVATE ${PF_WALK_DIR})
  target_compile_options(walk_plugin_narrow PRIVATE -O2 -fomit-frame-pointer)
  target_compile_definitions(walk_plugin_narrow PRIVATE PLUGIN_PAD=16)

  set_source_files_properties(${PF_WALK_DIR}/walk_shapes.c PROPERTIES COMPILE_OPTIONS "-O2;-fomit-frame-pointer")
  set_source_files_properties(${PF_WALK_DIR}/walk_no_fde.c PROPERTIES
                              COMPILE_OPTIONS "-O2;-fno-asynchronous-unwind-tables;-fno-unwind-tables")
  pf_unit_test(test_recorder_walk
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorder_walk.c ${PF_WALK_DIR}/walk_shapes.c ${PF_WALK_DIR}/walk_no_fde.c
    LIBS walk_probe ${CMAKE_DL_LIBS})
  target_include_directories(test_recorder_walk PRIVATE ${PF_WALK_DIR})
  target_compile_definitions(test_recorder_walk PRIVATE WALK_PLUGIN_PATH="$<TARGET_FILE:walk_plugin>"
                             WALK_PLUGIN_NARROW_PATH="$<TARGET_FILE:walk_plugin_narrow>")
  add_dependencies(test_recorder_walk walk_plugin walk_plugin_narrow)
endif()
