# ruby_test.cmake - what the gem's ctest tests run (cmake -P).
#   MODE=test: build the extension into WORK_DIR/ext against INCLUDE_DIR
#     and LIB_DIR (this build tree), then run the minitest suite with it.
#   MODE=dropin: the suite again, with require "hashbatch/digest" first,
#     against the extension MODE=test built.
#   MODE=install_vendored: gem build, then gem install --local into an
#     empty GEM_HOME with pkg-config pointed nowhere and no libhashbatch on
#     any search path, so the extension builds the sources the gem carries;
#     checks it chose that (its gem_make.out), that no libhashbatch.so is
#     linked (ldd) and no library symbol is exported (nm -D), then runs the
#     gem's own suite (its test/run_all.rb) against that install.
#   MODE=install_no_opencl: as install_vendored, with --without-opencl (what
#     a machine without CL/cl.h or libOpenCL gets): no libOpenCL linked,
#     Hashbatch.devices says the gem was built without OpenCL, and the
#     default engine hashes on the OpenSSL pool.
#   MODE=install_system: cmake --install of BUILD_DIR into WORK_DIR/prefix,
#     then gem install with --use-system-libraries (pkg-config finding that
#     prefix) and the suite against it; then again with
#     --with-hashbatch-dir=PREFIX and a few digests.
# Must not: write into SOURCE_DIR, except the gemspec's git-ignored copy of
# the library's sources in SOURCE_DIR/vendor.
include(${CMAKE_CURRENT_LIST_DIR}/ruby_gem_steps.cmake)

set(with_lib --with-hashbatch-include=${INCLUDE_DIR} --with-hashbatch-lib=${LIB_DIR})

if(MODE STREQUAL "test")
  set(ext ${WORK_DIR}/ext)
  file(MAKE_DIRECTORY ${ext} ${WORK_DIR}/lib/hashbatch)
  run(${RUBY} ${SOURCE_DIR}/ext/hashbatch/extconf.rb ${with_lib} WORKING_DIRECTORY ${ext})
  run(make -C ${ext} V=0)
  file(COPY ${ext}/hashbatch_ext.so DESTINATION ${WORK_DIR}/lib/hashbatch)
  # This build's extension first: a `rake compile` one in lib/ loses.
  run(${RUBY} -I${WORK_DIR}/lib -I${SOURCE_DIR}/lib -I${SOURCE_DIR}/test
      ${SOURCE_DIR}/test/run_all.rb)
elseif(MODE STREQUAL "dropin")
  # The same suite with the Digest drop-in loaded (the extension ruby_gem
  # built): existing code's results must not change.
  if(NOT EXISTS ${WORK_DIR}/lib/hashbatch/hashbatch_ext.so)
    message(FATAL_ERROR "no extension in ${WORK_DIR}/lib: ruby_gem builds it first")
  endif()
  run(${RUBY} -I${WORK_DIR}/lib -I${SOURCE_DIR}/lib -I${SOURCE_DIR}/test -rhashbatch/digest
      ${SOURCE_DIR}/test/run_all.rb)
elseif(MODE STREQUAL "install_vendored" OR MODE STREQUAL "install_no_opencl")
  set(dir ${WORK_DIR}/${MODE})
  hb_gem_isolate()
  # Nothing may offer an installed libhashbatch.
  set(ENV{PKG_CONFIG_PATH} ${dir}/no-pkgconfig)
  set(ENV{PKG_CONFIG_LIBDIR} ${dir}/no-pkgconfig)
  unset(ENV{HASHBATCH_USE_SYSTEM_LIBRARIES})
  foreach(var LD_LIBRARY_PATH LIBRARY_PATH CPATH C_INCLUDE_PATH)
    unset(ENV{${var}})
  endforeach()
  hb_gem_build(${dir})
  if(MODE STREQUAL "install_vendored")
    hb_gem_install(${dir})
    hb_gem_expect_choice("libhashbatch vendored: built from the gem's sources, with OpenCL")
    hb_gem_check_private_library()
    hb_gem_run_suite()
  else()
    hb_gem_install(${dir} --without-opencl)
    hb_gem_expect_choice("libhashbatch vendored: built from the gem's sources, without OpenCL")
    hb_gem_check_private_library()
    hb_gem_check_no_opencl()
  endif()
elseif(MODE STREQUAL "install_system")
  set(dir ${WORK_DIR}/system)
  set(prefix ${dir}/prefix)
  file(REMOVE_RECURSE ${prefix})
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
  hb_gem_isolate()
  set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
  hb_gem_build(${dir})
  hb_gem_install(${dir} --use-system-libraries)
  hb_gem_expect_choice("libhashbatch installed, --use-system-libraries, through pkg-config")
  hb_gem_check_linked_from(${prefix}/${LIBDIR})
  hb_gem_run_suite()
  # The explicit prefix, with pkg-config offering nothing.
  set(ENV{PKG_CONFIG_PATH} ${dir}/no-pkgconfig)
  set(ENV{PKG_CONFIG_LIBDIR} ${dir}/no-pkgconfig)
  hb_gem_install(${dir} --with-hashbatch-dir=${prefix})
  hb_gem_expect_choice("libhashbatch installed, from --with-hashbatch-*")
  hb_gem_check_linked_from(${prefix}/${LIBDIR})
  hb_gem_smoke()
else()
  message(FATAL_ERROR "MODE must be test, dropin, install_vendored, install_no_opencl or install_system")
endif()
