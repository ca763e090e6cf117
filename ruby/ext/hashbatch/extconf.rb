# extconf.rb - configures the C glue of the hashbatch gem against libhashbatch.
#
# Finds the library in this order:
#   1. --with-hashbatch-dir=PREFIX (or --with-hashbatch-include=DIR and
#      --with-hashbatch-lib=DIR, e.g. a CMake build tree's host/include and
#      its host/ folder holding libhashbatch.so);
#   2. pkg-config hashbatch (an installed library; PKG_CONFIG_PATH honoured);
#   3. the compiler's default paths.
# The directory the library was found in goes into the extension's rpath, so
# a library outside the loader's default paths still loads.
# Also needs OpenSSL's libcrypto: Hashbatch::SHA1 keeps its incremental
# state in an OpenSSL SHA_CTX.
# Every ext/hashbatch/*.c is compiled (mkmf's default sources: a new file
# needs no edit here); engine_parts.h lists the engine's files.
require "mkmf"

inc_dir, lib_dir = dir_config("hashbatch")
found_by = "--with-hashbatch-* options"
unless inc_dir || lib_dir
  if (flags = pkg_config("hashbatch"))
    found_by = "pkg-config"
    lib_dir = flags[2].to_s[/-L(\S+)/, 1] || `pkg-config --variable=libdir hashbatch`.strip
  else
    found_by = "default paths"
  end
end

abort <<~MSG unless find_header("hashbatch.h")
  hashbatch.h not found. Build or install libhashbatch first, then either
  set PKG_CONFIG_PATH to the folder holding hashbatch.pc, or pass
  --with-hashbatch-dir=PREFIX (or --with-hashbatch-include / --with-hashbatch-lib).
MSG
# A static libhashbatch.a (the default CMake build) needs its own
# dependencies on the link line; for a shared one they do no harm.
abort "OpenSSL headers not found (libssl-dev)" unless have_header("openssl/sha.h")
abort "libcrypto not found" unless have_library("crypto", "SHA1_Init", "openssl/sha.h")
have_library("OpenCL", "clGetPlatformIDs")
have_library("pthread", "pthread_create")
abort "libhashbatch not found (looked through #{found_by})" unless have_library("hashbatch", "hb_engine_open", "hashbatch.h")
abort "hb_job_fd missing: libhashbatch too old" unless have_func("hb_job_fd", "hashbatch.h")
have_func("hb_submit_files", "hashbatch.h") # Hashbatch.file_digests, when the library has files jobs
have_header("ruby/digest.h")
have_func("rb_ext_ractor_safe", "ruby.h")

if lib_dir && !lib_dir.empty?
  Array(lib_dir).join(File::PATH_SEPARATOR).split(File::PATH_SEPARATOR).each do |d|
    $LDFLAGS << " -Wl,-rpath,#{File.expand_path(d)}"
  end
end
$CFLAGS << " -std=gnu11 -Wall -Wextra -Wno-unused-parameter -DOPENSSL_SUPPRESS_DEPRECATED"
$CFLAGS << " -Werror" if ENV["HB_WERROR"] == "1"

create_makefile("hashbatch/hashbatch_ext")
