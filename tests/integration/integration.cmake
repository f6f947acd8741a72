# Integration tests: tests/integration/run_case.py runs the real build/bin/pyflow on real interpreters.
# The cases are read from the code (run_case.py --list): one test per case marked @once, on Debian's python3;
# one per interpreter for a case marked @per_version, on Debian's python3 and one interpreter per supported
# minor (the ones the frame readers were built from). A missing interpreter or module skips (77).
# Test names: integration.<theme>.<case>.<interpreter>; labels: integration and the theme.
set(PF_IT_RUNNER ${CMAKE_CURRENT_LIST_DIR}/run_case.py)
file(GLOB pf_it_modules ${CMAKE_CURRENT_LIST_DIR}/cases/*.py)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${pf_it_modules} ${PF_IT_RUNNER})
execute_process(COMMAND ${Python3_EXECUTABLE} ${PF_IT_RUNNER} --list
                OUTPUT_VARIABLE pf_it_list RESULT_VARIABLE pf_it_rc ERROR_VARIABLE pf_it_err)
if(NOT pf_it_rc EQUAL 0)
  message(FATAL_ERROR "tests/integration/run_case.py --list failed: ${pf_it_err}")
endif()
get_property(pf_it_pythons GLOBAL PROPERTY PYFLOW_PYFRAMES_PYTHONS)

# What the GPU and preload cases load (tests/gpu/gpu.cmake builds them); other cases ignore these.
set(pf_it_env "PYFLOW_TEST_NEXT_PRELOAD=$<TARGET_FILE:pf_next_preload>" ${pf_gpu_env})

string(REPLACE "\n" ";" pf_it_lines "${pf_it_list}")
foreach(entry ${pf_it_lines})
  if(entry STREQUAL "")
    continue()
  endif()
  string(REPLACE " " ";" fields "${entry}")
  list(GET fields 0 theme)
  list(GET fields 1 case)
  list(GET fields 2 scope)
  list(GET fields 3 lock)
  set(pys /usr/bin/python3)
  if(scope STREQUAL "per_version")
    list(APPEND pys ${pf_it_pythons})
  endif()
  foreach(py ${pys})
    string(REGEX REPLACE ".*/" "" tag ${py})
    if(py STREQUAL "/usr/bin/python3")
      set(tag debian-python3)
    endif()
    set(name integration.${theme}.${case}.${tag})
    add_test(NAME ${name}
             COMMAND ${Python3_EXECUTABLE} ${PF_IT_RUNNER} ${case} --pyflow $<TARGET_FILE:pyflow> --python ${py})
    set_tests_properties(${name} PROPERTIES LABELS "integration;${theme}" SKIP_RETURN_CODE 77 TIMEOUT 600
                         ENVIRONMENT "${pf_it_env}")
    if(NOT lock STREQUAL "-")
      set_tests_properties(${name} PROPERTIES RESOURCE_LOCK ${lock})
    endif()
  endforeach()
endforeach()
