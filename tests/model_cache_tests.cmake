# The scheduler's model cache (host/src/sched/model_cache.c): its file
# format, reading and writing, and the engine's use of it (TCase
# "engine", backend cpu only: no OpenCL needed). Included by
# tests/CMakeLists.txt.
hb_add_suite(test_model_cache 120)
# The OpenCL program cache (host/src/program_cache.c): its file format
# and the OpenCL backend's use of it (TCase "engine": the real device).
hb_add_suite(test_program_cache 300)
# The engine's open cost (hb_config.expected_*): no OpenCL device opened
# for work too small to pay for it. Needs the OpenCL device (pocl).
hb_add_suite(test_open_cost 300)
