# frozen_string_literal: true

require_relative "helper"

# Engine.new(priority: :idle): the engine's own threads run at SCHED_IDLE
# (hb_config.idle_priority), so the application's threads get the cores
# first; Ruby's threads keep their priority. The evidence is each thread's
# scheduling policy in /proc (field 41 of /proc/self/task/TID/stat), never
# a time or a CPU share.
class TestPriority < Minitest::Test
  include HashbatchTestHelper

  SCHED_IDLE = 5
  POOL = 3

  def policies
    Dir.children("/proc/self/task").filter_map do |tid|
      stat = File.read("/proc/self/task/#{tid}/stat")
    rescue Errno::ENOENT
      nil # the thread ended meanwhile
    else
      Integer(stat[stat.rindex(")") + 2..].split(" ")[38])
    end
  end

  def idle_threads
    policies.count(SCHED_IDLE)
  end

  # A worker lowers its own priority when it starts, which may be after
  # Engine.new returns: wait for it (60 s at most, then fail).
  def idle_threads_once_started(want)
    give_up = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60
    n = idle_threads
    while n < want && Process.clock_gettime(Process::CLOCK_MONOTONIC) < give_up
      sleep 0.001
      n = idle_threads
    end
    n
  end

  def setup
    skip "no /proc/self/task here" unless File.directory?("/proc/self/task")
  end

  def test_idle_engine_runs_its_threads_at_sched_idle
    assert_equal 0, idle_threads
    engine = Hashbatch::Engine.new(backend: "cpu", cpu_threads: POOL, priority: :idle)
    msgs = varied_messages
    assert_equal msgs.map { |m| oracle(m) }, engine.sha1_many(msgs)
    assert_operator idle_threads_once_started(POOL), :>=, POOL
    engine.close
    assert_equal 0, idle_threads, "threads left at SCHED_IDLE after close"
  ensure
    engine&.close
  end

  def test_normal_is_the_default
    engine = Hashbatch::Engine.new(backend: "cpu", cpu_threads: POOL)
    assert_equal [oracle("n")], engine.sha1_many(["n"])
    assert_equal 0, idle_threads
    engine.close
    engine = Hashbatch::Engine.new(backend: "cpu", cpu_threads: POOL, priority: "normal")
    assert_equal 0, idle_threads
  ensure
    engine&.close
  end

  def test_unknown_priority_is_an_argument_error
    e = assert_raises(ArgumentError) { Hashbatch::Engine.new(backend: "cpu", priority: :low) }
    assert_match(/priority "low"/, e.message)
    assert_raises(TypeError) { Hashbatch::Engine.new(backend: "cpu", priority: 1) }
  end
end
