# frozen_string_literal: true

require "openssl"
require_relative "digest_state"

# hashbatch/digest_openssl_hooks.rb - what the drop-in prepends to
# OpenSSL::Digest (hashbatch/digest_dropin.rb installs it), so that
# OpenSSL::Digest::SHA1.new, OpenSSL::Digest.new("SHA1") (or "sha1", the
# OID, another SHA-1 digest object) and their subclasses hash through a
# DigestDropin::State.
#
# Owns: OpenSSL::Digest's initialize (which gives an object a state when
# its algorithm is SHA-1, after OpenSSL chose it), and the hashing hooks
# Digest::Instance calls (update, <<, finish, reset, initialize_copy). The
# object's OpenSSL context is still set up as before (name, digest_length,
# block_length, and OpenSSL functions given the object, such as
# PKey#sign, read the algorithm from it) but holds no data. Objects of
# other algorithms, and SHA-1 objects made before the drop-in was
# installed, have no state: every hook passes them to OpenSSL (super).
# Must not: change a result, hold a lock while calling back into Ruby code,
# or give a state to an object whose algorithm is not SHA-1.
module Hashbatch
  module DigestDropin
    module OpenSSLDigestHooks
      # OpenSSL::Digest's own methods, called where the stock initialize and
      # finish call them directly (not through dispatch).
      ORIGINAL_NAME = ::OpenSSL::Digest.instance_method(:name)
      ORIGINAL_UPDATE = ::OpenSSL::Digest.instance_method(:update)
      ORIGINAL_FINISH = ::OpenSSL::Digest.instance_method(:finish)
      ORIGINAL_RESET = ::OpenSSL::Digest.instance_method(:reset)
      SHA1_NAME = "SHA1"
      # Where digest/hexdigest with no argument skip the clone: classes
      # whose finish is the one here.
      SHORTCUT_CLASSES = [::OpenSSL::Digest::SHA1, ::OpenSSL::Digest].freeze

      # initialize(name, data = nil): OpenSSL checks the name and sets the
      # context up; data (OpenSSL's initialize hashes it itself, without
      # dispatch) is hashed in the state.
      def initialize(*args)
        data = args[1] if args.size == 2
        data.nil? ? super : super(args[0])
        state = adopt_state
        return if data.nil?

        if state
          state.hold { state.update(data) }
        else
          ORIGINAL_UPDATE.bind_call(self, data)
        end
      end

      def initialize_copy(other)
        super
        source = other.instance_variable_get(:@hashbatch_state)
        if source
          @hashbatch_state = source.hold { source.dup }
        elsif @hashbatch_state
          @hashbatch_state = nil
        end
      end

      def update(str)
        state = @hashbatch_state or return super
        state.hold { state.update(str) }
        self
      end

      # << is update (in the stock classes too: an alias of the same C method).
      def <<(str)
        update(str)
      end

      def reset
        state = @hashbatch_state or return super
        state.hold { state.reset }
        self
      end

      # digest and hexdigest with no argument, on the class itself (not a
      # subclass, whose finish may differ): the state's digest, without the
      # clone Digest::Instance makes to finish on. With an argument, or on a
      # subclass, Digest::Instance's (which reaches the hooks here).
      def digest(*args)
        state = @hashbatch_state
        return super unless state && args.empty? && SHORTCUT_CLASSES.include?(self.class)

        state.hold { state.digest_bytes }
      end

      def hexdigest(*args)
        state = @hashbatch_state
        return super unless state && args.empty? && SHORTCUT_CLASSES.include?(self.class)

        state.hold { state.digest_bytes }.unpack1("H*")
      end

      private

      # adopt_state: after OpenSSL's initialize, a fresh (or emptied) state
      # if the algorithm is SHA-1, else none; returns it.
      def adopt_state
        state = @hashbatch_state
        unless ORIGINAL_NAME.bind_call(self) == SHA1_NAME
          @hashbatch_state = nil if state
          return nil
        end
        return @hashbatch_state = State.new unless state

        state.hold { state.reset }
        state
      end

      # finish(str = nil): the digest (the state is kept); into str when
      # given, which OpenSSL checks and sizes as before.
      def finish(*args)
        state = @hashbatch_state
        return super if state.nil? || args.size > 1

        md = state.hold { state.digest_bytes }
        return md if args.empty?

        out = ORIGINAL_FINISH.bind_call(self, args[0])
        ORIGINAL_RESET.bind_call(self)
        encoding = out.encoding
        out.replace(md).force_encoding(encoding)
      end
    end
  end
end
