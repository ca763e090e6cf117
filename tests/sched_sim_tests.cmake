# The simulator of bench/sched_sim.c (issue 30: the scheduler in virtual
# time, on a GPU machine modelled from published figures): its arithmetic
# and its virtual-time runs through the real scheduler, against splits
# computed by hand. No engine, no OpenCL, nothing timed. The suite
# compiles the simulator's core into itself (it includes
# bench/sched_sim.c with SCHED_SIM_NO_MAIN). Included by
# tests/CMakeLists.txt.
#
#   ctest -R test_sched_sim --output-on-failure
hb_add_suite(test_sched_sim 120)
target_include_directories(test_sched_sim PRIVATE ${PROJECT_SOURCE_DIR}/bench)
target_link_libraries(test_sched_sim PRIVATE m)
