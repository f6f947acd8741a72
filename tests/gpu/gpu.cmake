# GPU without a GPU: a mock CUDA library (host memory behind the CUDA entry points), loaded by Python
# programs with ctypes (dlopen/dlsym) and through a C extension linked against it (PLT). The integration
# cases of tests/integration/cases/gpu.py run the real launcher on them (pf_gpu_env names what they load).
add_library(pf_mockcuda SHARED ${PROJECT_SOURCE_DIR}/tests/gpu/mock_cuda.c)
set_target_properties(pf_mockcuda PROPERTIES C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/gpu)
# Bound to itself, as libcuda is: the pointers its cuGetProcAddress hands out, and its calls between its own
# entry points, are its own functions, not whatever a preload interposes under their names.
target_link_options(pf_mockcuda PRIVATE -Wl,-Bsymbolic)

set(pf_gpu_env "PYFLOW_TEST_MOCKCUDA=$<TARGET_FILE:pf_mockcuda>")
execute_process(COMMAND /usr/bin/python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])"
                OUTPUT_VARIABLE pf_debian_py_inc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(pf_debian_py_inc AND EXISTS ${pf_debian_py_inc}/Python.h)
  add_library(pf_gpu_ext MODULE ${PROJECT_SOURCE_DIR}/tests/gpu/gpu_ext.c)
  execute_process(COMMAND /usr/bin/python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"
                  OUTPUT_VARIABLE pf_ext_suffix OUTPUT_STRIP_TRAILING_WHITESPACE)
  set_target_properties(pf_gpu_ext PROPERTIES PREFIX "" OUTPUT_NAME pf_gpu_ext SUFFIX ${pf_ext_suffix}
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/gpu/ext)
  target_include_directories(pf_gpu_ext PRIVATE ${pf_debian_py_inc})
  target_link_libraries(pf_gpu_ext PRIVATE pf_mockcuda)
  list(APPEND pf_gpu_env "PYFLOW_TEST_GPUEXT=${CMAKE_BINARY_DIR}/tests/gpu/ext")
endif()

# tests/gpu/check_gpu.py: probes answer as without the profiler; the driver API, pinned memory, unified
# addressing and cuGetProcAddress variants; `pyflow info`'s cuda line.
foreach(case probe driver info)
  add_test(NAME gpu.${case}.debian-python3
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/tests/gpu/check_gpu.py ${case}
                   --pyflow $<TARGET_FILE:pyflow> --python /usr/bin/python3 --mock $<TARGET_FILE:pf_mockcuda>)
  set_tests_properties(gpu.${case}.debian-python3 PROPERTIES LABELS "integration;gpu" SKIP_RETURN_CODE 77
                       TIMEOUT 300)
endforeach()

# An existing LD_PRELOAD interposer using dlsym(RTLD_NEXT) keeps working under pyflow's dlsym (case
# preload_chain loads it).
add_library(pf_next_preload SHARED ${PROJECT_SOURCE_DIR}/tests/gpu/next_preload.c)
set_target_properties(pf_next_preload PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/gpu)
target_link_libraries(pf_next_preload PRIVATE dl)

# A program linked against the real static CUDA runtime (libcudart_static.a, from the CUDA toolkit when
# installed: CuPy's wheels are built so), run with pyflow's runtime preloaded and a logging stand-in for
# libcuda: every entry point it looks up after fetching cuGetProcAddress by name must go through pyflow.
find_library(PF_CUDART_STATIC libcudart_static.a PATHS /usr/local/cuda/lib64 /usr/local/cuda/lib NO_DEFAULT_PATH)
if(PF_CUDART_STATIC)
  add_executable(pf_static_cudart_app ${PROJECT_SOURCE_DIR}/tests/gpu/static_cudart_app.c)
  set_target_properties(pf_static_cudart_app PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/gpu)
  target_link_libraries(pf_static_cudart_app PRIVATE ${PF_CUDART_STATIC} pthread dl rt)
  add_library(pf_logging_libcuda SHARED ${PROJECT_SOURCE_DIR}/tests/gpu/logging_libcuda.c)
  set_target_properties(pf_logging_libcuda PROPERTIES OUTPUT_NAME cuda SUFFIX .so.1
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/gpu/logging)
  target_link_libraries(pf_logging_libcuda PRIVATE dl)
  target_link_options(pf_logging_libcuda PRIVATE -Wl,-Bsymbolic)
  if(PYFLOW_SANITIZE)    # run uninstrumented, like the programs pyflow profiles
    foreach(t pf_static_cudart_app pf_logging_libcuda)
      target_compile_options(${t} PRIVATE -fno-sanitize=all)
      target_link_options(${t} PRIVATE -fno-sanitize=all)
    endforeach()
  endif()
  add_test(NAME gpu.static_cudart
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/tests/gpu/check_static_cudart.py
                   $<TARGET_FILE:pf_static_cudart_app> ${CMAKE_BINARY_DIR}/tests/gpu/logging
                   $<TARGET_FILE:pyflow_runtime>)
  set_tests_properties(gpu.static_cudart PROPERTIES LABELS "integration;gpu" SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
