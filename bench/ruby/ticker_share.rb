# frozen_string_literal: true

# ticker_share.rb - do other Ruby threads run while a batch is hashed?
# The loop of issue 29: a thread doing `count += 1; Thread.pass`, counted
# during a `sha1_many` of 200,000 strings of about 2 KB, then during a
# `sleep` as long as that batch took; the share is the first count over
# the second. Rows: the CPU pool at normal priority, the CPU pool with
# priority: :idle (its threads at SCHED_IDLE), the default engine, the
# OpenCL backend; and a control without hashbatch: the loop's ticks in
# 100 ms while `sha1sum /dev/zero` processes (one per CPU) keep every core
# busy, over its ticks in 100 ms with the machine idle. Medians and the
# worst of CALLS calls per row.
# A benchmark, not a test: a CPU share depends on the machine's load.
#
# With PASS=0 the loop is `count += 1` alone: a thread that works and never
# yields, as a request handler would (it is switched out by Ruby's timer).
#
# Usage: ruby -I<gem lib> -I<ext dir> bench/ruby/ticker_share.rb
#   env: CALLS (9), N (200000), PASS (1)
require "etc"
require "hashbatch"

CALLS = Integer(ENV.fetch("CALLS", 9))
N = Integer(ENV.fetch("N", 200_000))
PASS = ENV.fetch("PASS", "1") == "1"

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

# [ticks while the block ran, ticks in a sleep as long, seconds it took]
def ticks_during
  count = 0
  stop = false
  ticker = Thread.new do
    until stop
      count += 1
      Thread.pass if PASS
    end
  end
  sleep 0.01
  c0 = count
  t0 = now
  yield
  took = now - t0
  c1 = count
  sleep took
  c2 = count
  [c1 - c0, c2 - c1, took]
ensure
  stop = true
  ticker&.join
end

def row(name, calls)
  shares = calls.map { |busy, idle, _| idle.zero? ? 0.0 : busy.to_f / idle }
  took = calls.map { |c| c[2] }.sort
  s = shares.sort
  puts format("| %s | %.1f | %d | %.3f | %.3f |", name, took[took.size / 2] * 1000,
              calls.map(&:first).sort[calls.size / 2], s[s.size / 2], s.first)
end

strings = Array.new(N) { |i| format("%08d", i) + ("y" * (2000 + i % 100)) }
engines = {
  "CPU pool, normal priority" => Hashbatch::Engine.new(backend: "cpu"),
  "CPU pool, priority: :idle" => Hashbatch::Engine.new(backend: "cpu", priority: :idle),
  "default engine (auto)" => nil
}
begin
  engines["OpenCL backend"] = Hashbatch::Engine.new(backend: "opencl")
rescue Hashbatch::Error => e
  warn "no OpenCL row: #{e.message}"
end
engines.each_value { |e| e ? e.sha1_many(strings) : Hashbatch.sha1_many(strings) } # warm
results = Hash.new { |h, k| h[k] = [] }
CALLS.times do
  engines.each do |name, e|
    GC.start
    results[name] << ticks_during { e ? e.sha1_many(strings) : Hashbatch.sha1_many(strings) }
  end
end
quiet = Array.new(CALLS) { ticks_during { sleep 0.1 }.first }
hogs = Array.new(Etc.nprocessors) { spawn("sha1sum", "/dev/zero", out: File::NULL) }
begin
  sleep 0.2
  control = Array.new(CALLS) { |i| [ticks_during { sleep 0.1 }.first, quiet[i], 0.1] }
ensure
  hogs.each { |pid| Process.kill(:KILL, pid) }
  hogs.each { |pid| Process.wait(pid) }
end
model = `lscpu 2>/dev/null`[/^Model name:\s*(.+)$/, 1] || "unknown CPU"
puts "# #{Time.now.utc.strftime('%Y-%m-%d %H:%M UTC')}; #{model.strip}, #{Etc.nprocessors} CPUs; " \
     "#{RUBY_DESCRIPTION}; #{N} strings of ~2 KB; #{CALLS} calls a row; " \
     "loop: #{PASS ? '`count += 1; Thread.pass`' : '`count += 1`'}"
puts "| while | batch ms (median) | ticks during (median) | share of a sleep's ticks (median) | worst share |"
puts "| --- | ---: | ---: | ---: | ---: |"
results.each { |name, calls| row(name, calls) }
row("no hashbatch: a 100 ms sleep beside #{Etc.nprocessors} `sha1sum /dev/zero`", control)
engines.each_value { |e| e&.close }
