# frozen_string_literal: true

require_relative "digest_state"

# hashbatch/digest_sha1_hooks.rb - what the drop-in prepends to
# Digest::SHA1 (hashbatch/digest_dropin.rb installs it).
#
# Owns: Digest::SHA1's hashing hooks (the methods Digest::Base defines in
# C and Digest::Instance calls: update, <<, finish, reset,
# initialize_copy) and initialize, which gives each new object a
# DigestDropin::State; digest, hexdigest, digest!, base64digest, file, ==,
# to_s, inspect, length and the rest stay Digest::Instance's and reach
# these hooks. An object without a state ("stock": made before the drop-in
# was installed, made with allocate and never initialized, or fed through
# Digest::Base before its initialize ran) keeps its data in Digest::Base
# and every hook passes it there (super), so it goes on as before; such an
# object is remembered in STOCK_OBJECTS, so a later initialize (which
# leaves Digest::Base's data alone) does not swap it for an empty state.
# Must not: change a result (the one exception is Digest::Base's wrong
# digest of 512 MiB and more in one update on Debian's Ruby 3.1, which a
# state gets right), or hold a lock while calling back into Ruby code.
module Hashbatch
  module DigestDropin
    module DigestSHA1Hooks
      # Objects whose data is in Digest::Base (identity keys, weak).
      STOCK_OBJECTS = ObjectSpace::WeakMap.new

      # Remembers the Digest::SHA1 objects alive now that have no state
      # (made before the drop-in was installed). Called once, by install.
      def self.remember_stock_objects
        ObjectSpace.each_object(::Digest::SHA1) do |obj|
          STOCK_OBJECTS[obj] = true unless obj.instance_variable_get(:@hashbatch_state)
        end
      end

      def initialize(*)
        super
        return if @hashbatch_state || frozen? || STOCK_OBJECTS.key?(self)

        @hashbatch_state = State.new
      end

      def initialize_copy(other)
        super
        source = other.instance_variable_get(:@hashbatch_state)
        if source
          @hashbatch_state = source.hold { source.dup }
        else
          @hashbatch_state = nil if @hashbatch_state
          STOCK_OBJECTS[self] = true
        end
      end

      def update(str)
        state = @hashbatch_state
        unless state
          STOCK_OBJECTS[self] = true
          return super
        end
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
        return super unless state && args.empty? && instance_of?(::Digest::SHA1)

        state.hold { state.digest_bytes }
      end

      def hexdigest(*args)
        state = @hashbatch_state
        return super unless state && args.empty? && instance_of?(::Digest::SHA1)

        state.hold { state.digest_bytes }.unpack1("H*")
      end

      private

      # As Digest::Base's: the digest, and the state starts over.
      def finish
        state = @hashbatch_state or return super
        state.hold do
          md = state.digest_bytes
          state.reset
          md
        end
      end
    end
  end
end
