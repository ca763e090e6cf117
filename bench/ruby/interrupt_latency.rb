# frozen_string_literal: true

# interrupt_latency.rb - how long an interrupted wait on the engine takes
# to give control back: Timeout.timeout(T) around a batch that takes
# seconds, and Thread#kill of a thread waiting on one; REPS times each.
# Latency = time from the interrupt to the exception (or the killed thread
# ending), including the cancel of the abandoned job.
# Usage: ruby -I<gem lib> -I<ext dir> bench/ruby/interrupt_latency.rb
#   env: REPS (10), T (0.2)
require "hashbatch"
require "timeout"

REPS = Integer(ENV.fetch("REPS", 10))
T = Float(ENV.fetch("T", 0.2))
def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

piece = ("L" * (4 << 20)).freeze
batch = [piece] * 1024 # 4 GiB
engine = Hashbatch::Engine.new(backend: "cpu", cpu_threads: 1)
lat = { "Timeout.timeout" => [], "Thread#kill" => [] }
REPS.times do
  t0 = now
  begin
    Timeout.timeout(T) { engine.sha1_many(batch) }
  rescue Timeout::Error
    lat["Timeout.timeout"] << now - t0 - T
  end
  th = Thread.new { engine.sha1_many(batch) }
  sleep T
  t0 = now
  th.kill
  th.join
  lat["Thread#kill"] << now - t0
end
engine.close
puts "# #{RUBY_DESCRIPTION}; REPS=#{REPS}; uptime #{`uptime`.strip}"
puts "| interrupt | median ms | max ms |"
puts "|---|---:|---:|"
lat.each do |k, v|
  s = v.sort
  printf("| %s | %.1f | %.1f |\n", k, s[s.size / 2] * 1000, s[-1] * 1000)
end
