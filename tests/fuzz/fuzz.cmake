# tests/fuzz: the libFuzzer target for the profile reader, built by clang at test time (the main build is
# gcc), run for 60 s on real profiles. Skips (77) where clang or libFuzzer is missing.
add_test(NAME fuzz.profile_reader
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_fuzz.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}/fuzz $<TARGET_FILE:pyflow> 60)
set_tests_properties(fuzz.profile_reader PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77 TIMEOUT 600)
