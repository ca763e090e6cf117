# frozen_string_literal: true

# hashbatch/digest - the opt-in drop-in: `require "hashbatch/digest"` makes
# Digest::SHA1 and OpenSSL::Digest::SHA1 hash through Hashbatch::SHA1, which
# releases the GVL where that pays, with the same results (see
# hashbatch/digest_dropin.rb for what it does and the one result it fixes).
# Must not: do anything but load the gem and install the drop-in.
require "hashbatch"
Hashbatch.replace_digest!
