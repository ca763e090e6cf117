# frozen_string_literal: true

# hashbatch/digest_state.rb - the SHA-1 state the drop-in
# (hashbatch/digest_dropin.rb) keeps for each Digest::SHA1 or
# OpenSSL::Digest SHA-1 object, in that object's @hashbatch_state.
#
# Owns: Hashbatch::DigestDropin::State, a Hashbatch::SHA1 (so hashing
# releases the GVL where Hashbatch::SHA1 does) with a lock, so that threads
# sharing one digest object take turns on it as they did when the GVL
# serialised their updates (a Hashbatch::SHA1 busy in one thread raises in
# another).
# Must not: hash anything itself, or know which class it serves.
module Hashbatch
  module DigestDropin
    class State < Hashbatch::SHA1
      def initialize
        super
        @lock = Mutex.new
      end

      # A copy has its own lock.
      def initialize_copy(other)
        super
        @lock = Mutex.new
      end

      # hold { ... }: runs the block with this state to the calling thread
      # alone; returns what the block returns. Uncontended, it takes the
      # lock with try_lock, which works in a trap handler as the stock
      # digests do.
      def hold
        locked = @lock.try_lock || @lock.lock
        yield
      ensure
        @lock.unlock if locked
      end

      # The 20-byte digest of what was absorbed; the state is kept.
      def digest_bytes
        finish
      end
    end
  end
end
