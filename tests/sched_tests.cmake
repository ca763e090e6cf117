# The scheduler's suites (included by tests/CMakeLists.txt).
#
# test_cost_model: the cost models' and the share rule's arithmetic on
# hand-built models and schedulers (host/src/sched/cost_model.c and
# scheduler.c); no engine, no OpenCL.
# test_sched: the engine under the scheduler (backend auto, real threads):
# forced models route the work, small jobs stay on the pool, a backend
# whose batches a test clock makes slow loses its share (what it learns
# does not hang on the machine's load), every message is hashed
# exactly once while models and faults churn, quarantine still works. It
# needs an OpenCL device (pocl's CPU device will do) and fails, saying so,
# where there is none. Both keep the model cache out of the user's home
# (HASHBATCH_MODEL_CACHE in a mkdtemp folder).
#
#   ctest -R 'test_(cost_model|sched)$' --output-on-failure
hb_add_suite(test_cost_model 120)
hb_add_suite(test_sched 600)
