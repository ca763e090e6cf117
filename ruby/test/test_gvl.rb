# frozen_string_literal: true

require_relative "helper"

# The GVL is released while hashbatch hashes or waits, and waits can be
# interrupted. A ticker thread counts while the main thread hashes; the
# longest gap between its ticks shows whether it could run at all.
class TestGVL < Minitest::Test
  include HashbatchTestHelper

  BIG = ("g" * (256 << 20)).freeze # 256 MiB: a few hundred ms to hash
  CONTROL = ("c" * (512 << 20)).freeze

  # While a call holds the GVL, the ticker runs only in the time slice
  # before the call (none: with_ticker passes first) and the one after it
  # (the switch the timer asked for happens as the C method returns): at
  # most 0.1 s of CPU, against about 0.7 s of hashing 512 MiB. While the
  # GVL is released, the ticker gets about as much CPU as the hashing
  # thread.
  def test_control_digest_sha1_holds_the_gvl
    ratios = Array.new(3) { cpu_ratio(with_ticker { Digest::SHA1.digest(CONTROL) }) }
    worst = ratios.max_by(&:first)
    assert_operator worst[0], :<, 0.3, "Digest::SHA1 let another thread run (#{worst[1]})"
  end

  def test_sha1_class_releases_the_gvl
    share, what = best_ticker_share { assert_equal oracle(BIG), Hashbatch::SHA1.digest(BIG) }
    assert_operator share, :>=, 0.5, "the ticker hardly ran while Hashbatch::SHA1 hashed (#{what})"
  end

  def test_sha1_instance_update_releases_the_gvl
    d = nil
    share, what = best_ticker_share do
      d = Hashbatch::SHA1.new
      d << BIG
    end
    assert_equal oracle(BIG), d.digest
    assert_operator share, :>=, 0.5, "the ticker hardly ran during SHA1#update (#{what})"
  end

  def test_sha1_many_releases_the_gvl
    e = Hashbatch::Engine.new(backend: "cpu", cpu_threads: 1) # one hashing thread, as the ticker
    msgs = [BIG] + Array.new(20_000) { |i| "small #{i}" * 100 }
    got = nil
    share, what = best_ticker_share { got = e.sha1_many(msgs) }
    assert_equal oracle(BIG), got[0]
    assert_equal oracle(msgs[-1]), got[-1]
    assert_operator share, :>=, 0.5, "the ticker hardly ran during sha1_many (#{what})"
  ensure
    e&.close
  end

  # A wait of a few seconds on one CPU thread: 4 GiB in 4 MiB messages
  # (a cancel lets the worker finish the message it holds: 2 ms here).
  PIECE = ("L" * (4 << 20)).freeze
  def long_batch
    [PIECE] * 1024
  end

  def assert_prompt(latency, what)
    # The wait polls every 10 ms and cancel waits for at most one 4 MiB
    # message already on a worker; 100 ms is the target, 0.4 s the bound
    # on a loaded 2-core machine (the batch itself takes seconds).
    assert_operator latency, :<, 0.4, "#{what} took #{latency}s to interrupt the wait"
  end

  def test_timeout_interrupts_a_wait_and_the_engine_keeps_working
    e = Hashbatch::Engine.new(backend: "cpu", cpu_threads: 1)
    t0 = monotonic
    assert_raises(Timeout::Error) { Timeout.timeout(0.3) { e.sha1_many(long_batch) } }
    assert_prompt(monotonic - t0 - 0.3, "Timeout.timeout")
    assert_equal [oracle("after")], e.sha1_many(["after"])
    s = e.stats
    assert_operator s[:jobs_cancelled], :>=, 1
    assert_equal 0, s[:queue_jobs]
  ensure
    e&.close
  end

  def test_thread_kill_and_raise_interrupt_a_wait
    e = Hashbatch::Engine.new(backend: "cpu", cpu_threads: 1)
    %i[kill raise].each do |how|
      started = Queue.new
      th = Thread.new do
        Thread.current.report_on_exception = false
        started << true
        e.sha1_many(long_batch)
      end
      started.pop
      sleep 0.3
      t0 = monotonic
      how == :kill ? th.kill : th.raise(RuntimeError, "stop")
      begin
        th.join
      rescue RuntimeError => err
        assert_equal "stop", err.message
      end
      assert_prompt(monotonic - t0, "Thread##{how}")
      assert_equal [oracle(how.to_s)], e.sha1_many([how.to_s])
    end
  ensure
    e&.close
  end

  def test_timeout_interrupts_job_wait_and_value
    e = Hashbatch::Engine.new(backend: "cpu", cpu_threads: 1)
    job = e.submit(long_batch)
    t0 = monotonic
    assert_raises(Timeout::Error) { Timeout.timeout(0.2) { job.value } }
    assert_prompt(monotonic - t0 - 0.2, "Timeout around Job#value")
    refute job.done?
    job.cancel
    assert_raises(Hashbatch::CancelledError) { job.value }
  ensure
    e&.close
  end

  def test_interrupt_of_a_long_sha1_update_undoes_it
    d = Hashbatch::SHA1.new << "kept"
    huge = ("h" * (1 << 30)).freeze # 1 GiB: about a second
    t0 = monotonic
    assert_raises(Timeout::Error) { Timeout.timeout(0.1) { d << huge } }
    assert_prompt(monotonic - t0 - 0.1, "Timeout around SHA1#update")
    assert_equal oracle_hex("kept"), d.hexdigest
  end

  def test_close_while_another_thread_waits
    e = Hashbatch::Engine.new(backend: "cpu", cpu_threads: 1)
    th = Thread.new do
      Thread.current.report_on_exception = false
      e.sha1_many(long_batch)
    end
    sleep 0.2
    e.close
    err = assert_raises(Hashbatch::ClosedError) { th.value }
    assert_match(/closed/, err.message)
  end
end
