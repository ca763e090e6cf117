# The GPU-shape reruns (included by tests/CMakeLists.txt). No GPU runs
# here, so every library and service suite runs again with the OpenCL
# backend forced into the shape it takes on a discrete GPU
# (HASHBATCH_TEST_GPU_SHAPE=1, read only by the test library: one lane per
# work-item, the GPU local size, packed blocks copied from pinned staging
# to device-only buffers and states copied back, no in-place reads, no
# uniform kernel), through run_with_gpu_shape.sh. Left out: test_huge,
# test_mb and test_mb_streams, which use no OpenCL device.
#
#   ctest -L gpu_shape --output-on-failure
#
# test_gpu_shape checks the switch itself: that it reaches the backend and
# the engine's description, what each shape does, and that a corrupted
# read-back is caught. hashbatch_ignores_gpu_shape checks that the
# installed library (the CLI links it) ignores the variable.

set(HB_GPU_SHAPE_UNIT_SUITES test_errors test_devices test_lengths test_cavp test_collisions
    test_faults test_sampler test_probe test_random test_uniform test_files test_sched test_program_cache
    test_open_cost test_calibrate)
set(HB_GPU_SHAPE_SERVICE_SUITES test_jobs test_cancel_close test_threads test_fault_matrix
    test_stats)
# no device used (test_huge, test_mb*, test_long_share: the CPU pool's
# threads sharing long messages, the model cache's and the cost
# model's arithmetic, the CLI's hash cache, test_beneath's path resolution:
# its files job is on the CPU pool, test_priority's threads: the pool's);
# test_oclgrind, whose device is a simulated GPU already (check_oclgrind.sh);
# test_cores, about where pocl's CPU device's threads run, not its shape;
# test_sched_sim, the scheduler in virtual time (no engine);
# the switch's own suite; helpers
set(HB_GPU_SHAPE_NOT_RERUN test_huge test_mb test_mb_streams test_mb_check test_long_share
    test_model_cache test_cost_model
    test_hcache test_gpu_shape test_util test_beneath test_priority test_oclgrind
    test_cores test_sched_sim)

# A suite added to tests/ or tests/service/ without a rerun (or a reason
# to have none, in HB_GPU_SHAPE_NOT_RERUN) is named at configure time.
file(GLOB hb_gpu_shape_sources RELATIVE ${CMAKE_CURRENT_LIST_DIR}
     ${CMAKE_CURRENT_LIST_DIR}/test_*.c ${CMAKE_CURRENT_LIST_DIR}/service/test_*.c)
foreach(source ${hb_gpu_shape_sources})
  get_filename_component(suite ${source} NAME_WE)
  if(NOT suite IN_LIST HB_GPU_SHAPE_UNIT_SUITES AND NOT suite IN_LIST HB_GPU_SHAPE_SERVICE_SUITES
     AND NOT suite IN_LIST HB_GPU_SHAPE_NOT_RERUN)
    message(AUTHOR_WARNING "tests/${source} has no GPU-shape rerun: add it to "
                           "tests/gpu_shape_tests.cmake (or to HB_GPU_SHAPE_NOT_RERUN, saying why)")
  endif()
endforeach()

hb_add_suite(test_gpu_shape 300 gpu_shape)

# The suites' targets are resolved at generation time, so the service
# suites (defined later, in tests/service/) can be named here.
function(hb_add_gpu_shape_reruns label)
  foreach(suite ${ARGN})
    add_test(NAME ${suite}_gpu_shape
      COMMAND bash ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/run_with_gpu_shape.sh
              $<TARGET_FILE:${suite}>)
    set_tests_properties(${suite}_gpu_shape PROPERTIES
      TIMEOUT 900 SKIP_RETURN_CODE 77 LABELS "${label};gpu_shape")
  endforeach()
endfunction()
hb_add_gpu_shape_reruns(unit ${HB_GPU_SHAPE_UNIT_SUITES})
hb_add_gpu_shape_reruns(service ${HB_GPU_SHAPE_SERVICE_SUITES})

# The installed library has no test switches: the CLI, which links it,
# must describe its OpenCL engine in the device's own shape, exit 0 and
# print sha1sum's lines (check_cli_ignores_gpu_shape.sh says what it checks).
if(TARGET hashbatch_cli)
  add_test(NAME hashbatch_ignores_gpu_shape
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_cli_ignores_gpu_shape.sh
            $<TARGET_FILE:hashbatch_cli>
            ${CMAKE_CURRENT_LIST_DIR}/vectors/cavp/SHA1ShortMsg.rsp
            ${CMAKE_CURRENT_LIST_DIR}/vectors/cavp/SHA1LongMsg.rsp
            ${CMAKE_CURRENT_LIST_DIR}/vectors/collisions/shattered-1.prefix.bin)
  set_tests_properties(hashbatch_ignores_gpu_shape PROPERTIES
    TIMEOUT 120
    LABELS "cli;gpu_shape")
endif()
