# frozen_string_literal: true

require_relative "helper"

# Readers of one String share it (pin.c; Ruby Feature #11625's program pops
# one String in every thread): no copy is made, a writer is refused while
# any reader is inside and allowed once the last one has left, and fork and
# GC.compact in the middle change none of that. A reader is held inside
# by the GVL probes (testing.c), never by timing; "no copy" is counted
# twice: by the objects Ruby allocated (GC.stat) and by pin.c's own count.
class TestSharedString < Minitest::Test
  include HashbatchTestHelper

  CALLS = 50
  BIG = 4 << 20 # always hashed without the GVL, so the sha1_update probe stops it

  def fresh(size = BIG, byte = "s")
    byte * size # not frozen
  end

  def copies
    PROBES.shared_readers[2]
  end

  # [strings held by readers now, readers inside them]
  def held
    PROBES.shared_readers.first(2)
  end

  def writable?(s)
    s.setbyte(0, s.getbyte(0))
    true
  rescue RuntimeError => e
    raise unless e.message.include?("locked")

    false
  end

  # Objects Ruby allocates while the block runs (this thread is the only
  # one running Ruby meanwhile: the others are stopped at a probe).
  def allocations
    before = GC.stat(:total_allocated_objects)
    yield
    GC.stat(:total_allocated_objects) - before
  end

  # A thread hashing s, stopped at the sha1_update probe with s held.
  def reader_inside(s)
    stop_at_probe(:sha1_update) { Thread.new { Hashbatch::SHA1.digest(s) } }
  end

  def let_go(thread)
    PROBES.release_gvl_probe(:sha1_update)
    thread.value
  ensure
    PROBES.disarm_gvl_probe(:sha1_update)
  end

  def test_a_second_reader_makes_no_copy_and_the_last_one_out_unlocks
    s = fresh
    want = oracle(s)
    other = fresh(BIG, "o")
    Hashbatch::SHA1.digest(other) # warm: the first call may allocate
    inside = reader_inside(s)
    begin
      assert_equal [1, 1], held
      refute writable?(s), "a writer got in while a reader was inside"
      copies_before = copies
      got = []
      free_calls = allocations { CALLS.times { Hashbatch::SHA1.digest(other) } }
      shared_calls = allocations { CALLS.times { got << Hashbatch::SHA1.digest(s) } }
      assert_equal [want], got.uniq
      # A copy is one more object a call; a few objects either way are
      # Ruby's own (method caches, the array above growing).
      assert_operator shared_calls - free_calls, :<, CALLS / 5,
                      "#{CALLS} hashes of a string another thread is reading allocated " \
                      "#{shared_calls} objects, of a free one #{free_calls} (a copy each?)"
      assert_equal copies_before, copies, "pin.c counted a private copy"
      refute writable?(s), "the second reader unlocked the first one's string"
    ensure
      assert_equal want, let_go(inside)
    end
    assert_equal [0, 0], held
    assert writable?(s), "the string stayed locked after the last reader left"
    s << "free"
  end

  def test_a_batch_joins_readers_and_the_string_is_free_after_both
    s = fresh
    want = oracle(s)
    inside = reader_inside(s)
    batch = nil
    begin
      batch = stop_at_probe(:batch_wait) { Thread.new { Hashbatch.sha1_many([s, "b"]) } }
      assert_equal [1, 2], held, "the batch did not join the reader's hold"
      assert_equal want, let_go(inside)
      inside = nil
      refute writable?(s), "a writer got in while the batch was still reading"
      PROBES.release_gvl_probe(:batch_wait)
      assert_equal [want, oracle("b")], batch.value
    ensure
      let_go(inside) if inside
      PROBES.disarm_gvl_probe(:batch_wait)
      batch&.join
    end
    assert_equal [0, 0], held
    assert writable?(s)
  end

  # One String many times in a batch, and across the pieces of a big one
  # (sync.c splits from 32,768 strings): held once, shared, never copied.
  def test_one_string_repeated_in_a_batch_is_not_copied
    s = fresh(256 << 10)
    want = oracle(s)
    [3, 40_001].each do |times|
      before = copies
      got = nil
      objects = allocations { got = Hashbatch.sha1_many([s] * times) }
      assert_equal times, got.size
      assert_equal [want], got.uniq
      assert_equal before, copies, "#{times} places of one String made copies"
      # one object a digest (and a few); a copy of each place is as many more
      assert_operator objects, :<, times + times / 2 + 10
      assert_equal [0, 0], held
      assert writable?(s), "still locked after a batch of #{times}"
    end
  end

  # Many threads, one String (and one substring of a shared buffer), at
  # once: every digest right, no copy, and the strings free afterwards.
  def test_many_threads_hash_one_string_and_one_shared_substring
    one = fresh(4096, "x") # Feature #11625's store
    buffer = Random.new(11_625).bytes(1 << 20)
    buffer = +buffer
    sub = buffer.byteslice(8192, 65_536) # shares buffer's bytes
    rounds = 300
    copies_before = copies
    results = Array.new(8) do |i|
      Thread.new do
        s = i.even? ? one : sub
        Array.new(rounds) { Hashbatch::SHA1.hexdigest(s) }.uniq
      end
    end.map(&:value)
    assert_equal [[oracle_hex(one)], [oracle_hex(sub)]] * 4, results
    assert_equal copies_before, copies, "a reader copied a shared string"
    assert_equal [0, 0], held
    one << "free"
    sub << "free"
    buffer << "free"
  end

  # A lock that another C extension holds is not pin.c's to share or undo.
  def test_a_string_locked_by_someone_else_is_copied_and_left_locked
    s = fresh(8192)
    want = oracle(s)
    PROBES.lock_string(s)
    before = copies
    assert_equal want, Hashbatch::SHA1.digest(s)
    assert_equal [want], Hashbatch.sha1_many([s])
    assert_equal before + 2, copies, "a string locked by someone else was read in place"
    refute writable?(s), "hashing unlocked a lock it did not take"
    assert_equal [0, 0], held
    PROBES.unlock_string(s) # raises if hashbatch had unlocked it
    assert writable?(s)
  end

  # The parent's reader never leaves in the child: the child unlocks it.
  def test_fork_while_a_reader_is_inside
    skip "no fork here" unless Process.respond_to?(:fork)
    s = fresh
    want = oracle(s)
    inside = reader_inside(s)
    rd, wr = IO.pipe
    pid = fork do
      rd.close
      report = []
      report << (writable?(s) ? "child may write" : "child locked out")
      report << (Hashbatch::SHA1.digest(s) == want ? "digest ok" : "digest WRONG")
      report << held.inspect
      wr.write(report.join(","))
      wr.close
      exit!(0)
    end
    wr.close
    report = rd.read
    _, status = Timeout.timeout(120) { Process.wait2(pid) }
    assert status.success?, "child exited with #{status.inspect}"
    assert_equal "child may write,digest ok,[0, 0]", report
    refute writable?(s), "the parent's reader is still inside"
    assert_equal want, let_go(inside)
    inside = nil
    assert writable?(s)
  ensure
    let_go(inside) if inside
    if pid && !status
      Process.kill(:KILL, pid)
      Process.wait(pid)
    end
  end

  def test_gc_compact_while_readers_are_inside
    skip "GC.compact not supported here" unless GC.respond_to?(:compact)
    s = fresh
    want = oracle(s)
    inside = reader_inside(s)
    batch = nil
    begin
      batch = stop_at_probe(:batch_wait) { Thread.new { Hashbatch.sha1_many([s] * 3) } }
      junk = Array.new(50_000) { |i| "junk#{i}" }
      junk = nil
      GC.compact
      GC.compact
      assert_nil junk
      assert_equal [1, 4], held, "the batch's three places did not each join"
      assert_equal want, let_go(inside)
      inside = nil
      PROBES.release_gvl_probe(:batch_wait)
      assert_equal [want] * 3, batch.value
    ensure
      let_go(inside) if inside
      PROBES.disarm_gvl_probe(:batch_wait)
      batch&.join
    end
    assert_equal [0, 0], held
    assert writable?(s)
  end
end
