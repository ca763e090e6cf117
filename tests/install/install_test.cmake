# install_test.cmake - installs the build into WORK_DIR/prefix and builds
# the consumer against it with CMake's package config and with pkg-config.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f include/hashbatch.h lib/pkgconfig/hashbatch.pc lib/cmake/hashbatch/hashbatchConfig.cmake)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()

# 1. find_package(hashbatch) and hashbatch::hashbatch
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/cmake-build"
    -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build "${WORK_DIR}/cmake-build")
run("${WORK_DIR}/cmake-build/consumer")
message(STATUS "find_package consumer: ${last_output}")

# 2. pkg-config --cflags --libs --static hashbatch
set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig")
run(pkg-config --cflags --libs --static hashbatch)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(cc "${SOURCE_DIR}/consumer.c" -o "${WORK_DIR}/pc-consumer" ${flags})
run("${WORK_DIR}/pc-consumer")
message(STATUS "pkg-config consumer: ${last_output}")
