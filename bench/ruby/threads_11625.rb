# frozen_string_literal: true

# threads_11625.rb - the Ruby Feature #11625 workload at THREADS=1, 2, 4:
# N strings of SIZE bytes pushed through a Queue by the main thread to
# THREADS worker threads, each calling X.hexdigest(s), for
#   X = Digest::SHA1 (stock), OpenSSL::Digest::SHA1, Hashbatch::SHA1, and
#   stock Digest::SHA1 again with the drop-in loaded
#   (require "hashbatch/digest"; a row says so if that file is absent);
# then Hashbatch.hexdigest_many over the same strings (one call).
# Each row: the median of REPS runs of wall time (CLOCK_MONOTONIC) and of
# the process's user CPU (Process.times) over the run; the runs of all rows
# are interleaved so machine noise spreads over them. The drop-in rows run
# after every other row (loading it changes Digest::SHA1 for good).
# Every hasher's digests are checked against OpenSSL once, untimed.
# Prints the machine (lscpu model, CPUs), Hashbatch.gvl_parameters (what
# the gem measured here) and one Markdown table.
#
# Usage: ruby -I<gem lib> -I<ext dir> bench/ruby/threads_11625.rb
#        (bench/ruby/threads_11625.sh BUILD_DIR builds the extension first)
#   env: N (600000), SIZE (4096), REPS (5), THREADS ("1 2 4"),
#        ONLY (regexp of row names to run)
require "digest"
require "openssl"
require "etc"
require "hashbatch"

N = Integer(ENV.fetch("N", 600_000))
SIZE = Integer(ENV.fetch("SIZE", 4096))
REPS = Integer(ENV.fetch("REPS", 5))
THREADS = ENV.fetch("THREADS", "1 2 4").split.map { |t| Integer(t) }
ONLY = Regexp.new(ENV.fetch("ONLY", "."))

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def user_cpu = Process.times.utime

# Distinct strings (each its own buffer): a unique 8-byte prefix and a
# slice of random data.
def make_strings
  base = Random.new(11_625).bytes(SIZE + 65_536)
  Array.new(N) { |i| format("%08d", i) << base.byteslice((i * 61) % 65_536, SIZE - 8) }
end

# The #11625 loop: the main thread feeds a Queue, `threads` workers hash.
def queue_run(klass, strings, threads)
  q = Queue.new
  workers = Array.new(threads) do
    Thread.new do
      while (s = q.pop)
        klass.hexdigest(s)
      end
    end
  end
  strings.each { |s| q << s }
  threads.times { q << nil }
  workers.each(&:join)
end

# measure: [wall s, user CPU s] of one call of the block.
def measure
  GC.start
  t0 = now
  u0 = user_cpu
  yield
  [now - t0, user_cpu - u0]
end

def median(a)
  s = a.sort
  s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
end

def machine
  model = `lscpu 2>/dev/null`[/^Model name:\s*(.+)$/, 1] || "unknown CPU"
  "#{model.strip}, #{Etc.nprocessors} CPUs"
end

def check(name, strings, want)
  got = yield(strings)
  abort "#{name} gives wrong digests" unless got == want
end

strings = make_strings
sample = strings.first(2000)
want = sample.map { |s| OpenSSL::Digest::SHA1.hexdigest(s) }
{ "Digest::SHA1" => Digest::SHA1, "Hashbatch::SHA1" => Hashbatch::SHA1 }.each do |name, k|
  check(name, sample, want) { |ss| ss.map { |s| k.hexdigest(s) } }
end
check("Hashbatch.hexdigest_many", sample, want) { |ss| Hashbatch.hexdigest_many(ss) }

rows = {}
[["Digest::SHA1", Digest::SHA1], ["OpenSSL::Digest::SHA1", OpenSSL::Digest::SHA1],
 ["Hashbatch::SHA1", Hashbatch::SHA1]].each do |name, klass|
  THREADS.each { |t| rows["#{name} THREADS=#{t}"] = -> { queue_run(klass, strings, t) } }
end
rows["Hashbatch.hexdigest_many"] = -> { Hashbatch.hexdigest_many(strings) }
rows.select! { |name, _| name.match?(ONLY) }

results = Hash.new { |h, k| h[k] = [] }
REPS.times { rows.each { |name, run| results[name] << measure(&run) } }

dropin = "Digest::SHA1 + hashbatch/digest"
notes = []
if "#{dropin} THREADS=1".match?(ONLY)
  begin
    require "hashbatch/digest"
    check(dropin, sample, want) { |ss| ss.map { |s| Digest::SHA1.hexdigest(s) } }
    REPS.times do
      THREADS.each { |t| results["#{dropin} THREADS=#{t}"] << measure { queue_run(Digest::SHA1, strings, t) } }
    end
  rescue LoadError => e
    notes << "#{dropin}: not measured, hashbatch/digest is absent (#{e.message})"
  end
end

puts "# #{Time.now.utc.strftime('%Y-%m-%d %H:%M UTC')}; #{machine}; load: #{File.read('/proc/loadavg').split.first(3).join(' ')}"
puts "# #{RUBY_DESCRIPTION}; #{OpenSSL::OPENSSL_LIBRARY_VERSION}; hashbatch #{Hashbatch::LIBRARY_VERSION}"
puts "# N=#{N} SIZE=#{SIZE} REPS=#{REPS}; default engine: #{Hashbatch.default_engine_description}"
puts "# Hashbatch.gvl_parameters: #{Hashbatch.gvl_parameters.inspect}" if Hashbatch.respond_to?(:gvl_parameters)
notes.each { |n| puts "# #{n}" }
stock = results.key?("Digest::SHA1 THREADS=1") ? median(results["Digest::SHA1 THREADS=1"].map(&:first)) : nil
puts
puts format("| %-42s | %8s | %15s | %10s | %8s |", "workload", "wall s", "min..max s", "user CPU s", "vs stock")
puts "|#{'-' * 44}|#{'-' * 10}|#{'-' * 17}|#{'-' * 12}|#{'-' * 10}|"
results.each do |name, runs|
  walls = runs.map(&:first)
  wall = median(walls)
  ratio = stock ? format("%.2fx", stock / wall) : "-"
  puts format("| %-42s | %8.3f | %6.3f..%-6.3f | %10.3f | %8s |", name, wall, walls.min, walls.max,
              median(runs.map(&:last)), ratio)
end
puts "# load at end: #{File.read('/proc/loadavg').split.first(3).join(' ')}"
