# frozen_string_literal: true

require_relative "helper"
require "openssl"

# Job#wait, Job#value and the synchronous batches cooperate with
# Fiber.scheduler: in a non-blocking fiber they wait on the job's
# descriptor through the scheduler (batch_wait.c), so the thread's other
# fibers run meanwhile. The evidence needs no clock: a job of seconds of
# work is waited for in one fiber and cancelled by another, which can only
# run if the wait gave the thread up; had the wait blocked the thread, the
# job would finish first and the order be the other way round.
# Digests are checked against OpenSSL.
class TestFiber < Minitest::Test
  include HashbatchTestHelper

  # The smallest scheduler that does what these tests need: io_wait
  # (readable only) with IO.select, kernel_sleep, block/unblock (for
  # Mutex, Queue and Thread#join in a fiber), and a run loop that close
  # runs. It counts the io_waits it served.
  class TinyScheduler
    attr_reader :io_waits

    def initialize
      @readable = {} # io => fiber
      @timers = {}   # fiber => when to resume it (CLOCK_MONOTONIC)
      @blocked = 0
      @ready = Thread::Queue.new # fibers unblocked, maybe from other threads
      @wake_r, @wake_w = IO.pipe
      @io_waits = 0
    end

    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    def fiber(&block)
      Fiber.new(blocking: false, &block).tap(&:resume)
    end

    def io_wait(io, events, timeout)
      raise ArgumentError, "TinyScheduler waits only for IO::READABLE" unless events == IO::READABLE

      @io_waits += 1
      @readable[io] = Fiber.current
      @timers[Fiber.current] = now + timeout if timeout
      Fiber.yield == :timeout ? false : IO::READABLE
    ensure
      @readable.delete(io)
      @timers.delete(Fiber.current)
    end

    def kernel_sleep(duration = nil)
      @timers[Fiber.current] = now + duration if duration
      @blocked += 1 unless duration
      Fiber.yield
      true
    ensure
      @blocked -= 1 unless duration
      @timers.delete(Fiber.current)
    end

    def block(_blocker, timeout = nil)
      @timers[Fiber.current] = now + timeout if timeout
      @blocked += 1
      Fiber.yield != :timeout
    ensure
      @blocked -= 1
      @timers.delete(Fiber.current)
    end

    def unblock(_blocker, fiber)
      @ready << fiber
      @wake_w.write_nonblock(".", exception: false)
    end

    def close
      run
    ensure
      @wake_r.close
      @wake_w.close
    end

    def run
      while @readable.any? || @timers.any? || @blocked.positive? || !@ready.empty?
        readable, = IO.select([@wake_r, *@readable.keys], nil, nil, select_timeout)
        (readable || []).each do |io|
          next @wake_r.read_nonblock(1024, exception: false) if io == @wake_r

          fiber = @readable[io]
          fiber&.resume(:readable)
        end
        due = @timers.select { |_, t| t <= now }.keys
        due.each { |f| f.resume(:timeout) }
        @ready.pop.resume until @ready.empty?
      end
    end

    private

    def select_timeout
      return 0 unless @ready.empty?
      return nil if @timers.empty?

      [@timers.values.min - now, 0].max
    end
  end

  PIECE = ("F" * (4 << 20)).freeze
  # Seconds of SHA-1 on one CPU thread (4 GiB), so it is unfinished when
  # waited for; the cancel lets the worker finish the one message it holds.
  LONG = ([PIECE] * 1024).freeze

  def setup
    skip "the gem waits through Fiber.scheduler from Ruby 3.1 on (this is #{RUBY_VERSION})" if RUBY_VERSION < "3.1"
    @engine = Hashbatch::Engine.new(backend: "cpu", cpu_threads: 1)
  end

  def teardown
    @engine&.close
  end

  def openssl_hex(str) = OpenSSL::Digest::SHA1.hexdigest(str)

  def openssl(str) = OpenSSL::Digest::SHA1.digest(str)

  # Runs the block in a new thread with a TinyScheduler set; the block
  # schedules fibers; the scheduler's loop runs them to their end when the
  # block returns. Returns the scheduler.
  def with_tiny_scheduler
    scheduler = TinyScheduler.new
    th = Thread.new do
      Fiber.set_scheduler(scheduler)
      yield
    ensure
      Fiber.set_scheduler(nil) # runs the loop (close)
    end
    assert th.join(120), "the scheduler's thread did not finish in 120 s"
    th.value
    scheduler
  end

  def test_a_waiting_fiber_lets_another_cancel_its_job
    job = @engine.submit(LONG)
    order = []
    scheduler = with_tiny_scheduler do
      Fiber.schedule do
        order << :waiting
        job.wait
        order << :wait_returned
      end
      Fiber.schedule do
        order << :other_fiber_ran
        job.cancel
      end
    end
    assert_equal %i[waiting other_fiber_ran wait_returned], order
    assert_operator scheduler.io_waits, :>=, 1, "Job#wait did not go through the scheduler"
    assert_raises(Hashbatch::CancelledError) { job.value }
  end

  def test_value_in_a_fiber_gives_right_digests_while_another_fiber_runs
    # 256 MiB: tens of milliseconds on any core count, so the job is still
    # running when the fiber waits for it (8 pieces, 32 MiB, could finish
    # before the fiber ran once, once long messages spread over every core)
    msgs = varied_messages + [PIECE] * 64
    job = @engine.submit(msgs)
    got = nil
    ticks = 0
    with_tiny_scheduler do
      Fiber.schedule { got = job.value }
      Fiber.schedule do
        until got
          ticks += 1
          sleep 0.001
        end
      end
    end
    assert_equal msgs.map { |m| openssl(m) }, got
    assert_operator ticks, :>=, 1
  end

  def test_wait_with_a_timeout_in_a_fiber
    job = @engine.submit(LONG)
    outcome = nil
    scheduler = with_tiny_scheduler { Fiber.schedule { outcome = job.wait(0.02) } }
    assert_equal false, outcome, "a 4 GiB job finished within 20 ms?"
    assert_operator scheduler.io_waits, :>=, 1
  ensure
    job&.cancel
  end

  def test_synchronous_batches_in_a_fiber
    msgs = varied_messages
    hex = bin = sync_default = nil
    scheduler = with_tiny_scheduler do
      Fiber.schedule do
        hex = @engine.hexdigest_many(msgs + [PIECE] * 8)
        bin = @engine.sha1_many(msgs)
        sync_default = Hashbatch.hexdigest_many(msgs)
      end
    end
    assert_equal (msgs + [PIECE] * 8).map { |m| openssl_hex(m) }, hex
    assert_equal msgs.map { |m| openssl(m) }, bin
    assert_equal msgs.map { |m| openssl_hex(m) }, sync_default
    assert_operator scheduler.io_waits, :>=, 1, "no batch wait went through the scheduler"
  end

  # An interrupt raised in the waiting fiber (the scheduler's
  # Fiber#raise, as a reactor's task.stop does) abandons the wait; the job
  # keeps running until cancelled, like a Job abandoned by a Timeout.
  def test_an_exception_raised_into_the_waiting_fiber
    job = @engine.submit(LONG)
    err = nil
    with_tiny_scheduler do
      waiter = Fiber.schedule do
        job.wait
      rescue RuntimeError => e
        err = e
      end
      Fiber.schedule { waiter.raise(RuntimeError, "stop waiting") }
    end
    assert_equal "stop waiting", err&.message
    refute job.done?, "the job was abandoned, not finished"
    job.cancel
    assert_raises(Hashbatch::CancelledError) { job.value }
  end

  def test_with_the_async_gem
    begin
      require "async"
    rescue LoadError
      skip "the async gem is not installed (Debian: ruby-async): not tested with it"
    end
    job = @engine.submit(LONG)
    small = @engine.submit(varied_messages)
    order = []
    got = nil
    Async do |task|
      task.async do
        order << :waiting
        job.wait
        order << :wait_returned
      end
      task.async do
        order << :other_task_ran
        job.cancel # first: small waits behind job on the engine's one thread
        got = small.value
      end
    end.wait
    assert_equal %i[waiting other_task_ran wait_returned], order
    assert_equal varied_messages.map { |m| openssl(m) }, got
    assert_raises(Hashbatch::CancelledError) { job.value }
  end
end
