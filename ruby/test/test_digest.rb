# frozen_string_literal: true

require_relative "helper"
require "tempfile"

# Hashbatch::SHA1 keeps Digest::SHA1's contract, with Digest::SHA1 as the
# oracle for every result (value and encoding).
class TestDigestContract < Minitest::Test
  include HashbatchTestHelper

  def test_is_a_digest_class
    assert_operator Hashbatch::SHA1, :<, Digest::Class
    assert_kind_of Digest::Instance, Hashbatch::SHA1.new
  end

  def test_class_methods_match_digest_sha1
    varied_messages.each do |m|
      %i[digest hexdigest base64digest].each do |meth|
        want = Digest::SHA1.public_send(meth, m)
        got = Hashbatch::SHA1.public_send(meth, m)
        assert_equal want, got, "#{meth} of #{m.bytesize} bytes"
        assert_equal want.encoding, got.encoding, "#{meth} encoding"
      end
    end
  end

  def test_instance_methods_match_digest_sha1
    m = "The quick brown fox jumps over the lazy dog"
    ours = Hashbatch::SHA1.new
    theirs = Digest::SHA1.new
    ours << m[0, 10]
    ours.update(m[10..])
    theirs << m
    %i[digest hexdigest base64digest to_s].each do |meth|
      assert_equal theirs.public_send(meth), ours.public_send(meth), meth
      assert_equal theirs.public_send(meth).encoding, ours.public_send(meth).encoding, meth
    end
    assert_equal Digest::SHA1.digest("abc"), ours.digest("abc")
    assert_equal Digest::SHA1.hexdigest("abc"), ours.hexdigest("abc")
    assert_equal Digest::SHA1.base64digest("abc"), ours.base64digest("abc")
    # digest(str) resets, so the object is now empty
    assert_equal Digest::SHA1.hexdigest(""), ours.hexdigest
  end

  def test_incremental_in_odd_pieces
    rng = Random.new(5)
    data = rng.bytes(300_000)
    d = Hashbatch::SHA1.new
    pos = 0
    while pos < data.bytesize
      n = rng.rand(0..9000)
      d << data.byteslice(pos, n)
      pos += n
    end
    assert_equal oracle_hex(data), d.hexdigest
  end

  def test_bang_methods_reset
    d = Hashbatch::SHA1.new.update("abc")
    assert_equal oracle("abc"), d.digest!
    assert_equal oracle(""), d.digest
    d << "abc"
    assert_equal oracle_hex("abc"), d.hexdigest!
    assert_equal oracle_hex(""), d.hexdigest
  end

  def test_reset_clone_dup_and_equality
    d = Hashbatch::SHA1.new << "ab"
    c = d.clone
    e = d.dup
    d << "c"
    assert_equal oracle_hex("abc"), d.hexdigest
    assert_equal oracle_hex("ab"), c.hexdigest
    assert_equal oracle_hex("ab"), e.hexdigest
    assert_equal c, e
    refute_equal c, d
    assert_equal d, Digest::SHA1.new.update("abc")          # another Digest
    assert_equal d, Digest::SHA1.hexdigest("abc")           # a hex string
    refute_equal d, Digest::SHA1.hexdigest("abd")
    assert_same d, d.reset
    assert_equal oracle_hex(""), d.hexdigest
  end

  def test_lengths
    assert_equal 64, Hashbatch::SHA1.new.block_length
    assert_equal 20, Hashbatch::SHA1.new.digest_length
    assert_equal 20, Hashbatch::SHA1.new.length
    assert_equal 20, Hashbatch::SHA1.new.size
  end

  def test_file_class_and_instance
    Tempfile.create("hashbatch") do |f|
      data = Random.new(3).bytes(100_000)
      f.binmode
      f.write(data)
      f.close
      assert_equal oracle_hex(data), Hashbatch::SHA1.file(f.path).hexdigest
      assert_equal oracle_hex(data), Hashbatch::SHA1.new.file(f.path).hexdigest
    end
    assert_raises(Errno::ENOENT) { Hashbatch::SHA1.file("/nonexistent/hashbatch/x") }
  end

  def test_inspect_names_class_and_digest
    assert_equal "#<Hashbatch::SHA1: #{oracle_hex('abc')}>", Hashbatch::SHA1.new.update("abc").inspect
  end

  def test_bad_arguments
    assert_raises(ArgumentError) { Hashbatch::SHA1.new("") }
    assert_raises(ArgumentError) { Hashbatch::SHA1.digest }
    assert_raises(ArgumentError) { Hashbatch::SHA1.hexdigest }
    assert_raises(ArgumentError) { Hashbatch::SHA1.hexdigest("a", "b") }
    assert_raises(TypeError) { Hashbatch::SHA1.hexdigest(nil) }
    assert_raises(TypeError) { Hashbatch::SHA1.hexdigest(42) }
    assert_raises(TypeError) { Hashbatch::SHA1.new.update(nil) }
    assert_raises(TypeError) { Hashbatch::SHA1.new.update(:abc) }
    assert_raises(TypeError) { Hashbatch::SHA1.new.send(:initialize_copy, Digest::SHA1.new) }
  end

  def test_to_str_objects_are_accepted
    o = Object.new
    def o.to_str = "abc"
    assert_equal oracle_hex("abc"), Hashbatch::SHA1.hexdigest(o)
    assert_equal oracle_hex("abc"), Hashbatch::SHA1.new.update(o).hexdigest
  end

  def test_large_update_released_path_is_exact
    big = Random.new(9).bytes(5 << 20)      # past the always-release size
    assert_equal oracle_hex(big), Hashbatch::SHA1.hexdigest(big)
    d = Hashbatch::SHA1.new
    d << "prefix" << big << "suffix"
    assert_equal oracle_hex("prefix#{big}suffix"), d.hexdigest
    # every size around the GVL threshold
    t = Hashbatch::SHA1.gvl_threshold
    [t - 1, t, t + 1].each do |n|
      s = "q" * n
      assert_equal oracle_hex(s), Hashbatch::SHA1.hexdigest(s)
    end
  end
end
