# extconf.rb - builds the issue-5 probe (probe.c) for bench/ruby/run.sh.
require "mkmf"
abort "libcrypto not found" unless have_library("crypto", "SHA1_Init", "openssl/sha.h")
$CFLAGS << " -std=gnu11 -Wall -DOPENSSL_SUPPRESS_DEPRECATED"
create_makefile("hashbatch_probe")
