# frozen_string_literal: true

# many_first_call.rb - Hashbatch.hexdigest_many of N distinct SIZE-byte
# strings as the first call of a fresh process (the default engine opens
# inside it: devices found, cost models loaded or measured), against stock
# Digest::SHA1 hashing the same strings through the Feature #11625 queue
# at THREADS=1, also in a fresh process. Each measured in its own child
# process, REPS of each, interleaved; medians, and the ratio.
#
# Usage: ruby -I<gem lib> -I<ext dir> bench/ruby/many_first_call.rb
#   env: N (600000), SIZE (4096), REPS (5)
require "etc"
require "rbconfig"

N = Integer(ENV.fetch("N", 600_000))
SIZE = Integer(ENV.fetch("SIZE", 4096))
REPS = Integer(ENV.fetch("REPS", 5))

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

# The strings of threads_11625.rb: a unique prefix and a slice of random data.
def make_strings
  base = Random.new(11_625).bytes(SIZE + 65_536)
  Array.new(N) { |i| format("%08d", i) << base.byteslice((i * 61) % 65_536, SIZE - 8) }
end

case ARGV[0]
when "first"
  require "hashbatch"
  strings = make_strings
  GC.start
  t0 = now
  Hashbatch.hexdigest_many(strings)
  puts now - t0
  exit
when "stock"
  require "digest"
  strings = make_strings
  GC.start
  q = Queue.new
  t0 = now
  worker = Thread.new { while (s = q.pop); Digest::SHA1.hexdigest(s); end }
  strings.each { |s| q << s }
  q << nil
  worker.join
  puts now - t0
  exit
end

def child(kind)
  out = IO.popen([RbConfig.ruby, *$LOAD_PATH.first(2).flat_map { |d| ["-I", d] }, __FILE__, kind], &:read)
  raise "#{kind} child failed" unless $?.success?

  Float(out)
end

times = { "first" => [], "stock" => [] }
REPS.times { times.each_key { |k| times[k] << child(k) } }
med = ->(a) { a.sort[a.size / 2] }
model = `lscpu 2>/dev/null`[/^Model name:\s*(.+)$/, 1] || "unknown CPU"
puts "# #{Time.now.utc.strftime('%Y-%m-%d %H:%M UTC')}; #{model.strip}, #{Etc.nprocessors} CPUs; " \
     "#{RUBY_DESCRIPTION}; N=#{N} SIZE=#{SIZE}; medians of #{REPS} fresh processes"
puts "| run | seconds (median) | all |"
puts "| --- | ---: | --- |"
puts format("| Hashbatch.hexdigest_many, first call of the process | %.3f | %s |", med[times["first"]],
            times["first"].map { |t| format("%.3f", t) }.join(" "))
puts format("| stock Digest::SHA1, queue, THREADS=1 | %.3f | %s |", med[times["stock"]],
            times["stock"].map { |t| format("%.3f", t) }.join(" "))
puts format("| ratio | %.2fx | |", med[times["stock"]] / med[times["first"]])
