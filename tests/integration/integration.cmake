# Integration tests: tests/integration/cases.py runs the real build/bin/pyflow on real interpreters.
# Version-dependent cases run on Debian's python3 and on one interpreter per supported minor (the ones the
# frame readers were built from); the others once, on Debian's python3. A missing interpreter skips (77).
set(PF_IT_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/cases.py)
get_property(pf_it_pythons GLOBAL PROPERTY PYFLOW_PYFRAMES_PYTHONS)
set(pf_it_all /usr/bin/python3 ${pf_it_pythons})
set(pf_it_per_version python_and_native temporaries_and_live tracemalloc_agreement tracemalloc_in_program stdout_and_exit_codes
    module_and_code argv_cwd_env keyboard_interrupt signals_forwarded os_exit_and_sigkill fork_merged copies_numpy copies_python
    threads_stress child_processes outside_code started_by started_by_shell short_lived_workers lazy_libraries odd_script_names leaks peak_in_middle crashes_and_timers signal_coexistence
    stack_interning unprofiled_children command_lines call_paths library_paths
    venvs signals_relayed lost_children threads_from_code dist_env_dir waste_untouched waste_recompute
    ctypes_libc leak_temporaries leak_requests leak_every_nth leak_slow leak_library leak_caches
    children_over_time copy_verdicts sampling_error)
set(pf_it_once bad_input corrupt_profiles report_rerender install_prefix flow_graph_dot html_page info full_disk unwritable_tmpdir
    copy_pieces child_after_chdir watch_categories watch_signals watch_off watch_default watch_not_permitted watch_copies gpu_per_tensor exec_native_clean long_run_bounds fd_numbers fd_limit watch_sampled_addresses watch_budget
    profile_size_cap closed_profile_fd sampling_options greenlet_switches flow_graph_view flow_graph_real html_report_layout
    interpreter_cache output_files job_control broken_pipe fifo_outputs long_argument format_version
    watch_signals_blocked terminal_pipeline
    dist_torchrun dist_dask dist_dask_killed watch_pages peak_unbiased)

function(pf_it_add case py)
  string(REGEX REPLACE ".*/" "" tag ${py})
  if(py STREQUAL "/usr/bin/python3")
    set(tag debian-python3)
  endif()
  add_test(NAME integration.${case}.${tag}
           COMMAND ${Python3_EXECUTABLE} ${PF_IT_SCRIPT} ${case} --pyflow $<TARGET_FILE:pyflow> --python ${py})
  set_tests_properties(integration.${case}.${tag} PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 600)
endfunction()

foreach(case ${pf_it_per_version})
  foreach(py ${pf_it_all})
    pf_it_add(${case} ${py})
  endforeach()
endforeach()
foreach(case ${pf_it_once})
  pf_it_add(${case} /usr/bin/python3)
endforeach()

# issue 27 (pyflow where Python users work): exports, diff, pip, pytest, Jupyter; once, on Debian's python3
set(pf_it_pyeco export_csv export_speedscope export_pprof diff pip_install pytest_limits jupyter_notebook)
foreach(case ${pf_it_pyeco})
  pf_it_add(${case} /usr/bin/python3)
endforeach()
# these three pip-install the checkout, building in one CMake tree (build/pip-build): one at a time
foreach(case pip_install pytest_limits jupyter_notebook)
  set_tests_properties(integration.${case}.debian-python3 PROPERTIES RESOURCE_LOCK pyflow_pip_build)
endforeach()
