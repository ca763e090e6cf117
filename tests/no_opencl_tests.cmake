# no_opencl_tests.cmake - the library and CLI built without OpenCL
# (HB_OPENCL=OFF: host/src/opencl_absent.c in place of the files
# host/opencl_sources.txt names), as the gem builds them where no OpenCL
# loader is found.
# Included by tests/CMakeLists.txt, it registers the test no_opencl_build;
# run by that test (cmake -P), it configures and builds this source tree
# with HB_OPENCL=OFF in WORK_DIR and checks that:
#  - libhashbatch.a needs no OpenCL symbol, and the CLI links no libOpenCL;
#  - `hashbatch sum` gives OpenSSL's digests (openssl dgst -sha1), from the
#    OpenSSL pool, for an empty, a small and a multi-block file;
#  - `hashbatch devices` and `sum --backend opencl` fail, saying the
#    library was built without OpenCL.
# Must not: write outside WORK_DIR.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  find_program(HB_OPENSSL_CLI openssl)
  if(NOT HB_OPENSSL_CLI)
    message(STATUS "openssl command not found: no_opencl_build is not registered")
    return()
  endif()
  add_test(NAME no_opencl_build
    COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
            -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/no_opencl -DOPENSSL=${HB_OPENSSL_CLI}
            -DWERROR=${HB_WERROR} -DGENERATOR=${CMAKE_GENERATOR}
            -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(no_opencl_build PROPERTIES LABELS "build;no_opencl" TIMEOUT 900)
  return()
endif()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

set(build ${WORK_DIR}/build)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DHB_OPENCL=OFF -DHB_BUILD_TESTS=OFF -DBUILD_TESTING=OFF -DHB_WERROR=${WERROR})
run(${CMAKE_COMMAND} --build ${build} --target hashbatch hashbatch_cli --parallel 2)
file(GLOB_RECURSE lib ${build}/host/libhashbatch.*)
file(GLOB cli ${build}/host/cli/hashbatch)
if(NOT lib OR NOT cli)
  message(FATAL_ERROR "the HB_OPENCL=OFF build made no library (${lib}) or CLI (${cli})")
endif()

# No OpenCL anywhere in what was built.
foreach(l IN LISTS lib)
  execute_process(COMMAND nm -A ${l} OUTPUT_VARIABLE syms RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0 OR NOT syms MATCHES " T hb_engine_open")
    message(FATAL_ERROR "nm ${l} failed or lists no hb_engine_open (${rc})")
  endif()
  string(REGEX MATCHALL "[^\n]* U cl[A-Z][A-Za-z]*" cl_refs "${syms}")
  if(cl_refs)
    message(FATAL_ERROR "the HB_OPENCL=OFF library still needs OpenCL:\n${cl_refs}")
  endif()
endforeach()
execute_process(COMMAND ldd ${cli} OUTPUT_VARIABLE deps)
if(deps MATCHES "libOpenCL")
  message(FATAL_ERROR "the HB_OPENCL=OFF CLI links libOpenCL:\n${deps}")
endif()

# Digests from the OpenSSL pool, checked against openssl dgst.
set(data ${WORK_DIR}/data)
file(REMOVE_RECURSE ${data})
file(MAKE_DIRECTORY ${data})
file(WRITE ${data}/empty "")
file(WRITE ${data}/abc "abc")
string(REPEAT "0123456789abcdef-hashbatch-without-opencl\n" 20000 big)
file(WRITE ${data}/big "${big}")
foreach(f empty abc big)
  execute_process(COMMAND ${OPENSSL} dgst -sha1 -r ${data}/${f} OUTPUT_VARIABLE want RESULT_VARIABLE rc)
  string(REGEX MATCH "^[0-9a-f]+" want "${want}")
  execute_process(COMMAND ${cli} sum ${data}/${f} OUTPUT_VARIABLE got RESULT_VARIABLE rc2
                  ERROR_VARIABLE err)
  string(REGEX MATCH "^[0-9a-f]+" got "${got}")
  if(NOT rc EQUAL 0 OR NOT rc2 EQUAL 0 OR NOT got STREQUAL want OR want STREQUAL "")
    message(FATAL_ERROR "hashbatch sum ${f}: '${got}' (exit ${rc2}: ${err}), openssl: '${want}'")
  endif()
endforeach()

# What needs OpenCL fails, and says why.
foreach(args "devices" "sum;--backend;opencl;${data}/abc")
  execute_process(COMMAND ${cli} ${args} OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(rc EQUAL 0 OR NOT err MATCHES "built without OpenCL")
    message(FATAL_ERROR "hashbatch ${args}: exit ${rc}, stderr '${err}': expected a failure naming the build without OpenCL")
  endif()
endforeach()
message(STATUS "HB_OPENCL=OFF: library and CLI without OpenCL; digests match openssl")
