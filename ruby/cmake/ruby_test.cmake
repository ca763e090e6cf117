# ruby_test.cmake - what the ruby_gem and ruby_gem_package ctest tests run
# (cmake -P). MODE=test: build the extension into WORK_DIR/ext against
# INCLUDE_DIR and LIB_DIR, then run the minitest suite with it.
# MODE=package: gem build into WORK_DIR, gem install --local (offline)
# into WORK_DIR/gemhome, then hash through the installed gem.
# Must not: write into SOURCE_DIR.

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

set(with_lib --with-hashbatch-include=${INCLUDE_DIR} --with-hashbatch-lib=${LIB_DIR})

if(MODE STREQUAL "test")
  set(ext ${WORK_DIR}/ext)
  file(MAKE_DIRECTORY ${ext} ${WORK_DIR}/lib/hashbatch)
  run(${RUBY} ${SOURCE_DIR}/ext/hashbatch/extconf.rb ${with_lib} WORKING_DIRECTORY ${ext})
  run(make -C ${ext} V=0)
  file(COPY ${ext}/hashbatch_ext.so DESTINATION ${WORK_DIR}/lib/hashbatch)
  run(${RUBY} -I${SOURCE_DIR}/lib -I${WORK_DIR}/lib -I${SOURCE_DIR}/test
      ${SOURCE_DIR}/test/run_all.rb)
elseif(MODE STREQUAL "package")
  file(REMOVE_RECURSE ${WORK_DIR}/gemhome)
  file(GLOB old ${WORK_DIR}/hashbatch-*.gem)
  if(old)
    file(REMOVE ${old})
  endif()
  execute_process(COMMAND ${GEM} build hashbatch.gemspec --output ${WORK_DIR}/hashbatch.gem
    WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gem build failed (${rc})")
  endif()
  set(ENV{GEM_HOME} ${WORK_DIR}/gemhome)
  set(ENV{GEM_PATH} ${WORK_DIR}/gemhome)
  run(${GEM} install --local --no-document --install-dir ${WORK_DIR}/gemhome
      ${WORK_DIR}/hashbatch.gem -- ${with_lib})
  run(${RUBY} -e [=[
    gem "hashbatch"
    require "hashbatch"
    spec = Gem.loaded_specs.fetch("hashbatch")
    abort "loaded from #{$LOADED_FEATURES.grep(/hashbatch_ext/).inspect}, not the installed gem" unless
      $LOADED_FEATURES.grep(/hashbatch_ext/).all? { |f| f.start_with?(ENV["GEM_HOME"]) }
    msgs = ["", "abc", "x" * 100_000]
    want = msgs.map { |m| Digest::SHA1.hexdigest(m) }
    got = Hashbatch.hexdigest_many(msgs)
    abort "hexdigest_many: #{got.inspect} != #{want.inspect}" unless got == want
    abort "SHA1 differs" unless Hashbatch::SHA1.hexdigest("abc") == Digest::SHA1.hexdigest("abc")
    puts "installed gem #{spec.version} at #{spec.full_gem_path}: digests match Digest::SHA1"
  ]=])
else()
  message(FATAL_ERROR "MODE must be test or package")
endif()
