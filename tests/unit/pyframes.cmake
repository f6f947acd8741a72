# Frame readers (interpose/pyframes): for every supported minor, a probe extension built against the same
# headers as the reader (tests/unit/pyframes/probe.c, no libpython), and test_pyframes.py run by that
# interpreter, comparing what the reader captures with sys._getframe(). Debian's python3.11 runs the 3.11
# reader too when present (same struct layout). A minor without an interpreter here is a skipped test (77).
get_property(pf_pyf_minors GLOBAL PROPERTY PYFLOW_PYFRAMES_MINORS)
get_property(pf_pyf_pythons GLOBAL PROPERTY PYFLOW_PYFRAMES_PYTHONS)
get_property(pf_pyf_includes GLOBAL PROPERTY PYFLOW_PYFRAMES_INCLUDES)
set(pf_pyf_script ${CMAKE_CURRENT_LIST_DIR}/test_pyframes.py)

# Version-independent LD_PRELOAD helper: calls the reader before main and after exit.
add_library(pf_pyframes_lifecycle MODULE ${CMAKE_CURRENT_LIST_DIR}/pyframes/lifecycle.c)
set_target_properties(pf_pyframes_lifecycle PROPERTIES PREFIX ""
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/pyframes)
target_link_libraries(pf_pyframes_lifecycle PRIVATE pf_pyframes_abi dl)

# The probe and the helper live in an uninstrumented python, like the readers: never sanitized.
function(pf_pyframes_unsanitized target)
  if(PYFLOW_SANITIZE)
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
    target_link_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()
pf_pyframes_unsanitized(pf_pyframes_lifecycle)

function(pf_pyframes_test tag minor py)
  add_test(NAME unit.pyframes.${tag}
    COMMAND sh -c "[ -x \"$1\" ] || exit 77; exec \"$@\"" sh ${py} ${pf_pyf_script}
            --reader $<TARGET_FILE:pf_pyframes_3${minor}>
            --probe-dir ${CMAKE_CURRENT_BINARY_DIR}/pyframes/3${minor}
            --lifecycle $<TARGET_FILE:pf_pyframes_lifecycle>
            --minor ${minor})
  set_tests_properties(unit.pyframes.${tag} PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
endfunction()

foreach(minor ${PYFLOW_PYTHON_MINORS})
  list(FIND pf_pyf_minors ${minor} at)
  if(at LESS 0)
    add_test(NAME unit.pyframes.3.${minor} COMMAND sh -c "echo 'no Python 3.${minor} with headers'; exit 77")
    set_tests_properties(unit.pyframes.3.${minor} PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
    continue()
  endif()
  list(GET pf_pyf_pythons ${at} py)
  list(GET pf_pyf_includes ${at} inc)
  set(probe pf_pyframes_probe_3${minor})
  add_library(${probe} MODULE ${CMAKE_CURRENT_LIST_DIR}/pyframes/probe.c)
  set_target_properties(${probe} PROPERTIES PREFIX "" OUTPUT_NAME pf_probe SUFFIX ".so"
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/pyframes/3${minor})
  target_include_directories(${probe} PRIVATE ${inc})
  target_link_libraries(${probe} PRIVATE pf_pyframes_abi dl pthread)   # no libpython, like the reader
  target_compile_options(${probe} PRIVATE -Wno-missing-field-initializers -Wno-sign-compare)
  add_dependencies(${probe} pf_pyframes_3${minor} pf_pyframes_lifecycle)
  pf_pyframes_unsanitized(${probe})
  pf_pyframes_test(3.${minor} ${minor} ${py})
  if(minor EQUAL 11 AND EXISTS /usr/bin/python3.11 AND NOT py STREQUAL "/usr/bin/python3.11")
    pf_pyframes_test(debian-3.11 11 /usr/bin/python3.11)
  endif()
endforeach()
