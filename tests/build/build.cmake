# Checks of how the runtime is built (label "build").
#
# build.pgo_profile: in a profile-guided build (cmake/PyflowPgo.cmake), the training wrote counts under the
# names this tree's runtime objects look for. The failure it guards against is silent: counts filed under
# other names (the two trees' object paths, unless -fprofile-prefix-path strips them) leave GCC without a
# profile, and -Wno-missing-profile keeps it quiet.
if(pyflow_pgo_mode STREQUAL "use")
  add_test(NAME build.pgo_profile
           COMMAND ${CMAKE_COMMAND} -DDATA=${PYFLOW_PGO_DATA} -DSTAMP=${PYFLOW_PGO_STAMP}
                   -P ${CMAKE_CURRENT_LIST_DIR}/check_pgo_profile.cmake)
  set_tests_properties(build.pgo_profile PROPERTIES LABELS build TIMEOUT 60)
endif()
