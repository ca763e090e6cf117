# frozen_string_literal: true

# Shared by the minitest files: loads the gem and Digest::SHA1 (the oracle,
# which agrees with OpenSSL, reached through Digest::Base's own C methods so
# that the suite's oracle stays independent when the Digest drop-in is
# loaded: ctest ruby_gem_dropin), and a few helpers.
require "minitest/autorun"
require "digest"
require "timeout"
require "hashbatch"

module HashbatchTestHelper
  STOCK_UPDATE = Digest::Base.instance_method(:update)
  STOCK_FINISH = Digest::Base.instance_method(:finish)

  def oracle_hex(str)
    oracle(str).unpack1("H*")
  end

  def oracle(str)
    d = Digest::SHA1.allocate
    STOCK_UPDATE.bind_call(d, str)
    STOCK_FINISH.bind_call(d)
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

  PROBES = Hashbatch::Testing

  # Runs the block with the GVL probe at site armed (Hashbatch::Testing,
  # testing.c) and a thread that releases it once a thread waits there;
  # returns the probe's outcome: :seen (a Ruby thread ran while a thread
  # stood at site: the GVL was released there), :missed (it was held: the
  # releasing thread could not run for timeout seconds) or :armed (the block
  # never got there). No clock or CPU share is judged.
  def gvl_probe(site, timeout = 30)
    PROBES.arm_gvl_probe(site, timeout)
    releaser = Thread.new do
      sleep 0.001 until PROBES.gvl_probe(site) == :waiting
      PROBES.release_gvl_probe(site)
    end
    yield
    PROBES.gvl_probe(site)
  ensure
    releaser&.kill&.join
    PROBES.disarm_gvl_probe(site)
  end

  # Arms the probe at site without a releaser, runs the block (which should
  # make a thread stop there), and waits until a thread waits at site;
  # returns what the block returned. The thread stays there until released,
  # interrupted or timeout seconds pass; disarm_gvl_probe lets it go.
  # (The 120 s only guards against a hang.)
  def stop_at_probe(site, timeout = 30)
    PROBES.arm_gvl_probe(site, timeout)
    r = yield
    give_up = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 120
    until (state = PROBES.gvl_probe(site)) == :waiting
      flunk "nothing stopped at the #{site} probe (#{state})" unless state == :armed
      flunk "nothing came to the #{site} probe in 120 s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > give_up
      sleep 0.001
    end
    r
  end
end
