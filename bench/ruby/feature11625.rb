# frozen_string_literal: true

# feature11625.rb - the workload of Ruby Feature #11625 ("Unlock GVL for
# SHA1 calculations"): N strings of SIZE bytes pushed through a Queue by the
# main thread to THREADS worker threads, each calling X.hexdigest(s), for
# X = Digest::SHA1, OpenSSL::Digest::SHA1, Hashbatch::SHA1 and the
# issue's probe (HashbatchProbe::SHA1, probe/probe.c, when built); then
# Hashbatch.hexdigest_many over the same strings (one call, several
# engines); then benchmark-ips of one SIZE-byte hexdigest.
#
# Usage: ruby -I<gem lib> -I<ext dir> bench/ruby/feature11625.rb
#   env: N (600000), SIZE (4096), REPS (5), THREADS ("1 2 4"),
#        ONLY (regexp of row names to run), IPS (1: run benchmark-ips),
#        GVL_THRESHOLD and GVL_SLOTS (Hashbatch::SHA1's knobs, to explore),
#        EXPLORE (1: also rows hashing each item through an engine job)
# Prints one table: the median of REPS runs per row (runs interleaved, so
# machine noise spreads over all rows), the spread, and ratios to stock
# Digest::SHA1 with THREADS=1. Every digest is checked against
# Digest::SHA1 once, outside the timings.
require "digest"
require "openssl"
require "etc"
require "hashbatch"
begin
  require "hashbatch_probe"
rescue LoadError
  warn "# the probe extension is not built (bench/ruby/run.sh builds it): no probe rows"
end

N = Integer(ENV.fetch("N", 600_000))
SIZE = Integer(ENV.fetch("SIZE", 4096))
REPS = Integer(ENV.fetch("REPS", 5))
THREADS = ENV.fetch("THREADS", "1 2 4").split.map { |t| Integer(t) }
ONLY = Regexp.new(ENV.fetch("ONLY", "."))

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

# Distinct strings (each its own buffer), so the hash reads memory as a
# real workload would: a unique 8-byte prefix and a slice of random data.
def make_strings
  base = Random.new(11_625).bytes(SIZE + 65_536)
  Array.new(N) { |i| format("%08d", i) << base.byteslice((i * 61) % 65_536, SIZE - 8) }
end

# Per-item hashing through an engine's job queue (submit, wait without the
# GVL): the "hand each hash to the pool" design, for comparison (EXPLORE=1).
class EnginePerItem
  def initialize(engine) = @engine = engine
  def hexdigest(s) = @engine.hexdigest_many([s])[0]
end

# The #11625 loop: main thread feeds a Queue, `threads` workers hash.
def queue_run(klass, strings, threads)
  q = Queue.new
  sink = Array.new(threads)
  t0 = now
  workers = Array.new(threads) do |w|
    Thread.new do
      last = nil
      while (s = q.pop)
        last = klass.hexdigest(s)
      end
      sink[w] = last
    end
  end
  strings.each { |s| q << s }
  threads.times { q << nil }
  workers.each(&:join)
  now - t0
end

def many_run(engine, strings)
  t0 = now
  engine ? engine.hexdigest_many(strings) : Hashbatch.hexdigest_many(strings)
  now - t0
end

def median(a)
  s = a.sort
  s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
end

Hashbatch::SHA1.gvl_threshold = Integer(ENV["GVL_THRESHOLD"]) if ENV["GVL_THRESHOLD"]
Hashbatch::SHA1.gvl_slots = Integer(ENV["GVL_SLOTS"]) if ENV["GVL_SLOTS"]
strings = make_strings
puts "# #{RUBY_DESCRIPTION}; #{Etc.nprocessors} CPUs; N=#{N} SIZE=#{SIZE} REPS=#{REPS}"
puts "# OpenSSL #{OpenSSL::OPENSSL_LIBRARY_VERSION}; hashbatch #{Hashbatch::LIBRARY_VERSION}"
puts "# Hashbatch::SHA1 gvl_threshold=#{Hashbatch::SHA1.gvl_threshold} gvl_slots=#{Hashbatch::SHA1.gvl_slots}"
puts "# default engine: #{Hashbatch.default_engine_description}"
puts "# uptime at start: #{`uptime`.strip}"

# correctness, once, untimed
check = strings.first(2000)
want = check.map { |s| Digest::SHA1.hexdigest(s) }
hashers = %w[Digest::SHA1 OpenSSL::Digest::SHA1 Hashbatch::SHA1]
hashers << "HashbatchProbe::SHA1" if defined?(HashbatchProbe)
hashers.drop(1).map { |name| Object.const_get(name) }.each do |k|
  abort "#{k} gives wrong digests" unless check.map { |s| k.hexdigest(s) } == want
end
abort "hexdigest_many gives wrong digests" unless Hashbatch.hexdigest_many(check) == want

engines = {
  "cpu" => -> { Hashbatch::Engine.new(backend: "cpu", verify: "off") },
  "auto/all" => -> { Hashbatch::Engine.new(backend: "auto", device: "all", verify: "off") },
  "opencl" => -> { Hashbatch::Engine.new(backend: "opencl", verify: "off") },
}
rows = {}
hashers.each do |name|
  klass = Object.const_get(name)
  THREADS.each { |t| rows["#{name} THREADS=#{t}"] = -> { queue_run(klass, strings, t) } }
end
if ENV["EXPLORE"] == "1"
  per_item = Hashbatch::Engine.new(backend: "cpu", verify: "off")
  THREADS.each do |t|
    rows["Engine(cpu) per item THREADS=#{t}"] = -> { queue_run(EnginePerItem.new(per_item), strings, t) }
  end
end
rows["Hashbatch.hexdigest_many (default engine)"] = -> { many_run(nil, strings) }
opened = {}
engines.each do |label, open|
  name = "Engine(#{label}).hexdigest_many"
  next unless name.match?(ONLY)

  begin
    opened[label] = open.call
    abort "#{name}: wrong digests" unless opened[label].hexdigest_many(check) == want
    rows[name] = -> { many_run(opened[label], strings) }
  rescue Hashbatch::Error => e
    warn "# #{name}: skipped (#{e.message})"
  end
end
rows.select! { |name, _| name.match?(ONLY) }

times = Hash.new { |h, k| h[k] = [] }
REPS.times do
  rows.each do |name, run|
    GC.start
    times[name] << run.call
  end
end
opened.each_value(&:close)

base = times.key?("Digest::SHA1 THREADS=1") ? median(times["Digest::SHA1 THREADS=1"]) : nil
puts
puts format("| %-42s | %9s | %17s | %8s | %9s |", "workload", "median s", "min..max s", "GB/s", "vs stock")
puts "|#{'-' * 44}|#{'-' * 11}|#{'-' * 19}|#{'-' * 10}|#{'-' * 11}|"
times.each do |name, ts|
  m = median(ts)
  ratio = base ? format("%.2fx", base / m) : "-"
  puts format("| %-42s | %9.3f | %7.3f..%-7.3f | %8.2f | %9s |", name, m, ts.min, ts.max,
              N * SIZE / m / 1e9, ratio)
end
puts "# uptime at end: #{`uptime`.strip}"

if ENV.fetch("IPS", "1") == "1"
  require "benchmark/ips"
  s = strings[0]
  puts
  puts "# benchmark-ips: one #{SIZE}-byte hexdigest on one thread"
  Benchmark.ips do |x|
    x.config(time: 3, warmup: 1)
    x.report("Digest::SHA1.hexdigest") { Digest::SHA1.hexdigest(s) }
    x.report("OpenSSL::Digest::SHA1.hexdigest") { OpenSSL::Digest::SHA1.hexdigest(s) }
    x.report("Hashbatch::SHA1.hexdigest") { Hashbatch::SHA1.hexdigest(s) }
    x.compare!
  end
end
