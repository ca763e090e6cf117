# frozen_string_literal: true

# digest_contract.rb - the Digest contract of Digest::SHA1 and
# OpenSSL::Digest::SHA1 (and OpenSSL::Digest.new("SHA1")), as code relies on
# it: class-level digest/hexdigest/base64digest, instance update/<<,
# digest/hexdigest/digest!/base64digest, file, reset, dup/clone, ==,
# lengths, name, to_s, inspect, argument errors, encodings, subclasses,
# state reuse, inputs across Hashbatch::SHA1's GVL threshold and chunking,
# many threads at once.
#
# Not one of the suite's test_*.rb: test_dropin.rb runs it in a child
# process twice, with and without the drop-in (ruby -rhashbatch/digest), so
# the drop-in never leaks into the other tests and the contract itself is
# checked against the stock classes:
#   ruby -I<dirs> [-rhashbatch/digest] test/digest_contract.rb
#   env HASHBATCH_CONTRACT_EXPECT=dropin|stock: fail unless the drop-in
#   is (is not) installed.
# The oracle is OpenSSL in another process that loads neither hashbatch nor
# the drop-in (this file run with --oracle, under --disable-gems and no
# RUBYOPT), checked against NIST's vectors: it prints every message's SHA-1
# as JSON.
# Must not: compute an expected digest in this process.
require "json"

module DigestContractMessages
  NIST = {
    "abc" => "a9993e364706816aba3e25717850c26c9cd0d89d",
    "nist448" => "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
    "million_a" => "34aa973cd4c4daa4f61eeb2bdbad27316534016f"
  }.freeze
  PIECE_SMALL = ("p" * 5000).freeze      # hashed in a turn on most machines
  PIECE_BIG = ("P" * (300 << 10)).freeze # past 256 KiB: always released, chunked
  THREADS = 6
  ROUNDS = 5

  # Every message the contract hashes, by name; the same in any process.
  def self.build
    m = {
      "empty" => "", "a" => "a", "abc" => "abc",
      "nist448" => "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "million_a" => "a" * 1_000_000,
      "utf8" => "héllo wörld ✓ 日本語",
      "utf16" => "шифр — ✓".encode("UTF-16LE"),
      "eucjp" => "\xa4\xa2\xa4\xa4".dup.force_encoding("EUC-JP"),
      "invalid_utf8" => "\xff\xfe\x80ok\xc3".dup.force_encoding("UTF-8"),
      "binary" => "\x00\xff\x80\x7f".b,
      "shared_small" => PIECE_SMALL * (THREADS * ROUNDS),
      "shared_big" => PIECE_BIG * (THREADS * ROUNDS)
    }
    sizes = [1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 129]
    (9..21).each { |p| sizes.push((1 << p) - 1, 1 << p, (1 << p) + 1) }
    sizes.push((256 << 10) - 1, 256 << 10, (256 << 10) + 1, (5 << 20) + 3)
    sizes.uniq.each { |n| m["rand_#{n}"] = Random.new(n).bytes(n) }
    m.transform_values(&:freeze).freeze
  end
end

if ARGV.first == "--oracle"
  abort "oracle: hashbatch is loaded" if defined?(Hashbatch)
  require "openssl"
  out = DigestContractMessages.build.transform_values { |s| OpenSSL::Digest.new("SHA1").update(s).hexdigest }
  DigestContractMessages::NIST.each do |k, v|
    abort "oracle: OpenSSL's #{k} is #{out[k]}, not NIST's #{v}" unless out[k] == v
  end
  puts JSON.generate(out)
  exit
end

require "minitest/autorun"
require "digest"
require "openssl"
require "open3"
require "rbconfig"
require "tmpdir"

module DigestContract
  MESSAGES = DigestContractMessages.build

  # The oracle's hex digests (see the top).
  def self.oracle
    env = { "RUBYOPT" => nil, "RUBYLIB" => nil }
    out, err, st = Open3.capture3(env, RbConfig.ruby, "--disable-gems", __FILE__, "--oracle")
    raise "the oracle failed (#{st}): #{err}" unless st.success?

    JSON.parse(out).freeze
  end
  ORACLE = oracle

  # Subclasses code may have: each reaches the parent's methods.
  class CountingSHA1 < Digest::SHA1
    attr_reader :updates

    def update(str)
      @updates = (@updates || 0) + 1
      super
    end
    alias << update
  end

  class SeededSHA1 < Digest::SHA1
    def initialize(seed = "")
      super()
      update(seed)
    end
  end

  class ReversedSHA1 < Digest::SHA1
    private

    def finish
      super.reverse
    end
  end

  class CountingOpenSSL < OpenSSL::Digest::SHA1
    attr_reader :updates

    def update(str)
      @updates = (@updates || 0) + 1
      super
    end
    alias << update
  end

  class GenericSHA1 < OpenSSL::Digest
    def initialize(data = nil)
      super("SHA1", data)
    end
  end

  # name => a block making a fresh SHA-1 object.
  MAKERS = {
    "Digest::SHA1" => -> { Digest::SHA1.new },
    "OpenSSL::Digest::SHA1" => -> { OpenSSL::Digest::SHA1.new },
    "OpenSSL::Digest.new(SHA1)" => -> { OpenSSL::Digest.new("SHA1") },
    "OpenSSL::Digest.new(sha1)" => -> { OpenSSL::Digest.new("sha1") },
    "CountingSHA1" => -> { CountingSHA1.new },
    "SeededSHA1" => -> { SeededSHA1.new },
    "CountingOpenSSL" => -> { CountingOpenSSL.new },
    "GenericSHA1" => -> { GenericSHA1.new }
  }.freeze
  CLASSES = [Digest::SHA1, OpenSSL::Digest::SHA1, CountingSHA1, CountingOpenSSL].freeze
end

class DigestContractTest < Minitest::Test
  include DigestContract

  def hex(name) = ORACLE.fetch(name)
  def bin(name) = [hex(name)].pack("H*")
  def msg(name) = MESSAGES.fetch(name)

  def each_maker(&block) = MAKERS.each(&block)

  # Where it cuts a message into pieces: across blocks and the threshold.
  def pieces(str)
    cuts = [0, 1, 63, 64, 1000, 4096, 70_000, 300_000].select { |c| c < str.bytesize } + [str.bytesize]
    cuts.uniq.each_cons(2).map { |a, b| str.byteslice(a, b - a) }
  end

  def test_the_expected_mode
    case ENV["HASHBATCH_CONTRACT_EXPECT"]
    when "dropin"
      assert Hashbatch.digest_replaced?, "the drop-in should be installed"
      assert(Digest::SHA1.ancestors.any? { |m| m.name.to_s.start_with?("Hashbatch::") })
      assert(OpenSSL::Digest.ancestors.any? { |m| m.name.to_s.start_with?("Hashbatch::") })
    when "stock"
      refute defined?(Hashbatch) && Hashbatch.digest_replaced?, "the drop-in should not be installed"
      assert_equal Digest::Base, Digest::SHA1.instance_method(:update).owner
      assert_equal OpenSSL::Digest, OpenSSL::Digest::SHA1.instance_method(:update).owner
    else
      skip "HASHBATCH_CONTRACT_EXPECT unset: not checking which Digest this is"
    end
  end

  def test_nist_vectors
    DigestContractMessages::NIST.each do |name, want|
      CLASSES.each { |k| assert_equal want, k.hexdigest(msg(name)), "#{k} #{name}" }
    end
  end

  def test_class_level_digest_hexdigest_base64digest
    MESSAGES.each_key do |name|
      [msg(name), +msg(name)].each do |m|
        CLASSES.each do |k|
          d = k.digest(m)
          assert_equal bin(name), d, "#{k}.digest #{name}"
          assert_equal Encoding::BINARY, d.encoding
          h = k.hexdigest(m)
          assert_equal hex(name), h, "#{k}.hexdigest #{name}"
          assert_equal Encoding::US_ASCII, h.encoding
          assert_equal [bin(name)].pack("m0"), k.base64digest(m), "#{k}.base64digest #{name}"
        end
        assert_equal hex(name), OpenSSL::Digest.hexdigest("SHA1", m)
        assert_equal bin(name), OpenSSL::Digest.digest("SHA1", m)
        assert_equal hex(name), Digest::SHA1.new.hexdigest(m)
      end
    end
  end

  def test_instance_update_in_pieces
    MESSAGES.each_key do |name|
      each_maker do |kind, make|
        d = make.call
        pieces(msg(name)).each_with_index { |p, i| assert_same d, (i.even? ? d.update(p) : d << p) }
        assert_equal hex(name), d.hexdigest, "#{kind} #{name}"
        assert_equal Encoding::US_ASCII, d.hexdigest.encoding
        assert_equal bin(name), d.digest
        assert_equal Encoding::BINARY, d.digest.encoding
        assert_equal hex(name), d.to_s
      end
    end
  end

  def test_instance_forms_and_state_reuse
    each_maker do |kind, make|
      d = make.call
      d << msg("a")
      assert_equal hex("a"), d.hexdigest, kind
      assert_equal hex("a"), d.hexdigest, "#{kind}: hexdigest keeps the state"
      d << "bc"
      assert_equal bin("abc"), d.digest, kind
      assert_equal hex("abc"), d.hexdigest!, kind
      assert_equal hex("empty"), d.hexdigest, "#{kind}: hexdigest! resets"
      d << "abc"
      assert_equal bin("abc"), d.digest!
      assert_equal hex("empty"), d.hexdigest, "#{kind}: digest! resets"
      d << "abc"
      assert_equal [bin("abc")].pack("m0"), d.base64digest
      assert_equal [bin("abc")].pack("m0"), d.base64digest!
      assert_equal hex("empty"), d.hexdigest
      d << "junk"
      assert_same d, d.reset
      assert_equal hex("empty"), d.hexdigest, "#{kind}: reset"
      d << "junk"
      assert_equal hex("rand_4097"), d.hexdigest(msg("rand_4097")), "#{kind}: hexdigest(str) starts over"
      assert_equal hex("empty"), d.hexdigest, "#{kind}: and resets after"
      assert_equal bin("abc"), d.digest("abc")
      assert_equal [bin("abc")].pack("m0"), d.base64digest("abc")
      d << msg("rand_1048577")
      assert_equal hex("rand_1048577"), d.hexdigest, kind
    end
  end

  # Digest::Base's private finish starts the state over (code calling it
  # through send relies on that); OpenSSL's leaves its context finished.
  def test_digest_base_finish_starts_over
    MAKERS.select { |_, make| make.call.is_a?(Digest::SHA1) }.each do |kind, make|
      d = make.call << "a"
      assert_equal bin("a"), d.send(:finish), kind
      d << "abc"
      assert_equal hex("abc"), d.hexdigest, kind
    end
  end

  def test_dup_and_clone_are_independent
    each_maker do |kind, make|
      d = make.call
      d << "a"
      e = d.dup
      f = d.clone
      e << "bc"
      f << msg("rand_262145")
      d << msg("rand_5242883").byteslice(0, 0)
      assert_equal hex("a"), d.hexdigest, kind
      assert_equal hex("abc"), e.hexdigest, kind
      assert_equal d.class, e.class
      assert_equal d.class, f.class
      refute_equal f.hexdigest, d.hexdigest, kind
      g = make.call
      g << msg("rand_262145")
      h = g.clone(freeze: true)
      assert h.frozen?
      assert_equal hex("rand_262145"), h.hexdigest, kind
      assert_equal hex("rand_262145"), g.dup.hexdigest, kind
      g << "junk"
      assert_equal hex("rand_262145"), h.hexdigest, "#{kind}: a clone keeps its own state"
    end
  end

  def test_equality
    each_maker do |kind, make|
      d = make.call << "abc"
      assert_equal d, MAKERS["Digest::SHA1"].call << "abc", kind
      assert_equal d, MAKERS["OpenSSL::Digest::SHA1"].call << "abc", kind
      assert d == hex("abc"), kind
      refute d == hex("abc").upcase
      refute d == hex("a")
      refute d == (make.call << "ab")
      refute d == 1
    end
  end

  def test_lengths_name_to_s_inspect
    each_maker do |kind, make|
      d = make.call << "abc"
      assert_equal 20, d.length
      assert_equal 20, d.size
      assert_equal 20, d.digest_length
      assert_equal 64, d.block_length
      assert_equal "SHA1", d.name if d.is_a?(OpenSSL::Digest)
      assert_equal hex("abc"), d.to_s
      assert_equal "#<#{d.class.name}: #{hex('abc')}>", d.inspect, kind
    end
  end

  def test_file
    Dir.mktmpdir do |dir|
      %w[empty abc rand_65537 rand_5242883].each do |name|
        path = File.join(dir, name)
        File.binwrite(path, msg(name))
        CLASSES.each { |k| assert_equal hex(name), k.file(path).hexdigest, "#{k}.file #{name}" }
        each_maker do |kind, make|
          d = make.call
          assert_same d, d.file(path)
          assert_equal hex(name), d.hexdigest, "#{kind}#file #{name}"
        end
      end
      CLASSES.each { |k| assert_raises(Errno::ENOENT) { k.file(File.join(dir, "none")) } }
    end
  end

  def test_argument_errors_as_before
    to_str = Object.new
    def to_str.to_str = "abc"
    each_maker do |kind, make|
      [[1, "Integer"], [nil, "nil"], [:sym, "Symbol"], [Object.new, "Object"]].each do |bad, what|
        e = assert_raises(TypeError) { make.call.update(bad) }
        assert_equal "no implicit conversion of #{what} into String", e.message, kind
        assert_raises(TypeError) { make.call << bad }
        assert_raises(TypeError) { make.call.hexdigest(bad) }
      end
      assert_equal hex("abc"), make.call.update(to_str).hexdigest, kind
    end
    CLASSES.each do |k|
      e = assert_raises(TypeError) { k.hexdigest(1) }
      assert_equal "no implicit conversion of Integer into String", e.message
      assert_raises(TypeError) { k.digest(nil) }
      assert_equal hex("abc"), k.hexdigest(to_str)
    end
    assert_equal "no data given", assert_raises(ArgumentError) { Digest::SHA1.digest }.message
    assert_equal "wrong number of arguments (given 1, expected 0)",
                 assert_raises(ArgumentError) { Digest::SHA1.hexdigest("a", "b") }.message
    assert_equal "wrong number of arguments (given 0, expected 1)",
                 assert_raises(ArgumentError) { OpenSSL::Digest::SHA1.digest }.message
    assert_equal "wrong number of arguments (given 2, expected 1)",
                 assert_raises(ArgumentError) { OpenSSL::Digest::SHA1.base64digest("a", "b") }.message
    assert_equal "wrong number of arguments (given 1, expected 0)",
                 assert_raises(ArgumentError) { Digest::SHA1.new("abc") }.message
    assert_equal "wrong number of arguments (given 0, expected 1..2)",
                 assert_raises(ArgumentError) { OpenSSL::Digest.new }.message
    assert_raises(TypeError) { OpenSSL::Digest.new("SHA1", 1) }
    assert_raises(RuntimeError) { OpenSSL::Digest.new("no-such-digest") }
    assert_raises(NoMethodError) { Digest::SHA1.new.finish }
    assert_raises(NoMethodError) { OpenSSL::Digest::SHA1.new.finish }
  end

  def test_digests_are_over_the_bytes
    %w[utf8 utf16 eucjp invalid_utf8 binary].each do |name|
      m = msg(name)
      CLASSES.each do |k|
        assert_equal hex(name), k.hexdigest(m), "#{k} #{name}"
        assert_equal hex(name), k.hexdigest(m.b), "#{k} #{name} as binary"
      end
      each_maker { |kind, make| assert_equal hex(name), make.call.update(m).hexdigest, "#{kind} #{name}" }
      assert_equal m.encoding, MESSAGES[name].encoding, "the message was left alone"
    end
  end

  def test_subclasses_reach_their_overrides
    c = CountingSHA1.new
    pieces(msg("rand_524289")).each { |p| c << p }
    assert_equal hex("rand_524289"), c.hexdigest
    assert_operator c.updates, :>=, 2
    assert_equal hex("abc"), SeededSHA1.new("abc").hexdigest
    assert_equal hex("rand_1048576"), SeededSHA1.new(msg("rand_1048576")).hexdigest
    assert_equal bin("abc").reverse, ReversedSHA1.digest("abc")
    assert_equal bin("abc").reverse, ReversedSHA1.new.update("abc").digest
    o = CountingOpenSSL.new
    o << "a" << "bc"
    assert_equal hex("abc"), o.hexdigest
    assert_equal 2, o.updates
    assert_equal hex("rand_2097153"), GenericSHA1.new(msg("rand_2097153")).hexdigest
    assert_equal hex("abc"), OpenSSL::Digest::SHA1.new("abc").hexdigest
    assert_equal hex("rand_262144"), OpenSSL::Digest.new("SHA1", msg("rand_262144")).hexdigest
  end

  def test_openssl_names_and_other_algorithms
    [OpenSSL::Digest.new("1.3.14.3.2.26"), OpenSSL::Digest.new(OpenSSL::Digest::SHA1.new),
     OpenSSL::Digest.new("SHA1")].each do |d|
      assert_equal "SHA1", d.name
      assert_equal hex("rand_65537"), (d << msg("rand_65537")).hexdigest
      assert_equal hex("rand_131073"), (d.reset << msg("rand_131073")).hexdigest
    end
    sha256_abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert_equal sha256_abc, OpenSSL::Digest.new("SHA256", "abc").hexdigest
    assert_equal sha256_abc, OpenSSL::Digest::SHA256.hexdigest("abc")
    assert_equal sha256_abc, Digest::SHA256.hexdigest("abc")
    d = OpenSSL::Digest.new("SHA1", "junk")
    d.send(:initialize, "SHA1")
    assert_equal hex("empty"), d.hexdigest, "initialize starts over"
    d << "abc"
    d.send(:initialize, "SHA256", "abc")
    assert_equal "SHA256", d.name
    assert_equal sha256_abc, d.hexdigest
    e = OpenSSL::Digest.new("SHA256")
    e.send(:initialize_copy, OpenSSL::Digest::SHA1.new("abc"))
    assert_equal ["SHA1", hex("abc")], [e.name, e.hexdigest]
  end

  def test_frozen_objects_and_strings
    each_maker do |kind, make|
      next if kind.start_with?("Counting") # they set an instance variable in update

      d = make.call.freeze
      d << "abc" # as the stock classes: a frozen digest still updates
      assert_equal hex("abc"), d.hexdigest, kind
      assert msg("rand_262145").frozen?
      assert_equal hex("rand_262145"), make.call.update(msg("rand_262145")).hexdigest, kind
    end
  end

  # Threads hashing their own objects, and threads sharing one object (as
  # under the GVL, each update goes in whole: the result is the pieces in
  # some order, all equal here).
  def test_many_threads
    names = MESSAGES.keys.grep(/\Arand_/)
    errors = Queue.new
    workers = Array.new(DigestContractMessages::THREADS) do |t|
      Thread.new do
        names.rotate(t * 3).each_with_index do |name, i|
          make = MAKERS.values[(t + i) % MAKERS.size]
          got = i.even? ? CLASSES[i % CLASSES.size].hexdigest(msg(name)) : make.call.update(msg(name)).hexdigest
          errors << "thread #{t}: #{name}" unless got == hex(name)
        end
      rescue StandardError => e
        errors << "thread #{t}: #{e.class}: #{e.message}"
      end
    end
    workers.each(&:join)
    assert errors.empty?, Array.new(errors.size) { errors.pop }.join("; ")
    { "shared_small" => DigestContractMessages::PIECE_SMALL,
      "shared_big" => DigestContractMessages::PIECE_BIG }.each do |name, piece|
      each_maker do |kind, make|
        shared = make.call
        Array.new(DigestContractMessages::THREADS) do
          Thread.new { DigestContractMessages::ROUNDS.times { |r| r.even? ? shared.update(piece) : shared << piece } }
        end.each(&:join)
        assert_equal hex(name), shared.hexdigest, "#{kind} shared by threads, #{name}"
      end
    end
  end
end
