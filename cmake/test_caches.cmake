# test_caches.cmake - keeps every test's caches in the build tree.
#
# The library keeps what it learns about a machine (cost models, the
# default CPU implementation, built OpenCL programs) under
# $XDG_CACHE_HOME/hashbatch, and pocl keeps its kernels beside. A test
# learns on a machine busy with other suites, or with costs it forced or
# delays it injected; left in the user's cache, that would steer the next
# real run (a pool that looked slow sends its work to pocl). Tests share
# one folder of their own instead, so pocl compiles a kernel once per build.
set(HB_TEST_CACHE_HOME ${PROJECT_BINARY_DIR}/test-cache)
file(MAKE_DIRECTORY ${HB_TEST_CACHE_HOME})

# hb_tests_use_build_caches: every test defined so far in the calling
# directory gets XDG_CACHE_HOME pointing at HB_TEST_CACHE_HOME. Called last
# in each directory that adds tests (after any ENVIRONMENT they set).
function(hb_tests_use_build_caches)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "XDG_CACHE_HOME=${HB_TEST_CACHE_HOME}")
  endforeach()
endfunction()
