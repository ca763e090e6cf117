# frozen_string_literal: true

# hashbatch/digest_dropin.rb - the opt-in drop-in for Digest::SHA1 and
# OpenSSL::Digest::SHA1: Hashbatch.replace_digest! (which
# `require "hashbatch/digest"` calls) and Hashbatch.digest_replaced?.
#
# Once installed, code that calls Digest::SHA1 or OpenSSL::Digest::SHA1
# (also OpenSSL::Digest.new("SHA1") and subclasses of all three) hashes
# through Hashbatch::SHA1, which releases the GVL where that pays (its
# gvl_threshold, measured when the extension loads), with the same results,
# errors and encodings as before. The one result that changes: Debian's
# Ruby 3.1 Digest::SHA1 is wrong for 512 MiB and more in one update; with
# the drop-in it is right (OpenSSL's). Installing is done with
# Module#prepend (super reaches the originals; nothing is replaced or
# removed), so it is for the life of the process. Objects made before it
# was installed keep hashing as before (without the GVL release), and so
# do objects of other algorithms.
#
# What differs, and how it cannot change a result: an object hashing
# through the drop-in has an @hashbatch_state instance variable; a big
# update (Hashbatch::SHA1's chunked path) can be interrupted between chunks
# by Thread#raise, Timeout or a signal handler (the update is then undone,
# and the exception raised), where the stock digests finished it first;
# the class-level one-shots of Digest::SHA1 and OpenSSL::Digest::SHA1
# themselves hash directly, not through the instance methods, so a later
# monkey-patch of those instance methods is not seen by them. Calling
# OpenSSL::Digest's private finish and then updating the same object again
# (undefined in OpenSSL) goes on from the data before finish.
#
# Owns: installing the hooks (hashbatch/digest_sha1_hooks.rb,
# digest_openssl_hooks.rb, and the one-shots of ext/hashbatch/dropin_one_shot.c) once, whatever the threads,
# and telling whether they are in.
# Must not: install anything unless asked (loading this file, which
# hashbatch.rb does, installs nothing and loads no openssl).
module Hashbatch
  module DigestDropin
    INSTALL_LOCK = Mutex.new
    @installed = false

    class << self
      # install: prepends the hooks (once); true if this call installed
      # them, false if they were in already.
      def install
        return false if @installed

        require "openssl"
        require_relative "digest_sha1_hooks"
        require_relative "digest_openssl_hooks"
        INSTALL_LOCK.synchronize do
          return false if @installed

          prepend_hooks
          # After the prepend, so no object made meanwhile is missed.
          DigestSHA1Hooks.remember_stock_objects
          @installed = true
        end
      end

      def installed?
        @installed
      end

      private

      def prepend_hooks
        ::Digest::SHA1.prepend(DigestSHA1Hooks)
        ::Digest::SHA1.singleton_class.prepend(DigestSHA1OneShot)
        ::OpenSSL::Digest.prepend(OpenSSLDigestHooks)
        ::OpenSSL::Digest::SHA1.singleton_class.prepend(OpenSSLSHA1OneShot)
      end
    end
  end

  # Makes Digest::SHA1 and OpenSSL::Digest::SHA1 hash through
  # Hashbatch::SHA1 (releasing the GVL where that pays) from now on, for
  # the whole process; see hashbatch/digest_dropin.rb. Safe to call more
  # than once and from several threads; true if this call installed it.
  def self.replace_digest!
    DigestDropin.install
  end

  # Whether Hashbatch.replace_digest! (or require "hashbatch/digest") ran.
  def self.digest_replaced?
    DigestDropin.installed?
  end
end
