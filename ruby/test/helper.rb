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

  # Runs a thread that counts while the block runs on this thread. Returns
  # a Hash: :ticks, :took (seconds), :ticker_cpu (CPU seconds the ticker
  # used meanwhile) and :other_cpu (CPU seconds every other thread of the
  # process used: the hashing). The ratio of the two CPU times shows
  # whether the ticker could run while the hash ran: threads of one
  # process get equal shares from the kernel however loaded the machine
  # is, unless one of them waits for the GVL. (Wall-clock gaps would
  # not: a loaded machine starves the ticker for whole time slices.)
  def with_ticker
    state = { ticks: 0, cpu: 0.0, run: true }
    ticker = Thread.new do
      while state[:run]
        state[:cpu] = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
        state[:ticks] += 1
      end
    end
    sleep 0.05 until state[:ticks] > 1000
    Thread.pass # start the block with a fresh time slice: no switch before it
    ticks0 = state[:ticks]
    cpu0 = state[:cpu]
    proc0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    t0 = monotonic
    yield
    took = monotonic - t0
    proc1 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    ticker_cpu = state[:cpu] - cpu0
    { ticks: state[:ticks] - ticks0, took: took, ticker_cpu: ticker_cpu,
      other_cpu: proc1 - proc0 - ticker_cpu }
  ensure
    state[:run] = false
    ticker&.join
  end

  # ticker_cpu / other_cpu of r, and a description for messages.
  def cpu_ratio(r)
    [r[:ticker_cpu] / [r[:other_cpu], 1e-6].max,
     format("ticker %.3f CPU s, hashing %.3f CPU s, %.3f s, %d ticks",
            r[:ticker_cpu], r[:other_cpu], r[:took], r[:ticks])]
  end

  # Best (highest ticker share) of up to `tries` runs of with_ticker,
  # stopping at the first over `enough`: noise only lowers the share.
  def best_ticker_share(tries = 3, enough = 0.5, &block)
    best = nil
    tries.times do
      ratio = cpu_ratio(with_ticker(&block))
      best = ratio if best.nil? || ratio[0] > best[0]
      break if ratio[0] >= enough
    end
    best
  end
end
