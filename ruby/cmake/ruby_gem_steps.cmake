# ruby_gem_steps.cmake - the steps ruby_test.cmake's modes are made of:
# building the .gem, installing it into a fresh GEM_HOME, checking how its
# extension was built and linked, and running the gem's suite against the
# install. Each step fails the test (FATAL_ERROR) with what went wrong.
# Reads RUBY, GEM, SOURCE_DIR, WERROR and the caller's ${dir}.
# Must not: write outside ${dir}, except the gemspec's git-ignored copy in
# SOURCE_DIR/vendor.

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

# hb_gem_isolate: GEM_HOME is ${dir}/gemhome (emptied by each install);
# GEM_PATH adds Ruby's default gem dirs (minitest lives there, no
# hashbatch does: hb_gem_run_suite checks what was loaded); nothing else
# reaches Ruby's load path.
macro(hb_gem_isolate)
  set(gemhome ${dir}/gemhome)
  execute_process(COMMAND ${RUBY} -e "print Gem.default_path.join(File::PATH_SEPARATOR)"
    OUTPUT_VARIABLE hb_default_gem_path RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ruby cannot tell its default gem path")
  endif()
  set(ENV{GEM_HOME} ${gemhome})
  set(ENV{GEM_PATH} "${gemhome}:${hb_default_gem_path}")
  unset(ENV{RUBYOPT})
  unset(ENV{RUBYLIB})
  if(WERROR)
    set(ENV{HB_WERROR} 1)
  else()
    unset(ENV{HB_WERROR})
  endif()
endmacro()

# hb_gem_build: gem build into ${d}/hashbatch.gem; the gem must carry the
# library's sources and the license.
function(hb_gem_build d)
  file(MAKE_DIRECTORY ${d})
  file(REMOVE ${d}/hashbatch.gem)
  run(${GEM} build hashbatch.gemspec --output ${d}/hashbatch.gem WORKING_DIRECTORY ${SOURCE_DIR})
  run(${RUBY} -e [=[
    require "rubygems/package"
    spec = Gem::Package.new(ARGV[0]).spec
    need = %w[vendor/libhashbatch/LICENSE vendor/libhashbatch/host/include/hashbatch.h
              vendor/libhashbatch/host/src/engine.c vendor/libhashbatch/host/opencl_sources.txt
              vendor/libhashbatch/kernels/sha1.cl tools/libhashbatch_build.rb]
    missing = need - spec.files
    abort "the .gem lacks #{missing.join(', ')}" unless missing.empty?
    abort "license #{spec.licenses.inspect}, not MIT" unless spec.licenses == ["MIT"]
    puts "#{File.basename(ARGV[0])}: #{spec.files.size} files, vendored sources and LICENSE in"
  ]=] ${d}/hashbatch.gem)
endfunction()

# hb_gem_install: gem install --local of ${d}/hashbatch.gem into an
# emptied GEM_HOME, the extra arguments going to extconf.rb.
function(hb_gem_install d)
  file(REMOVE_RECURSE ${gemhome})
  file(MAKE_DIRECTORY ${gemhome})
  set(extconf_args ${ARGN})
  if(extconf_args)
    run(${GEM} install --local --no-document --install-dir ${gemhome} ${d}/hashbatch.gem
        -- ${extconf_args})
  else()
    run(${GEM} install --local --no-document --install-dir ${gemhome} ${d}/hashbatch.gem)
  endif()
endfunction()

# hb_gem_extension: the installed extension's .so, in ${out}.
function(hb_gem_extension out)
  file(GLOB so ${gemhome}/extensions/*/*/hashbatch-*/hashbatch/hashbatch_ext.so)
  list(LENGTH so n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "expected one installed hashbatch_ext.so under ${gemhome}/extensions, found: ${so}")
  endif()
  set(${out} ${so} PARENT_SCOPE)
endfunction()

# hb_gem_expect_choice: extconf.rb said "hashbatch: <text>" (gem_make.out).
function(hb_gem_expect_choice text)
  file(GLOB log ${gemhome}/extensions/*/*/hashbatch-*/gem_make.out)
  if(NOT log)
    message(FATAL_ERROR "no gem_make.out under ${gemhome}/extensions")
  endif()
  file(STRINGS ${log} said REGEX "^hashbatch: ")
  string(FIND "${said}" "hashbatch: ${text}" at)
  if(at LESS 0)
    message(FATAL_ERROR "extconf.rb chose '${said}', expected 'hashbatch: ${text}'")
  endif()
  message(STATUS "extconf.rb: ${said}")
endfunction()

# hb_gem_check_private_library: the extension links no libhashbatch.so
# and exports none of the library's functions (it carries them, hidden).
function(hb_gem_check_private_library)
  hb_gem_extension(so)
  execute_process(COMMAND ldd ${so} OUTPUT_VARIABLE deps RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ldd ${so} failed (${rc})")
  endif()
  if(deps MATCHES "libhashbatch")
    message(FATAL_ERROR "the vendored extension links a libhashbatch:\n${deps}")
  endif()
  execute_process(COMMAND nm -D --defined-only ${so} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm -D ${so} failed (${rc})")
  endif()
  if(syms MATCHES " hb_engine_open\n")
    message(FATAL_ERROR "the vendored extension exports libhashbatch's hb_engine_open")
  endif()
  if(NOT syms MATCHES " Init_hashbatch_ext\n")
    message(FATAL_ERROR "nm -D lists no Init_hashbatch_ext: the check would prove nothing")
  endif()
  message(STATUS "${so}: no libhashbatch.so linked, library symbols private")
endfunction()

# hb_gem_check_linked_from: where libdir holds a shared libhashbatch, the
# extension loads that one; a static one is inside the extension.
function(hb_gem_check_linked_from libdir)
  hb_gem_extension(so)
  if(NOT EXISTS ${libdir}/libhashbatch.so)
    message(STATUS "${libdir} holds a static libhashbatch: linked into the extension")
    return()
  endif()
  execute_process(COMMAND ldd ${so} OUTPUT_VARIABLE deps)
  string(FIND "${deps}" "${libdir}/libhashbatch.so" at)
  if(at LESS 0)
    message(FATAL_ERROR "the extension does not load ${libdir}/libhashbatch.so:\n${deps}")
  endif()
endfunction()

# hb_gem_check_loaded: Ruby loads the gem's extension from GEM_HOME.
function(hb_gem_check_loaded)
  run(${RUBY} -e [=[
    require "hashbatch"
    spec = Gem.loaded_specs.fetch("hashbatch")
    ext = $LOADED_FEATURES.grep(/hashbatch_ext/)
    abort "loaded #{ext.inspect}, not from #{ENV['GEM_HOME']}" unless
      !ext.empty? && ext.all? { |f| f.start_with?(ENV["GEM_HOME"]) }
    puts "hashbatch #{spec.version} from #{spec.full_gem_path}"
  ]=] WORKING_DIRECTORY ${dir})
endfunction()

# hb_gem_run_suite: the installed gem's own minitest suite.
function(hb_gem_run_suite)
  hb_gem_check_loaded()
  file(GLOB gem_dir ${gemhome}/gems/hashbatch-*)
  run(${RUBY} ${gem_dir}/test/run_all.rb WORKING_DIRECTORY ${dir})
endfunction()

# hb_gem_smoke: a few digests through the installed gem, against Digest.
function(hb_gem_smoke)
  hb_gem_check_loaded()
  run(${RUBY} -e [=[
    require "hashbatch"
    msgs = ["", "abc", "x" * 100_000]
    want = msgs.map { |m| Digest::SHA1.hexdigest(m) }
    got = Hashbatch.hexdigest_many(msgs)
    abort "hexdigest_many: #{got.inspect} != #{want.inspect}" unless got == want
    abort "SHA1 differs" unless Hashbatch::SHA1.hexdigest("abc") == want[1]
    puts "digests match Digest::SHA1"
  ]=] WORKING_DIRECTORY ${dir})
endfunction()

# hb_gem_check_no_opencl: an install built without OpenCL links no
# libOpenCL, says so in Hashbatch.devices and the default engine's
# description, refuses backend opencl, and hashes right on the pool.
function(hb_gem_check_no_opencl)
  hb_gem_extension(so)
  execute_process(COMMAND ldd ${so} OUTPUT_VARIABLE deps)
  if(deps MATCHES "libOpenCL")
    message(FATAL_ERROR "built without OpenCL, the extension still links libOpenCL:\n${deps}")
  endif()
  hb_gem_check_loaded()
  run(${RUBY} -e [=[
    require "hashbatch"
    why = "built without OpenCL"
    begin
      devices = Hashbatch.devices
      abort "Hashbatch.devices returned #{devices.inspect}, not a NoDeviceError saying #{why}"
    rescue Hashbatch::NoDeviceError => e
      abort "Hashbatch.devices: #{e.message.inspect} does not say #{why}" unless e.message.include?(why)
    end
    begin
      Hashbatch::Engine.new(backend: "opencl").close
      abort "backend opencl opened without OpenCL"
    rescue Hashbatch::NoDeviceError => e
      abort "backend opencl: #{e.message.inspect} does not say #{why}" unless e.message.include?(why)
    end
    rng = Random.new(14)
    msgs = ["", "abc", "x" * 100_000] + Array.new(300) { |i| rng.bytes(i * 37) }
    want = msgs.map { |m| OpenSSL::Digest::SHA1.hexdigest(m) }
    got = Hashbatch.hexdigest_many(msgs)
    abort "hexdigest_many differs from OpenSSL" unless got == want
    Hashbatch::Engine.open do |engine|
      abort "the default engine's description #{engine.describe.inspect} does not say #{why}" unless
        engine.describe.include?(why)
      abort "Engine#hexdigest_many differs from OpenSSL" unless engine.hexdigest_many(msgs) == want
    end
    abort "Hashbatch::SHA1 differs" unless Hashbatch::SHA1.hexdigest(msgs[2]) == want[2]
    puts "without OpenCL: Hashbatch.devices and the engine say so, #{msgs.size} digests match OpenSSL"
  ]=] -ropenssl WORKING_DIRECTORY ${dir})
endfunction()
