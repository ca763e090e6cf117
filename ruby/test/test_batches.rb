# frozen_string_literal: true

require_relative "helper"

# Batches through the default engine and explicit engines, jobs, stats,
# devices and errors; Digest::SHA1 is the oracle.
class TestBatches < Minitest::Test
  include HashbatchTestHelper

  BACKENDS = [
    { backend: "cpu" },
    { backend: "opencl", verify: "full" },
    { backend: "auto", device: "all" },
  ].freeze

  def engines
    @engines ||= BACKENDS.map { |opts| Hashbatch::Engine.new(**opts) }
  end

  def teardown
    @engines&.each(&:close)
  end

  def test_default_engine_varied_messages
    msgs = varied_messages
    assert_equal msgs.map { |m| oracle(m) }, Hashbatch.sha1_many(msgs)
    hex = Hashbatch.hexdigest_many(msgs)
    assert_equal msgs.map { |m| oracle_hex(m) }, hex
    assert(hex.all? { |h| h.encoding == Encoding::US_ASCII })
    assert(Hashbatch.sha1_many(msgs).all? { |d| d.encoding == Encoding::BINARY && d.bytesize == 20 })
  end

  def test_batches_of_0_1_and_100000
    assert_equal [], Hashbatch.sha1_many([])
    assert_equal [], Hashbatch.hexdigest_many([])
    assert_equal [oracle_hex("x")], Hashbatch.hexdigest_many(["x"])
    rng = Random.new(100_000)
    msgs = Array.new(100_000) { rng.bytes(rng.rand(0..200)) }
    assert_equal msgs.map { |m| oracle_hex(m) }, Hashbatch.hexdigest_many(msgs)
  end

  def test_every_backend_agrees_with_oracle
    msgs = varied_messages
    want = msgs.map { |m| oracle(m) }
    engines.each do |e|
      assert_equal want, e.sha1_many(msgs), e.describe
      assert_equal msgs.map { |m| oracle_hex(m) }, e.hexdigest_many(msgs), e.describe
    end
  end

  def test_jobs
    e = engines.first
    msgs = varied_messages
    job = e.submit(msgs)
    assert_instance_of Hashbatch::Job, job
    assert_same e, job.engine
    assert_equal msgs.size, job.size
    assert job.wait(30)
    assert job.done?
    assert_equal msgs.map { |m| oracle(m) }, job.value
    assert_equal msgs.map { |m| oracle(m) }, job.value # cached
    hexjob = e.submit(msgs, hex: true)
    assert_equal msgs.map { |m| oracle_hex(m) }, hexjob.value
    assert_equal [], e.submit([]).value
  end

  def test_job_snapshots_its_strings
    e = engines.first
    s = +"original contents " * 1000
    want = oracle(s.dup)
    job = e.submit([s])
    s.replace("changed") # allowed: the job holds its own frozen snapshot
    assert_equal [want], job.value
  end

  def test_job_wait_timeout_and_cancel
    e = Hashbatch::Engine.new(backend: "cpu", cpu_threads: 1)
    big = ("z" * (64 << 20)).freeze
    job = e.submit([big] * 48) # ~3 GiB of hashing on one thread
    # 3 GiB of SHA-1 on one CPU thread takes seconds on any CPU (~2 GB/s per
    # core at best); load only makes it longer
    refute job.wait(0.05), "a 3 GiB job on one thread cannot be done in 50 ms"
    refute job.done?
    job.cancel
    assert job.done?
    err = assert_raises(Hashbatch::CancelledError) { job.value }
    assert_equal Hashbatch::Status::ERR_CANCELLED, err.status
    assert_equal "HB_ERR_CANCELLED", err.status_name
    assert_equal [oracle("after")], e.sha1_many(["after"])
  ensure
    e&.close
  end

  def test_stats_count_work
    e = Hashbatch::Engine.new(backend: "cpu")
    msgs = Array.new(1000) { |i| "message #{i}" * 10 }
    e.sha1_many(msgs)
    s = e.stats
    assert_equal 1000, s[:messages]
    assert_equal msgs.sum(&:bytesize), s[:bytes]
    assert_kind_of Array, s[:devices]
    assert(s[:devices].any? { |d| d[:cpu] })
    assert_equal :cpu, e.backend
    assert_match(/cpu/, e.describe)
  ensure
    e&.close
  end

  def test_devices
    devs = Hashbatch.devices
    assert_kind_of Array, devs
    devs.each do |d|
      assert_match(/\A\d+:\d+\z/, d[:spec])
      assert_kind_of String, d[:name]
      assert_includes %i[gpu cpu accelerator other], d[:type]
    end
    assert_equal devs, engines.first.devices
  end

  def test_closed_engine_raises
    e = Hashbatch::Engine.new(backend: "cpu")
    e.close
    assert e.closed?
    e.close # twice is fine
    err = assert_raises(Hashbatch::ClosedError) { e.sha1_many(["a"]) }
    assert_match(/closed/, err.message)
    assert_raises(Hashbatch::ClosedError) { e.submit(["a"]) }
    assert_raises(Hashbatch::ClosedError) { e.stats }
    assert_kind_of Hashbatch::Error, err
  end

  def test_bad_arguments_raise_clearly
    err = assert_raises(TypeError) { Hashbatch.sha1_many(nil) }
    assert_match(/Array of Strings, got nil/, err.message)
    assert_raises(TypeError) { Hashbatch.sha1_many("abc") }
    err = assert_raises(TypeError) { Hashbatch.hexdigest_many(["a", nil]) }
    assert_match(/element 1 is nil/, err.message)
    err = assert_raises(TypeError) { Hashbatch.hexdigest_many(["a", "b", 3]) }
    assert_match(/element 2 is Integer/, err.message)
    err = assert_raises(ArgumentError) { Hashbatch::Engine.new(backend: "bogus") }
    assert_match(/unknown backend "bogus"/, err.message)
    err = assert_raises(ArgumentError) { Hashbatch::Engine.new(verify: "sometimes") }
    assert_match(/unknown verify mode "sometimes"/, err.message)
    assert_raises(ArgumentError) { Hashbatch::Engine.new(colour: "red") }
    assert_raises(TypeError) { Hashbatch::Engine.new(backend: 3) }
    err = assert_raises(Hashbatch::NoDeviceError) { Hashbatch::Engine.new(backend: "opencl", device: "no-such-device-xyz") }
    assert_kind_of Hashbatch::DeviceError, err
    assert_equal "HB_ERR_BAD_DEVICE_SPEC", err.status_name
    assert_match(/no-such-device-xyz/, err.message)
    assert_nil err.cl_error
    assert_raises(ArgumentError) { engines.first.submit(["a"]).wait(-1) }
  end

  # The library bounds cpu_threads (1024 in config.c); the gem states no
  # bound of its own (it said 0..4096) but passes the library's message on.
  def test_cpu_threads_bound_is_the_librarys
    [1025, 5000].each do |n|
      err = assert_raises(ArgumentError, "cpu_threads: #{n}") { Hashbatch::Engine.new(backend: "cpu", cpu_threads: n) }
      assert_match(/cpu_threads/, err.message)
      assert_match(/\b1024\b/, err.message, "cpu_threads: #{n} should name the library's bound")
      refute_match(/4096/, err.message)
    end
    [-1, 1 << 40].each do |n|
      err = assert_raises(ArgumentError) { Hashbatch::Engine.new(backend: "cpu", cpu_threads: n) }
      assert_match(/cpu_threads/, err.message)
      refute_match(/4096/, err.message)
    end
    assert_raises(TypeError) { Hashbatch::Engine.new(backend: "cpu", cpu_threads: "2") }
    Hashbatch::Engine.open(backend: "cpu", cpu_threads: 3) do |e|
      assert_match(/3 threads/, e.describe)
      assert_equal [oracle_hex("three")], e.hexdigest_many(["three"])
    end
  end

  def test_a_failed_batch_does_not_leave_strings_locked
    s = +"unlocked afterwards" * 100
    assert_raises(TypeError) { Hashbatch.sha1_many([s, nil]) }
    s << "!" # would raise if s were still locked
    assert_equal [oracle(s)], Hashbatch.sha1_many([s])
  end

  # From 32,768 strings a batch is hashed as 8 jobs (sync.c), locked and
  # submitted first, then collected in order.
  BIG = 40_001

  def test_a_big_batch_comes_back_whole_and_in_order
    rng = Random.new(40_001)
    msgs = Array.new(BIG) { |i| +"#{i}:" << rng.bytes(rng.rand(0..300)) }
    assert_equal msgs.map { |m| oracle_hex(m) }, Hashbatch.hexdigest_many(msgs)
    engines.each { |e| assert_equal msgs.map { |m| oracle(m) }, e.sha1_many(msgs) }
    msgs.each { |m| m << "!" } # every piece's strings were unlocked
  end

  def test_a_failed_big_batch_leaves_nothing_locked
    s = +"locked by the first pieces" * 10
    bad = [s] * (BIG - 1) + [nil] # the last piece fails after the first were submitted
    e = assert_raises(TypeError) { Hashbatch.sha1_many(bad) }
    assert_match(/element #{BIG - 1} is nil/, e.message)
    s << "!"
    assert_equal [oracle(s)] * 3, Hashbatch.sha1_many([s] * 3)
  end

  def test_an_interrupted_big_batch_leaves_nothing_locked
    s = +"i" * (256 << 10) # 10 GB in all: the first piece is still hashing when waited for
    th = stop_at_probe(:batch_wait) do
      Thread.new do
        Thread.current.report_on_exception = false
        Hashbatch.hexdigest_many([s] * BIG)
      end
    end
    th.raise(Interrupt, "stop")
    PROBES.release_gvl_probe(:batch_wait)
    assert_raises(Interrupt) { th.join }
    s << "!" # unlocked by the ensure, every piece
    assert_equal [oracle_hex(s)], Hashbatch.hexdigest_many([s])
  ensure
    PROBES.disarm_gvl_probe(:batch_wait)
  end

  # Beside a thread that never blocks, the GVL comes back late after a
  # piece's wait, and the rest is waited for at once (sync.c): the same
  # digests, every string unlocked.
  def test_a_big_batch_beside_a_busy_thread
    rng = Random.new(7)
    msgs = Array.new(BIG) { |i| +"#{i}" << rng.bytes(rng.rand(0..2000)) }
    stop = false
    busy = Thread.new { n = 0; n += 1 until stop; n }
    begin
      assert_equal msgs.map { |m| oracle_hex(m) }, Hashbatch.hexdigest_many(msgs)
    ensure
      stop = true
      busy.join
    end
    msgs.each { |m| m << "!" }
  end

  # An element's to_str is Ruby code: it may change the array, so a big
  # batch with one reads a copy, and hashes what the array held.
  def test_to_str_that_changes_a_big_array
    msgs = Array.new(BIG) { |i| "s#{i}" }
    arg = msgs.dup
    o = Object.new
    o.define_singleton_method(:to_str) { arg.clear && "o" }
    arg[BIG / 2] = o
    want = msgs.map { |m| oracle_hex(m) }
    want[BIG / 2] = oracle_hex("o")
    assert_equal want, Hashbatch.hexdigest_many(arg)
    assert_empty arg
  end

  def test_to_str_elements
    o = Object.new
    def o.to_str = "abc"
    assert_equal [oracle_hex("abc")], Hashbatch.hexdigest_many([o])
  end

  def test_engine_open_block_closes
    kept = nil
    r = Hashbatch::Engine.open(backend: "cpu") do |e|
      kept = e
      e.hexdigest_many(["abc"])
    end
    assert_equal [oracle_hex("abc")], r
    assert kept.closed?
  end
end
