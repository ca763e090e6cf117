# The scheduler's model cache (host/src/sched/model_cache.c): its file
# format, reading and writing, and the engine's use of it (TCase
# "engine", backend cpu only: no OpenCL needed). Included by
# tests/CMakeLists.txt.
hb_add_suite(test_model_cache 120)
