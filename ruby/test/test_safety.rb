# frozen_string_literal: true

require_relative "helper"

# Strings hashed without the GVL cannot change or move: a writer gets an
# exception, GC.compact and GC.stress change nothing, two threads may hash
# one string. Fork and Ractors.
class TestSafety < Minitest::Test
  include HashbatchTestHelper

  # Runs the block (hashing s) in a thread, which the GVL probe at site
  # stops while it reads s without the GVL; right then this thread rewrites
  # one byte of s with its own value (a no-op, were it allowed), then lets
  # the hashing go on. Returns [the error the write raised (nil: none),
  # what the thread returned]. No timing: the write always lands while the
  # string is being read.
  def mutate_while(site, s, &block)
    th = stop_at_probe(site) { Thread.new(&block) }
    err = begin
      s.setbyte(0, s.getbyte(0))
      nil
    rescue RuntimeError => e
      e
    end
    PROBES.release_gvl_probe(site)
    [err, th.value]
  ensure
    PROBES.disarm_gvl_probe(site)
  end

  def fresh_big
    "m" * (4 << 20) # not frozen, 4 MiB: past the size always hashed without the GVL
  end

  def test_mutating_a_string_hashed_by_sha1_raises
    s = fresh_big
    want = oracle(s)
    err, got = mutate_while(:sha1_update, s) { Hashbatch::SHA1.digest(s) }
    refute_nil err, "no writer was refused while the string was hashed"
    assert_match(/locked/, err.message)
    assert_equal want, got
    s << "now free" # unlocked afterwards
  end

  def test_mutating_a_string_in_an_update_raises
    s = fresh_big
    d = Hashbatch::SHA1.new
    err, = mutate_while(:sha1_update, s) { d.update(s) }
    refute_nil err
    assert_equal oracle(s), d.digest
    s.clear
  end

  def test_mutating_a_string_in_a_batch_raises
    s = fresh_big
    want = oracle(s)
    err, got = mutate_while(:batch_wait, s) { Hashbatch.sha1_many(["a", s, "b"]) }
    refute_nil err
    assert_match(/locked/, err.message)
    assert_equal [oracle("a"), want, oracle("b")], got
    s.replace("x")
  end

  def test_two_threads_hash_one_string
    s = fresh_big
    want = oracle(s)
    ths = [
      Thread.new { Hashbatch::SHA1.digest(s) },
      Thread.new { Hashbatch::SHA1.digest(s) },
      Thread.new { Hashbatch.sha1_many([s, s]) },
      Thread.new { Hashbatch::SHA1.new.update(s).digest },
    ]
    assert_equal [want, want, [want, want], want], ths.map(&:value)
    s << "!" # the shared lock was released by the last one out
  end

  def test_one_string_twice_in_a_batch
    s = +"twice" * 10_000
    assert_equal [oracle(s)] * 3, Hashbatch.sha1_many([s, s, s])
    s << "ok"
  end

  def test_gc_compact_during_batches
    skip "GC.compact not supported here" unless GC.respond_to?(:compact)
    rng = Random.new(7)
    # short strings are embedded in their objects: compaction would move
    # their bytes if they were not pinned
    msgs = Array.new(20_000) { rng.bytes(rng.rand(0..22)) + +"" }
    want = msgs.map { |m| oracle(m) }
    stop = false
    compactions = 0
    compactor = Thread.new do
      until stop
        GC.compact
        compactions += 1
      end
    end
    # batches until the compactor has compacted a few times meanwhile (it
    # runs while the batches are waited for without the GVL), at least 10
    rounds = 0
    until rounds >= 10 && compactions >= 3
      flunk "only #{compactions} compactions in 1000 batches" if rounds >= 1000
      assert_equal want, Hashbatch.sha1_many(msgs)
      rounds += 1
    end
    e = Hashbatch::Engine.new(backend: "cpu")
    jobs = Array.new(5) { e.submit(msgs) }
    jobs.each { |j| assert_equal want, j.value }
    stop = true
    compactor.join
  ensure
    stop = true
    e&.close
  end

  # Ruby 3.1's GC.compact protects heap pages while it moves objects; a
  # string embedded in its object lives on such a page even when pinned.
  # Once a Ractor has existed, an engine thread (not a Ruby thread) reading
  # there crashed the process (Segmentation fault at 0x30, in Ruby's own
  # fault handler). Batches copy embedded strings' bytes now. Run in a
  # child process: a fresh heap, fragmented on purpose, a Ractor first.
  COMPACTION_CHILD = <<~'RUBY'
    require "hashbatch"; require "digest"
    Warning[:experimental] = false
    Ractor.new { 1 }.take
    rng = Random.new(7)
    junk = []
    msgs = Array.new(20_000) { junk << Array.new(3) { "junk" + rng.bytes(8) }; rng.bytes(rng.rand(0..22)) + +"" }
    want = msgs.map { |m| Digest::SHA1.digest(m) }
    stop = false
    c = Thread.new { until stop; junk = nil; GC.compact; junk = Array.new(20_000) { "j" * 10 }; end }
    60.times { abort "wrong digests" unless Hashbatch.sha1_many(msgs) == want }
    stop = true
    c.join
    print "ok"
  RUBY

  def test_compaction_after_a_ractor_while_engine_threads_read_short_strings
    skip "no Ractor or GC.compact" unless defined?(Ractor) && GC.respond_to?(:compact)
    args = $LOAD_PATH.flat_map { |d| ["-I", d] }
    out, status = Timeout.timeout(300) do
      IO.popen([RbConfig.ruby, *args, "-e", COMPACTION_CHILD], err: %i[child out], &:read)
        .then { |o| [o, $?] }
    end
    assert status.success?, "the child failed (#{status.inspect}): #{out[0, 300]}"
    assert_equal "ok", out
  end

  def test_gc_stress_briefly
    msgs = Array.new(300) { |i| "stress #{i}" * (i % 7) }
    want = msgs.map { |m| oracle_hex(m) }
    GC.stress = true
    got = Hashbatch.hexdigest_many(msgs)
    d = Hashbatch::SHA1.new
    msgs.each { |m| d << m }
    one = Hashbatch::SHA1.hexdigest(msgs.join)
    GC.stress = false
    assert_equal want, got
    assert_equal oracle_hex(msgs.join), d.hexdigest
    assert_equal oracle_hex(msgs.join), one
  ensure
    GC.stress = false
  end

  # The parent has started OpenCL (the default engine is auto with device
  # "all"): the child's default engine is the OpenSSL pool, and OpenCL is
  # refused there rather than hanging in a runtime whose threads are gone.
  def test_fork_child_gets_a_fresh_engine_and_parent_is_unaffected
    skip "no fork here" unless Process.respond_to?(:fork)
    msgs = %w[parent child fork]
    want = msgs.map { |m| oracle_hex(m) }
    assert_equal want, Hashbatch.hexdigest_many(msgs) # the default engine opens
    parents = Hashbatch::Engine.new(backend: "cpu")
    assert_equal want, parents.hexdigest_many(msgs)
    rd, wr = IO.pipe
    pid = fork do
      rd.close
      report = []
      report << (Hashbatch.hexdigest_many(msgs) == want ? "default ok" : "default WRONG")
      report << (Hashbatch::SHA1.hexdigest("child") == oracle_hex("child") ? "sha1 ok" : "sha1 WRONG")
      begin
        parents.hexdigest_many(msgs)
        report << "parent's engine used"
      rescue Hashbatch::ClosedError => e
        report << (e.message.include?("after fork") ? "parent's engine refused" : e.message)
      end
      begin
        Hashbatch::Engine.new(backend: "opencl").close
        report << "opencl opened after fork"
      rescue Hashbatch::NoDeviceError => e
        report << (e.message.include?("forked") ? "opencl refused" : e.message)
      end
      own = Hashbatch::Engine.new(backend: "cpu")
      report << (own.hexdigest_many(msgs) == want ? "own ok" : "own WRONG")
      own.close
      wr.write(report.join(","))
      wr.close
      exit!(0)
    end
    wr.close
    report = rd.read
    _, status = Timeout.timeout(120) { Process.wait2(pid) }
    assert status.success?, "child exited with #{status.inspect}"
    assert_equal "default ok,sha1 ok,parent's engine refused,opencl refused,own ok", report
    assert_equal want, Hashbatch.hexdigest_many(msgs)
    assert_equal want, parents.hexdigest_many(msgs)
  ensure
    parents&.close
    if pid && !status # the child hung: do not leave it behind
      Process.kill(:KILL, pid)
      Process.wait(pid)
    end
  end

  def test_ractor
    skip "no Ractor" unless defined?(Ractor)
    old = Warning[:experimental]
    Warning[:experimental] = false
    r = Ractor.new do
      [Hashbatch::SHA1.hexdigest("ractor"), Hashbatch.hexdigest_many(%w[a b])]
    end
    assert_equal [oracle_hex("ractor"), [oracle_hex("a"), oracle_hex("b")]], r.take
  ensure
    Warning[:experimental] = old unless old.nil?
  end
end
