# frozen_string_literal: true

require_relative "helper"
require "tmpdir"
require "pathname"

# Hashbatch.file_digests and Engine#file_digests (the library's files
# jobs), checked against sha1sum and Digest::SHA1.file.
class TestFiles < Minitest::Test
  include HashbatchTestHelper

  def setup
    skip "libhashbatch has no files jobs" unless Hashbatch.respond_to?(:file_digests)
    @dir = Dir.mktmpdir("hashbatch-files")
    rng = Random.new(42)
    @paths = [0, 1, 64, 4096, 100_000, 3 << 20].each_with_index.map do |size, i|
      path = File.join(@dir, "f#{i} with space")
      File.binwrite(path, rng.bytes(size))
      path
    end
  end

  def teardown
    FileUtils.remove_entry(@dir) if @dir
  end

  def sha1sum(paths)
    out = IO.popen(["sha1sum", *paths], &:read)
    out.lines.map { |l| l[0, 40] }
  end

  def test_digests_match_sha1sum
    want = sha1sum(@paths)
    assert_equal want, Hashbatch.file_digests(@paths, hex: true)
    assert_equal @paths.map { |p| Digest::SHA1.file(p).digest }, Hashbatch.file_digests(@paths)
    e = Hashbatch::Engine.new(backend: "auto", device: "all")
    assert_equal want, e.file_digests(@paths.map { |p| Pathname(p) }, hex: true)
  ensure
    e&.close
  end

  # The wait for a files job is without the GVL (testing.c's probe: a Ruby
  # thread ran while the waiter stood there).
  def test_file_digests_release_the_gvl
    got = nil
    assert_equal :seen, gvl_probe(:files_wait) { got = Hashbatch.file_digests(@paths, hex: true) }
    assert_equal sha1sum(@paths), got
  end

  def test_errors_name_the_path_and_cause
    missing = File.join(@dir, "missing")
    err = assert_raises(Hashbatch::FileError) { Hashbatch.file_digests([@paths[0], missing]) }
    assert_equal missing, err.path
    assert_equal Errno::ENOENT::Errno, err.errno
    assert_equal "#{missing}: No such file or directory", err.message
    got = Hashbatch.file_digests([@paths[1], missing, @dir], hex: true, errors: :return)
    assert_equal sha1sum([@paths[1]])[0], got[0]
    assert_kind_of Hashbatch::FileError, got[1]
    assert_kind_of Hashbatch::FileError, got[2]
    assert_equal "#{@dir}: Is a directory", got[2].message
    assert_equal [], Hashbatch.file_digests([])
    assert_raises(TypeError) { Hashbatch.file_digests(nil) }
    assert_raises(TypeError) { Hashbatch.file_digests([nil]) }
    assert_raises(ArgumentError) { Hashbatch.file_digests(["a\0b"]) }
    assert_raises(ArgumentError) { Hashbatch.file_digests(@paths, errors: :ignore) }
  end

  def test_closed_engine
    e = Hashbatch::Engine.new(backend: "cpu")
    e.close
    assert_raises(Hashbatch::ClosedError) { e.file_digests(@paths) }
  end
end
