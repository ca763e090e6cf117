# frozen_string_literal: true

require_relative "helper"

# The GVL is released while hashbatch hashes or waits, and waits can be
# interrupted. A ticker thread counts while the main thread hashes; the
# longest gap between its ticks shows whether it could run at all.
class TestGVL < Minitest::Test
  include HashbatchTestHelper

  BIG = ("g" * (256 << 20)).freeze # 256 MiB: a few hundred ms to hash

  def test_control_digest_sha1_holds_the_gvl
    # The ticker stands still for (nearly) as long as the call takes. The
    # call's length is the shorter of its time alone and its time with the
    # ticker (which also holds the ticker's time slice right after the
    # call: the switch the timer asked for happens as the C method
    # returns); noise only lengthens stalls, so the best of 3 tries counts.
    ratios = Array.new(3) do
      t0 = monotonic
      Digest::SHA1.digest(BIG)
      solo = monotonic - t0
      ticks, gap, took = with_ticker { Digest::SHA1.digest(BIG) }
      [gap / [solo, took].min, "longest stall #{gap}s, call alone #{solo}s, with ticker #{took}s, #{ticks} ticks"]
    end
    best = ratios.max_by(&:first)
    assert_operator best[0], :>=, 0.7, "Digest::SHA1 let another thread run (#{best[1]})"
  end

  def test_sha1_class_releases_the_gvl
    ticks, gap, took = best_ticker_try { assert_equal oracle(BIG), Hashbatch::SHA1.digest(BIG) }
    assert_operator ticks, :>, 1000, "the ticker did not advance while Hashbatch::SHA1 hashed"
    assert_operator gap, :<, 0.5 * took, "the ticker stalled #{gap}s of #{took}s"
  end

  def test_sha1_instance_update_releases_the_gvl
    d = nil
    ticks, gap, took = best_ticker_try do
      d = Hashbatch::SHA1.new
      d << BIG
    end
    assert_equal oracle(BIG), d.digest
    assert_operator ticks, :>, 1000
    assert_operator gap, :<, 0.5 * took, "the ticker stalled #{gap}s of #{took}s"
  end

  def test_sha1_many_releases_the_gvl
    msgs = [BIG] + Array.new(20_000) { |i| "small #{i}" * 100 }
    want = nil
    ticks, gap, took = best_ticker_try { want = Hashbatch.sha1_many(msgs) }
    assert_equal oracle(BIG), want[0]
    assert_equal oracle(msgs[-1]), want[-1]
    assert_operator ticks, :>, 1000, "the ticker did not advance during sha1_many"
    assert_operator gap, :<, 0.5 * took, "the ticker stalled #{gap}s of #{took}s"
  end

  # A wait of a few seconds on one CPU thread, for the interrupt tests.
  def long_batch
    [BIG] * 16 # 4 GiB
  end

  def assert_prompt(latency, what)
    # The wait polls at 10 ms and cancel waits for at most one 256 MiB
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
