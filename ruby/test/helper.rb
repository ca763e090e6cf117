# frozen_string_literal: true

# Shared by the minitest files: loads the gem and Digest::SHA1 (the oracle,
# which agrees with OpenSSL), and a few helpers.
require "minitest/autorun"
require "digest"
require "timeout"
require "hashbatch"

module HashbatchTestHelper
  def oracle_hex(str)
    Digest::SHA1.hexdigest(str)
  end

  def oracle(str)
    Digest::SHA1.digest(str)
  end

  def monotonic
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # Messages of every kind the suite checks: empty, small, around the
  # 64-byte block and its 55/56-byte padding edge, large, random binary,
  # and non-ASCII text in a few encodings.
  def varied_messages(rng = Random.new(11_625))
    msgs = ["", "a", "abc", "\x00".b, "\xff\xfe".b]
    [55, 56, 63, 64, 65, 119, 120, 127, 128, 129, 4095, 4096, 4097].each { |n| msgs << rng.bytes(n) }
    msgs << "héllo wörld ✓ 日本語"
    msgs << "шифр".encode("UTF-16LE")
    msgs << "\xe3\x81\x82".dup.force_encoding("EUC-JP")
    msgs << ("x" * (1 << 20))                 # large (1 MiB)
    msgs << rng.bytes(3 << 20)                # large random (3 MiB)
    20.times { msgs << rng.bytes(rng.rand(0..10_000)) }
    msgs
  end

  # with_ticker up to `tries` times, stopping at the first try whose
  # longest stall is under half the call: a call that holds the GVL can
  # never get there, while a loaded machine can starve the ticker in one
  # try. Returns the try with the smallest stall ratio.
  def best_ticker_try(tries = 3, &block)
    best = nil
    tries.times do
      r = with_ticker(&block)
      best = r if best.nil? || r[1] / r[2] < best[1] / best[2]
      break if r[1] < 0.5 * r[2] && r[0] > 1000
    end
    best
  end

  # Runs a thread that counts while the block runs on this thread, and
  # returns [count, longest gap in seconds between two ticks (the last one
  # open until the block ended), seconds the block took].
  def with_ticker
    state = { ticks: 0, max_gap: 0.0, last: monotonic, run: true }
    ticker = Thread.new do
      while state[:run]
        now = monotonic
        gap = now - state[:last]
        state[:max_gap] = gap if gap > state[:max_gap]
        state[:last] = now
        state[:ticks] += 1
      end
    end
    sleep 0.05 until state[:ticks] > 1000
    Thread.pass # start the block with a fresh time slice: no switch before it
    state[:ticks] = 0
    state[:max_gap] = 0.0
    state[:last] = t0 = monotonic
    yield
    t1 = monotonic
    gap = [state[:max_gap], t1 - state[:last]].max
    ticks = state[:ticks]
    [ticks, gap, t1 - t0]
  ensure
    state[:run] = false
    ticker&.join
  end
end
