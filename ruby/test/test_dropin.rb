# frozen_string_literal: true

require_relative "helper"
require "json"
require "open3"
require "rbconfig"

# The opt-in drop-in (require "hashbatch/digest", hashbatch/digest_dropin.rb).
# Everything runs in child processes, so the drop-in never leaks into the
# other tests (nor is this file's verdict changed when the whole suite runs
# with the drop-in loaded): digest_contract.rb with and without it; the
# drop-in off unless asked for, and safe to install twice from many
# threads; big inputs through Digest::SHA1 and OpenSSL::Digest::SHA1
# hashed without the GVL, from the count the extension keeps
# (Hashbatch.gvl_released_calls(:hash), nogvl.c), never from timing; and
# the 512 MiB input Debian's Ruby 3.1 Digest::SHA1 gets wrong, right.
class TestDropin < Minitest::Test
  CONTRACT = File.join(__dir__, "digest_contract.rb")
  # SHA-1 of 512 MiB of "a" (sha1sum, OpenSSL); Debian's Ruby 3.1
  # Digest::SHA1 gives 40cd9c4b14e7b8d0940a3a92c8a7661fad85a821.
  A_512_MIB = "0ea59bfe8787939816796610c73deb1c625e03ed"
  # SHA-1 of 4 MiB of "g" (sha1sum, OpenSSL).
  G_4_MIB = "6e7fcf627fa929a5691343453a4150ca01ce0237"

  # The child: this ruby, this process's load path, RUBYOPT without any
  # -rhashbatch/digest (bundler's -rbundler/setup stays).
  def child(*args, env: {})
    rubyopt = ENV.fetch("RUBYOPT", "").split.grep_v(%r{hashbatch/digest}).join(" ")
    cmd = [RbConfig.ruby, *$LOAD_PATH.map { |d| "-I#{d}" }, *args]
    out, st = Open3.capture2e({ "RUBYOPT" => rubyopt }.merge(env), *cmd)
    [out, st]
  end

  # child_json: runs a script in a child; its last line is JSON.
  def child_json(script, *args)
    out, st = child(*args, "-rjson", "-e", script)
    assert st.success?, "child failed (#{st}):\n#{out}"
    JSON.parse(out.lines.last)
  end

  def assert_contract(out, st)
    assert st.success?, "digest_contract.rb failed (#{st}):\n#{out}"
    summary = out[/^(\d+) runs, \d+ assertions, 0 failures, 0 errors, 0 skips$/]
    assert summary, "no clean minitest summary in:\n#{out}"
    assert_operator Integer(Regexp.last_match(1)), :>=, 15, out
  end

  def test_the_contract_holds_for_the_stock_digests
    assert_contract(*child(CONTRACT, env: { "HASHBATCH_CONTRACT_EXPECT" => "stock" }))
  end

  def test_the_contract_holds_with_the_dropin
    assert_contract(*child("-rhashbatch/digest", CONTRACT, env: { "HASHBATCH_CONTRACT_EXPECT" => "dropin" }))
  end

  HOOKED = <<~RUBY
    def hooked = [Digest::SHA1, Digest::SHA1.singleton_class, OpenSSL::Digest, OpenSSL::Digest::SHA1.singleton_class]
      .flat_map(&:ancestors).map(&:name).compact.grep(/\\AHashbatch::/)
  RUBY

  def test_off_unless_asked_for
    got = child_json(<<~RUBY, "-rhashbatch", "-ropenssl")
      #{HOOKED}
      puts JSON.generate(replaced: Hashbatch.digest_replaced?, hooked: hooked,
                         update: Digest::SHA1.instance_method(:update).owner.name,
                         openssl_update: OpenSSL::Digest::SHA1.instance_method(:update).owner.name)
    RUBY
    assert_equal({ "replaced" => false, "hooked" => [], "update" => "Digest::Base",
                   "openssl_update" => "OpenSSL::Digest" }, got)
  end

  def test_installs_once_from_many_threads
    got = child_json(<<~RUBY, "-rhashbatch")
      #{HOOKED}
      old = Digest::SHA1.new << "ab"
      results = Array.new(8) { Thread.new { Hashbatch.replace_digest! } }.map(&:value)
      again = Hashbatch.replace_digest!
      require "hashbatch/digest"
      old << "c"
      puts JSON.generate(results: results.sort_by(&:to_s), again: again, replaced: Hashbatch.digest_replaced?,
                         hooked: hooked.sort, old: old.hexdigest)
    RUBY
    assert_equal [false] * 7 + [true], got["results"], "one call installs it"
    assert_equal false, got["again"]
    assert got["replaced"]
    assert_equal %w[Hashbatch::DigestDropin::DigestSHA1Hooks Hashbatch::DigestDropin::DigestSHA1OneShot
                    Hashbatch::DigestDropin::OpenSSLDigestHooks Hashbatch::DigestDropin::OpenSSLSHA1OneShot],
                 got["hooked"], "each hook prepended once"
    assert_equal "a9993e364706816aba3e25717850c26c9cd0d89d", got["old"],
                 "an object made before the drop-in keeps its data"
  end

  # Each way in, with a 4 MiB string (past Hashbatch::SHA1's 256 KiB, always
  # released): how many hashing calls ran without the GVL, and the digest.
  GVL_SCRIPT = <<~RUBY
    big = ("g" * (4 << 20)).freeze
    ways = {
      "Digest::SHA1.hexdigest" => -> { Digest::SHA1.hexdigest(big) },
      "Digest::SHA1.base64digest" => -> { Digest::SHA1.base64digest(big).unpack1("m0").unpack1("H*") },
      "Digest::SHA1#update" => -> { Digest::SHA1.new.update(big).hexdigest },
      "Digest::SHA1 subclass" => -> { Class.new(Digest::SHA1).hexdigest(big) },
      "OpenSSL::Digest::SHA1.hexdigest" => -> { OpenSSL::Digest::SHA1.hexdigest(big) },
      "OpenSSL::Digest::SHA1.new(data)" => -> { OpenSSL::Digest::SHA1.new(big).hexdigest },
      "OpenSSL::Digest.new(SHA1) <<" => -> { (OpenSSL::Digest.new("SHA1") << big).hexdigest }
    }
    counts = ways.transform_values do |way|
      before = Hashbatch.gvl_released_calls(:hash)
      hex = way.call
      [Hashbatch.gvl_released_calls(:hash) - before, hex]
    end
    puts JSON.generate(counts)
  RUBY

  def test_big_inputs_are_hashed_without_the_gvl
    skip "this extension keeps no Hashbatch.gvl_released_calls count" unless Hashbatch.respond_to?(:gvl_released_calls)

    want = G_4_MIB
    stock = child_json(GVL_SCRIPT, "-rhashbatch", "-ropenssl")
    dropin = child_json(GVL_SCRIPT, "-rhashbatch/digest")
    assert_equal stock.keys, dropin.keys
    stock.each do |way, (released, hex)|
      assert_equal want, hex, "stock #{way}"
      assert_equal 0, released, "stock #{way} released the GVL? (the count is not ours alone)"
    end
    dropin.each do |way, (released, hex)|
      assert_equal want, hex, "drop-in #{way}"
      assert_operator released, :>=, 1, "drop-in #{way} hashed holding the GVL"
    end
  end

  def test_512_mib_in_one_update_is_right_with_the_dropin
    got = child_json(<<~RUBY, "-rhashbatch/digest")
      big = "a" * (512 << 20)
      puts JSON.generate([Digest::SHA1.hexdigest(big), (Digest::SHA1.new << big).hexdigest])
    RUBY
    assert_equal [A_512_MIB, A_512_MIB], got
  end
end
