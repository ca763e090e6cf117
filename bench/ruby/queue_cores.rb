# frozen_string_literal: true

# queue_cores.rb - the Feature #11625 loop with Hashbatch::SHA1 (N strings
# of 4 KiB through a Queue to THREADS threads), reporting wall time and the
# process's CPU time: CPU-s per wall-s is how many cores the threads kept
# busy. Shows whether the threads hash in parallel or convoy on the GVL.
# Usage: ruby -I<gem lib> -I<ext dir> bench/ruby/queue_cores.rb
#   env: N (200000), REPS (3), THREADS ("1 2 4"), SLOTS ("2": gvl_slots
#        values to try, e.g. "1 2 3 64")
require "hashbatch"

N = Integer(ENV.fetch("N", 200_000))
REPS = Integer(ENV.fetch("REPS", 3))
THREADS = ENV.fetch("THREADS", "1 2 4").split.map { |t| Integer(t) }
SLOTS = ENV.fetch("SLOTS", "2").split.map { |s| Integer(s) }

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
def cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)

base = Random.new(1).bytes(4096 + 65_536)
strings = Array.new(N) { |i| format("%08d", i) << base.byteslice((i * 61) % 65_536, 4088) }

def run(strings, threads)
  q = Queue.new
  w0 = now
  c0 = cpu
  workers = Array.new(threads) { Thread.new { while (s = q.pop); Hashbatch::SHA1.hexdigest(s); end } }
  strings.each { |s| q << s }
  threads.times { q << nil }
  workers.each(&:join)
  [now - w0, cpu - c0]
end

puts "# #{RUBY_DESCRIPTION}; N=#{N}; uptime #{`uptime`.strip}"
puts "| gvl_slots | THREADS | wall s | CPU s | cores busy |"
puts "|---:|---:|---:|---:|---:|"
SLOTS.each do |slots|
  Hashbatch::SHA1.gvl_slots = slots
  REPS.times do
    THREADS.each do |t|
      w, c = run(strings, t)
      printf("| %d | %d | %.3f | %.3f | %.2f |\n", slots, t, w, c, c / w)
    end
  end
end
puts "# uptime at end: #{`uptime`.strip}"
