# extconf.rb - configures the C glue of the hashbatch gem, with
# libhashbatch either installed on the system or built from the sources the
# gem carries.
#
# Chooses, in this order, and prints the choice:
#   1. --with-hashbatch-dir=PREFIX (or --with-hashbatch-include=DIR and
#      --with-hashbatch-lib=DIR, e.g. a CMake build tree's host/include and
#      its host/ folder): that library; it must be there.
#   2. --use-system-libraries (or HASHBATCH_USE_SYSTEM_LIBRARIES=1): the
#      installed library, through pkg-config (PKG_CONFIG_PATH honoured) or
#      the compiler's default paths; it must be there.
#   3. pkg-config finds hashbatch: that library.
#   4. Otherwise the vendored sources (the checkout's host/ and kernels/, or
#      the copy in the gem's vendor/libhashbatch, ../../tools/
#      libhashbatch_vendor.rb) are compiled into a static archive linked into
#      the extension, its symbols kept private (no CMake needed:
#      ../../tools/libhashbatch_build.rb). With OpenCL when CL/cl.h and
#      libOpenCL are found (--without-opencl: never), else on the OpenSSL pool
#      alone, Hashbatch.devices then saying it was built without OpenCL.
# An installed library's directory goes into the extension's rpath, so one
# outside the loader's default paths still loads.
# Also needs OpenSSL's libcrypto: Hashbatch::SHA1 keeps its incremental
# state in an OpenSSL SHA_CTX.
# Every ext/hashbatch/*.c is compiled (mkmf's default sources: a new file
# needs no edit here); engine_parts.h lists the engine's files.
# Must not: write outside the directory it runs in (the library's objects
# go to ./libhashbatch).
require "mkmf"
require "shellwords"
require_relative "../../tools/libhashbatch_vendor"
require_relative "../../tools/libhashbatch_build"

def truthy?(value)
  value == true || %w[1 true yes on].include?(value.to_s.downcase)
end

def system_libraries_requested?
  truthy?(arg_config("--use-system-libraries", ENV.fetch("HASHBATCH_USE_SYSTEM_LIBRARIES", nil)))
end

def announce(how)
  message "hashbatch: libhashbatch #{how}\n"
end

def require_openssl
  abort "OpenSSL headers not found (libssl-dev)" unless have_header("openssl/sha.h")
  abort "libcrypto not found (libssl-dev)" unless have_library("crypto", "SHA1_Init", "openssl/sha.h")
end

# Links the installed library found through found_by; aborts, saying how
# to fix it, when it is not there. lib_dirs go into the rpath.
def link_installed(found_by, lib_dirs)
  abort <<~MSG unless find_header("hashbatch.h")
    hashbatch.h not found (looked through #{found_by}). Install libhashbatch
    (cmake --install), then set PKG_CONFIG_PATH to the folder holding
    hashbatch.pc, or pass --with-hashbatch-dir=PREFIX (or
    --with-hashbatch-include / --with-hashbatch-lib); or leave out
    --use-system-libraries to build the sources the gem carries.
  MSG
  require_openssl
  # A static libhashbatch.a (the default CMake build) needs its own
  # dependencies on the link line; for a shared one they do no harm.
  have_library("OpenCL", "clGetPlatformIDs")
  have_library("pthread", "pthread_create")
  abort "libhashbatch not found (looked through #{found_by})" unless
    have_library("hashbatch", "hb_engine_open", "hashbatch.h")
  Array(lib_dirs).compact.join(File::PATH_SEPARATOR).split(File::PATH_SEPARATOR).each do |d|
    $LDFLAGS << " -Wl,-rpath,#{File.expand_path(d)}" unless d.empty?
  end
end

# The installed library pkg-config knows, or nil.
def pkg_config_lib_dir
  flags = pkg_config("hashbatch") or return nil
  flags[2].to_s[/-L(\S+)/, 1] || `pkg-config --variable=libdir hashbatch`.strip
end

# Whether the vendored build gets OpenCL: wanted (not --without-opencl),
# and its header and loader are here.
def vendored_opencl?
  return false unless with_config("opencl", true)
  header = with_cppflags("#{$CPPFLAGS} -DCL_TARGET_OPENCL_VERSION=120") { have_header("CL/cl.h") }
  header && have_library("OpenCL", "clGetPlatformIDs")
end

# Compiles the vendored sources into ./libhashbatch/libhashbatch.a and
# links it into the extension, its symbols hidden there.
def link_vendored
  root = HashbatchBuild::Vendor.source_root or abort <<~MSG
    libhashbatch's sources are missing: neither a checkout's host/ nor the
    gem's vendor/libhashbatch is there (build the gem with `gem build` or
    `rake build`, which copy them), and no installed libhashbatch was found.
  MSG
  require_openssl
  opencl = vendored_opencl?
  have_library("pthread", "pthread_create")
  have_library("m", "log")
  lib = HashbatchBuild::Library.new(
    root: root, build_dir: File.join(Dir.pwd, "libhashbatch"), cc: RbConfig::CONFIG["CC"].shellsplit,
    opencl: opencl, cppflags: $CPPFLAGS.shellsplit.grep(/\A-[ID]/), werror: ENV["HB_WERROR"] == "1"
  )
  begin
    lib.build!
  rescue RuntimeError => e
    abort e.message
  end
  $INCFLAGS << " -I#{lib.include_dir.shellescape}"
  $LOCAL_LIBS << " #{lib.archive.shellescape}"
  append_ldflags("-Wl,--exclude-libs,libhashbatch.a")
  abort "the vendored libhashbatch does not link" unless have_func("hb_engine_open", "hashbatch.h")
  opencl
end

def choose_library
  inc_dir, lib_dir = dir_config("hashbatch")
  if inc_dir || lib_dir
    link_installed("--with-hashbatch-* options", lib_dir)
    announce "installed, from --with-hashbatch-* (#{[inc_dir, lib_dir].compact.join(', ')})"
  elsif system_libraries_requested?
    found_by = (dir = pkg_config_lib_dir) ? "pkg-config" : "the compiler's default paths"
    link_installed("--use-system-libraries: #{found_by}", dir)
    announce "installed, --use-system-libraries, through #{found_by}"
  elsif (dir = pkg_config_lib_dir)
    link_installed("pkg-config", dir)
    announce "installed, through pkg-config (#{dir})"
  else
    opencl = link_vendored
    announce "vendored: built from the gem's sources, #{opencl ? 'with OpenCL' : 'without OpenCL (OpenSSL pool only)'}"
  end
end

choose_library
abort "hb_job_fd missing: libhashbatch too old" unless have_func("hb_job_fd", "hashbatch.h")
have_func("hb_submit_files", "hashbatch.h") # Hashbatch.file_digests, when the library has files jobs
have_header("ruby/digest.h")
have_func("rb_ext_ractor_safe", "ruby.h")

$CFLAGS << " -std=gnu11 -Wall -Wextra -Wno-unused-parameter -DOPENSSL_SUPPRESS_DEPRECATED"
$CFLAGS << " -Werror" if ENV["HB_WERROR"] == "1"

create_makefile("hashbatch/hashbatch_ext")
