# Profile-guided optimization of the runtime (libpyflow.so and the frame readers) and of the report's reader
# and model (pf_report_model).
#
# Why: an --exact recording spends most of its time in a thousand-odd instructions per allocation and free,
# spread over twenty functions whose hot paths sit among their cold ones (errors, first calls, other
# modes). GCC, told which branches a real recording takes, lays those paths out together and moves the rest
# away, and the program's own code keeps more of the instruction cache. The report at exit of an --exact
# run reads the profile while the program runs; what it has not read when the program ends is time the
# user waits, so its reader is trained too. Measured in interleaved pairs (docs/performance-log.md, session
# 39): `--exact` 7-20% faster on programs of Python objects (numeric, whose time is numpy's, unchanged),
# `--exact --native` 8-15%, `pyflow report` of a 90 MB profile 20%; the default mode unchanged.
#
# How: the build configures a second tree (pgo-gen/ in the build directory) with PYFLOW_PGO_STAGE=generate,
# builds its instrumented runtime and CLI, runs cmake/pgo_train.py under them in pyflow's recording modes,
# each with its report at exit (cmake/pgo_train.cmake), and compiles this tree's runtime and report model
# with the counts they wrote to pgo-data/. A change to any of their sources trains again. The training
# program is not a bench workload: the benchmark measures programs the profile was not taken from.
#
# Only GCC 11 or later (for -fprofile-prefix-path: the two trees' object paths differ), in Release and
# RelWithDebInfo builds, without sanitizers. -DPYFLOW_PGO=OFF builds as before (quicker rebuilds while
# working on the runtime). When the training cannot run (no python3 to train with, the instrumented build
# failed) the build says so and goes on without the profile, as if it were OFF.

option(PYFLOW_PGO "Profile-guided optimization of libpyflow.so (a training run at build time)" ON)
set(PYFLOW_PGO_STAGE "" CACHE STRING "Internal: 'generate' in the instrumented training tree")
mark_as_advanced(PYFLOW_PGO_STAGE)
set(PYFLOW_PGO_PYTHON "" CACHE FILEPATH "The interpreter the training runs (default: /usr/bin/python3, else python3)")

set(pyflow_pgo_mode "")
if(PYFLOW_PGO_STAGE STREQUAL "generate")
  set(pyflow_pgo_mode generate)
  if(NOT PYFLOW_PGO_DATA)
    message(FATAL_ERROR "PYFLOW_PGO_STAGE=generate needs PYFLOW_PGO_DATA")
  endif()
elseif(PYFLOW_PGO)
  set(pyflow_pgo_why "")
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "GNU" OR CMAKE_C_COMPILER_VERSION VERSION_LESS 11)
    set(pyflow_pgo_why "needs GCC 11 or later")
  elseif(PYFLOW_SANITIZE)
    set(pyflow_pgo_why "not with sanitizers")
  elseif(NOT CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo)$")
    set(pyflow_pgo_why "only in Release and RelWithDebInfo builds")
  else()
    if(NOT PYFLOW_PGO_PYTHON)
      if(EXISTS /usr/bin/python3)
        set(PYFLOW_PGO_PYTHON /usr/bin/python3 CACHE FILEPATH "" FORCE)
      else()
        find_program(pyflow_pgo_found_python python3)
        if(pyflow_pgo_found_python)
          set(PYFLOW_PGO_PYTHON ${pyflow_pgo_found_python} CACHE FILEPATH "" FORCE)
        endif()
      endif()
    endif()
    if(NOT PYFLOW_PGO_PYTHON)
      set(pyflow_pgo_why "no python3 to train with")
    endif()
  endif()
  if(pyflow_pgo_why)
    message(STATUS "pyflow: libpyflow.so without profile-guided optimization (${pyflow_pgo_why})")
  else()
    set(pyflow_pgo_mode use)
    set(PYFLOW_PGO_DATA ${CMAKE_BINARY_DIR}/pgo-data)
    message(STATUS "pyflow: libpyflow.so with profile-guided optimization, trained with ${PYFLOW_PGO_PYTHON}")
  endif()
endif()

if(pyflow_pgo_mode STREQUAL "use")
  # Trains again when a runtime source or the training changes (every object of the runtime then depends
  # on the stamp, below).
  file(GLOB_RECURSE pyflow_pgo_inputs CONFIGURE_DEPENDS
       ${CMAKE_SOURCE_DIR}/core/*.[ch] ${CMAKE_SOURCE_DIR}/watch/*.[ch] ${CMAKE_SOURCE_DIR}/recorder/*.[ch]
       ${CMAKE_SOURCE_DIR}/interpose/*.[ch] ${CMAKE_SOURCE_DIR}/interpose/*.txt ${CMAKE_SOURCE_DIR}/recorder/*.txt
       ${CMAKE_SOURCE_DIR}/report/*.[ch] ${CMAKE_SOURCE_DIR}/report/*.txt
       ${CMAKE_SOURCE_DIR}/cmake/PyflowPgo.cmake ${CMAKE_SOURCE_DIR}/cmake/pgo_train.*)
  set(PYFLOW_PGO_STAMP ${PYFLOW_PGO_DATA}/trained.stamp)
  add_custom_command(
    OUTPUT ${PYFLOW_PGO_STAMP}
    COMMAND ${CMAKE_COMMAND}
            -DSRC=${CMAKE_SOURCE_DIR} -DGEN=${CMAKE_BINARY_DIR}/pgo-gen -DDATA=${PYFLOW_PGO_DATA}
            -DSTAMP=${PYFLOW_PGO_STAMP} -DPYTHON=${PYFLOW_PGO_PYTHON}
            -DGENERATOR=${CMAKE_GENERATOR} -DC_COMPILER=${CMAKE_C_COMPILER} -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
            -DLTO=${PYFLOW_LTO} "-DPYTHONS=${PYFLOW_PYTHONS}"
            -P ${CMAKE_SOURCE_DIR}/cmake/pgo_train.cmake
    DEPENDS ${pyflow_pgo_inputs}
    COMMENT "Training libpyflow.so's profile-guided build (cmake/pgo_train.py under an instrumented runtime)"
    VERBATIM)
  add_custom_target(pyflow_pgo_profile DEPENDS ${PYFLOW_PGO_STAMP})
endif()

# Link options for target's link, or, for a library linked into others (object or static), for theirs.
function(pyflow_pgo_link target)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "OBJECT_LIBRARY" OR type STREQUAL "STATIC_LIBRARY")
    target_link_options(${target} INTERFACE ${ARGN})
  else()
    target_link_options(${target} PRIVATE ${ARGN})
  endif()
endfunction()

# Compiles target (a part of the runtime, or the report's reader and model) for the training tree, or
# with its profile.
function(pyflow_pgo target)
  set(prefix -fprofile-prefix-path=${CMAKE_BINARY_DIR})
  if(pyflow_pgo_mode STREQUAL "generate")
    # No value profiling: its indirect-call counter allocates on first use, inside the runtime's own
    # mmap hook, which it then profiles again, without end. Atomic counters: training runs threads.
    target_compile_options(${target} PRIVATE -fprofile-generate=${PYFLOW_PGO_DATA} ${prefix}
                           -fno-profile-values -fprofile-update=prefer-atomic)
    pyflow_pgo_link(${target} -fprofile-generate)    # libgcov
  elseif(pyflow_pgo_mode STREQUAL "use")
    # partial training: what the training did not run (other Pythons' readers, CUDA, rare paths) is
    # optimized as without a profile, not for size.
    set(use -fprofile-use=${PYFLOW_PGO_DATA} ${prefix} -fprofile-partial-training -fno-profile-values)
    target_compile_options(${target} PRIVATE ${use} -Wno-missing-profile -Wno-coverage-mismatch)
    pyflow_pgo_link(${target} ${use} -Wno-missing-profile)   # link-time optimization reads them too
    add_dependencies(${target} pyflow_pgo_profile)
    get_target_property(sources ${target} SOURCES)
    set_source_files_properties(${sources} PROPERTIES OBJECT_DEPENDS ${PYFLOW_PGO_STAMP})
  endif()
endfunction()
