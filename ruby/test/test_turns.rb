# frozen_string_literal: true

require_relative "helper"
require "etc"

# Turns (turns.c): at most gvl_slots threads hash mid-sized inputs without
# the GVL; the others wait for a turn. What must hold whatever the timing:
# every digest right, no thread left waiting forever, interrupts of a
# waiting thread raised in that thread only, and a forked child that hashes
# with threads although the parent's threads held turns. And the
# parameters are those measured when the gem loaded (gvl_params.c),
# derived by their rules.
class TestTurns < Minitest::Test
  include HashbatchTestHelper

  MID = 128 << 10 # between gvl_threshold (at most 64 KiB) and the always-released 256 KiB

  def setup
    @slots = Hashbatch::SHA1.gvl_slots
  end

  def teardown
    Hashbatch::SHA1.gvl_slots = @slots
  end

  def strings(count, seed)
    rng = Random.new(seed)
    Array.new(count) { rng.bytes(MID) }
  end

  # Each thread hashes its own strings with hexdigest; returns what each got.
  def hash_in_threads(sets)
    threads = sets.map { |set| Thread.new { set.map { |s| Hashbatch::SHA1.hexdigest(s) } } }
    threads.map { |t| t.join(60) ? t.value : flunk("a hashing thread did not finish in 60 s") }
  end

  # (Whether these threads overlap, and so wait, depends on scheduling:
  # the next test makes one wait on purpose.)
  def test_more_threads_than_turns_all_digests_are_right
    Hashbatch::SHA1.gvl_slots = 1
    sets = Array.new(4) { |i| strings(400, i) }
    got = hash_in_threads(sets)
    sets.each_with_index { |set, i| assert_equal set.map { |s| oracle_hex(s) }, got[i], "thread #{i}" }
  end

  # Thread A stands at the GVL probe while it holds the only turn, then
  # kept from going idle (Hashbatch::Testing.turn_idle_ns), so thread B
  # must wait for a turn; once A's turn may go idle again and A is let go,
  # B takes it. Deterministic: nothing depends on how threads are scheduled.
  def test_a_thread_waits_for_the_turn_another_holds
    Hashbatch::SHA1.gvl_slots = 1
    a_str, b_str = strings(2, 70)
    a = stop_at_probe(:sha1_update) { Thread.new { Hashbatch::SHA1.hexdigest(a_str) } }
    PROBES.turn_idle_ns = 600 * 10**9 # only now: A may have waited for a dead thread's turn to go idle
    waits0 = Hashbatch::SHA1.gvl_stats[:turn_waits]
    b = Thread.new { Hashbatch::SHA1.hexdigest(b_str) }
    sleep 0.001 until Hashbatch::SHA1.gvl_stats[:turn_waits] > waits0 || !b.alive?
    assert b.alive?, "B hashed while A held the only turn"
    assert_equal waits0 + 1, Hashbatch::SHA1.gvl_stats[:turn_waits]
    sleep 0.05 # B looks for a turn every 5 ms meanwhile; however long this is, it must find none
    assert b.alive?, "B took the turn A holds"
    PROBES.turn_idle_ns = nil
    PROBES.release_gvl_probe(:sha1_update)
    assert_equal oracle_hex(a_str), a.value
    assert_equal oracle_hex(b_str), b.value
  ensure
    PROBES.turn_idle_ns = nil
    PROBES.disarm_gvl_probe(:sha1_update)
  end

  def test_as_many_turns_as_threads_nobody_waits
    Hashbatch::SHA1.gvl_slots = 4
    sets = Array.new(3) { |i| strings(200, 10 + i) }
    before = Hashbatch::SHA1.gvl_stats
    got = hash_in_threads(sets)
    sets.each_with_index { |set, i| assert_equal set.map { |s| oracle_hex(s) }, got[i] }
    assert_equal before[:turn_waits], Hashbatch::SHA1.gvl_stats[:turn_waits]
  end

  def test_instance_updates_take_turns_too
    Hashbatch::SHA1.gvl_slots = 1
    sets = Array.new(3) { |i| strings(100, 20 + i) }
    threads = sets.map do |set|
      Thread.new do
        d = Hashbatch::SHA1.new
        set.each { |s| d << s }
        d.hexdigest
      end
    end
    threads.each_with_index do |t, i|
      assert t.join(60), "thread #{i} did not finish"
      assert_equal oracle_hex(sets[i].join), t.value
    end
  end

  # Thread#raise at random moments, waiting for a turn or not: the
  # exception reaches the thread it was meant for, every digest that was
  # returned is right, and nothing stays stuck.
  def test_interrupts_while_threads_take_turns
    Hashbatch::SHA1.gvl_slots = 1
    set = strings(64, 30)
    want = set.map { |s| oracle_hex(s) }
    stop = false
    wrong = Queue.new
    raised = Queue.new
    # Interrupts wait (handle_interrupt) outside the hashing, so one that
    # lands between two rounds is raised in the next, never kills a worker.
    ready = Queue.new
    workers = Array.new(4) do
      Thread.new do
        Thread.handle_interrupt(Interrupt => :never) do
          ready << true
          until stop
            begin
              Thread.handle_interrupt(Interrupt => :immediate) do
                set.each_with_index { |s, i| wrong << i unless Hashbatch::SHA1.hexdigest(s) == want[i] }
              end
            rescue Interrupt
              raised << true
            end
          end
        end
      end
    end
    workers.size.times { ready.pop }
    rng = Random.new(31)
    60.times do
      sleep(rng.rand * 0.01)
      workers.sample(random: rng).raise(Interrupt)
    end
    stop = true
    workers.each_with_index { |t, i| assert t.join(60), "worker #{i} stuck" }
    assert wrong.empty?, "wrong digests for strings #{Array.new(wrong.size) { wrong.pop }.uniq}"
    assert_operator raised.size, :>=, 1
    assert_equal want, set.map { |s| Hashbatch::SHA1.hexdigest(s) }
  end

  def test_timeout_around_calls_that_wait_for_a_turn
    Hashbatch::SHA1.gvl_slots = 1
    set = strings(32, 40)
    want = set.map { |s| oracle_hex(s) }
    timeouts = 0
    threads = Array.new(3) do
      Thread.new do
        done = 0
        while done < 200
          s = set[done % set.size]
          begin
            got = Timeout.timeout(0.0005) { Hashbatch::SHA1.hexdigest(s) }
            raise "wrong digest" unless got == want[done % set.size]

            done += 1
          rescue Timeout::Error
            timeouts += 1
          end
        end
      end
    end
    threads.each_with_index { |t, i| assert t.join(120), "thread #{i} stuck" }
    threads.each(&:value) # re-raises a wrong digest
    assert_equal want, set.map { |s| Hashbatch::SHA1.hexdigest(s) }
  end

  def test_fork_while_threads_hold_turns
    skip "no fork here" unless Process.respond_to?(:fork)
    Hashbatch::SHA1.gvl_slots = 1
    set = strings(32, 50)
    want = set.map { |s| oracle_hex(s) }
    stop = false
    busy = Array.new(2) { Thread.new { set.each { |s| Hashbatch::SHA1.hexdigest(s) } until stop } }
    sleep 0.05
    pid = fork do
      ok = Array.new(3) { Thread.new { set.map { |s| Hashbatch::SHA1.hexdigest(s) } } }
                .all? { |t| t.join(60) && t.value == want }
      exit!(ok ? 0 : 1)
    end
    _, status = Timeout.timeout(120) { Process.wait2(pid) }
    stop = true
    busy.each { |t| assert t.join(60) }
    assert status.success?, "the child's threads got wrong digests or hung (#{status.inspect})"
    assert_equal want, set.map { |s| Hashbatch::SHA1.hexdigest(s) }
  ensure
    stop = true
    if pid && !status
      Process.kill(:KILL, pid)
      Process.wait(pid)
    end
  end

  def test_parameters_are_measured_here_and_derived_by_their_rules
    p = Hashbatch.gvl_parameters
    assert p.frozen?
    assert_equal %i[sha1_ns_per_byte release_ns release_measured wake_ns cpus gvl_threshold
                    handoff_spin_ns turn_slice_ns calibration_ns].sort, p.keys.sort
    assert_operator p[:sha1_ns_per_byte], :>, 0
    assert_operator p[:release_ns], :>, 0
    assert_operator p[:wake_ns], :>, 0
    assert_includes [true, false], p[:release_measured]
    assert_equal Etc.nprocessors, p[:cpus] # both: this process's affinity mask
    bytes = (8 * p[:release_ns].to_f / p[:sha1_ns_per_byte]).floor.clamp(1024, 64 << 10)
    assert_equal (bytes + 63) & ~63, p[:gvl_threshold], "release costs at most 1/8 of the hash"
    assert_equal p[:wake_ns].clamp(2_000, 200_000), p[:handoff_spin_ns], "spin at most a wake's cost"
    assert_equal (1000 * p[:wake_ns]).clamp(5_000_000, 100_000_000), p[:turn_slice_ns]
    assert_equal p[:gvl_threshold], Hashbatch::SHA1.gvl_threshold, "the measured threshold is in force"
    assert_equal [p[:cpus], 1024].min, @slots, "one turn per CPU"
  end

  def test_gvl_slots_bounds
    assert_raises(ArgumentError) { Hashbatch::SHA1.gvl_slots = -1 }
    assert_raises(ArgumentError) { Hashbatch::SHA1.gvl_slots = 1025 }
    Hashbatch::SHA1.gvl_slots = 0 # no turns: hashed holding the GVL
    set = strings(8, 60)
    assert_equal set.map { |s| oracle_hex(s) }, hash_in_threads([set, set]).first
    stats = Hashbatch::SHA1.gvl_stats
    assert_equal 0, stats[:turns]
    assert_operator stats[:turn_waits], :>=, 0
  end
end
