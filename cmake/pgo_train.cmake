# The training step of the profile-guided build (cmake/PyflowPgo.cmake), run in script mode by the build:
# configures and builds the instrumented runtime in GEN, runs cmake/pgo_train.py under it in each of
# pyflow's recording modes, which write their counts to DATA, and touches STAMP. Whatever fails is said and
# skipped: the runtime is then compiled without (some of) the profile, never left unbuilt.
#   cmake -DSRC= -DGEN= -DDATA= -DSTAMP= -DPYTHON= -DGENERATOR= -DC_COMPILER= -DBUILD_TYPE= -DLTO= -DPYTHONS=
#         -P pgo_train.cmake

function(skip why)
  message(WARNING "pyflow: the runtime is built without its profile: ${why}")
  file(TOUCH ${STAMP})
endfunction()

file(MAKE_DIRECTORY ${DATA})
file(GLOB old_counts ${DATA}/*.gcda)
if(old_counts)
  file(REMOVE ${old_counts})    # counts of older sources: GCC would refuse them
endif()

execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${GEN} -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER}
          -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DPYFLOW_PGO_STAGE=generate -DPYFLOW_PGO_DATA=${DATA}
          -DPYFLOW_LTO=${LTO} -DBUILD_TESTING=OFF "-DPYFLOW_PYTHONS=${PYTHONS}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  skip("configuring the training tree ${GEN} failed:\n${out}")
  return()
endif()
cmake_host_system_information(RESULT jobs QUERY NUMBER_OF_LOGICAL_CORES)
execute_process(
  COMMAND ${CMAKE_COMMAND} --build ${GEN} --target pyflow pyflow_runtime --parallel ${jobs}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  skip("building the instrumented runtime in ${GEN} failed:\n${out}")
  return()
endif()

# The modes users record in, each writing its own counts (merged into the same files): the exact ones
# weigh most, being the ones whose per-allocation path is the cost. Each with its report at exit, as users
# run it: the reader's counts (the report model's) come from the same runs.
set(modes "--exact" "--exact --native" "" "--native" "--aggregate" "--exact --aggregate")
set(failed "")
foreach(mode IN LISTS modes)
  separate_arguments(opts UNIX_COMMAND "${mode}")
  execute_process(
    COMMAND ${GEN}/bin/pyflow run ${opts} -o ${GEN}/train.pflow ${PYTHON} ${SRC}/cmake/pgo_train.py
    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc EQUAL 0)
    list(APPEND failed "pyflow run ${mode}: ${rc} ${err}")
  endif()
endforeach()
file(GLOB counts ${DATA}/*.gcda)
list(LENGTH counts n)
if(failed)
  message(WARNING "pyflow: a training run failed (the profile has the others): ${failed}")
endif()
if(n EQUAL 0)
  skip("the training wrote no counts")
  return()
endif()
message(STATUS "pyflow: trained the runtime's profile (${n} files of counts in ${DATA})")
file(TOUCH ${STAMP})
