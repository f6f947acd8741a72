# build.pgo_profile (tests/build/build.cmake): the training's counts for the runtime's and the reader's
# hottest objects exist, non-empty, under the names relative to the build tree that the objects of this
# tree are compiled against.
#   cmake -DDATA=<pgo-data> -DSTAMP=<trained.stamp> -P check_pgo_profile.cmake
if(NOT EXISTS ${STAMP})
  message(FATAL_ERROR "no training stamp ${STAMP}: the runtime was built before its training ran")
endif()
set(expected
    recorder/CMakeFiles/pf_recorder.dir/pf_record.c
    recorder/CMakeFiles/pf_recorder.dir/pf_record_packed.c
    recorder/CMakeFiles/pf_recorder.dir/pf_objtable.c
    interpose/CMakeFiles/pyflow_runtime.dir/pf_pymem.c
    report/CMakeFiles/pf_report_model.dir/pf_reader.c
    report/CMakeFiles/pf_report_model.dir/pf_model_sweep.c)
set(missing "")
foreach(object IN LISTS expected)
  string(REPLACE "/" "#" mangled "${object}")
  set(counts ${DATA}/${mangled}.gcda)
  set(size 0)
  if(EXISTS ${counts})
    file(SIZE ${counts} size)
  endif()
  if(size EQUAL 0)
    list(APPEND missing ${counts})
  endif()
endforeach()
# The frame reader of the interpreter the training ran (whichever minor that is).
file(GLOB readers "${DATA}/interpose#pyframes#CMakeFiles#pf_pyframes_3*.dir#pf_pyframes.c.gcda")
if(NOT readers)
  list(APPEND missing "${DATA}/interpose#pyframes#CMakeFiles#pf_pyframes_3*.dir#pf_pyframes.c.gcda")
endif()
if(missing)
  file(GLOB present RELATIVE ${DATA} ${DATA}/*.gcda)
  message(FATAL_ERROR "the runtime's profile lacks the counts of:\n  ${missing}\nwhat the training wrote:\n  ${present}")
endif()
message(STATUS "the runtime's profile has the counts of its hot objects")
