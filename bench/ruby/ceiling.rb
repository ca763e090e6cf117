# frozen_string_literal: true

# ceiling.rb - the fastest THREADS=2 can be for the Feature #11625 workload
# on this machine, from parts measured side by side (medians of REPS):
#   C1, C2  hashing N separate SIZE-byte buffers in C (ceiling.c), 1 and 2
#           threads: no Ruby at all;
#   R1      one Ruby thread calling Hashbatch::SHA1.hexdigest on each
#           string, GVL held (hashing + the Ruby work of a call);
#   Q       the Queue loop with a hasher that does nothing;
#   P       the main thread pushing the N strings into a Queue nobody pops;
#   S       stock Digest::SHA1 through the Queue, THREADS=1 (the baseline).
# Ruby work that needs the GVL: G = (R1 - C1) + Q; it runs on one core at a
# time, beside the other thread's hashing, except the push: Ruby 3.1 leaves
# the GVL with a thread that never blocks until its 100 ms time slice ends,
# so the workers pop nothing while the main thread pushes (measured: 0 of
# 600,000 popped by the end of a 23 ms push), and P runs alone. On 2 cores
# THREADS=2 takes at least P + max(G - P, (2*C2 + G - P) / 2) seconds; S
# divided by that is the best
# ratio any GVL-releasing SHA-1 can reach here. (R1 - C1 counts as Ruby
# work what may partly be slower hashing of Ruby's strings, so the script
# also prints the bound if every Ruby step but the Queue cost nothing:
# (2*C2 + Q) / 2.)
#
# With ONE_STRING=1, the floor of the Feature's program as it was written:
# one String pushed N times before the threads start (so no push overlaps
# them: P is left out), popped with pop(true) until the queue is empty; C1
# and C2 hash one buffer N times, R1 and Q use the one String.
#
# Usage: CEILING_BIN=<built ceiling.c> ruby -I<gem lib> -I<ext dir> bench/ruby/ceiling.rb
#   env: N (600000), SIZE (4096), REPS (3), ONE_STRING (0)
require "digest"
require "hashbatch"

N = Integer(ENV.fetch("N", 600_000))
SIZE = Integer(ENV.fetch("SIZE", 4096))
REPS = Integer(ENV.fetch("REPS", 3))
BIN = ENV.fetch("CEILING_BIN") { abort "set CEILING_BIN to the built bench/ruby/ceiling.c" }

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
def median(a) = a.sort[a.size / 2]

# Does nothing but return a 40-character string, as hexdigest would.
module NullHash
  HEX = ("0" * 40).freeze
  def self.hexdigest(_s) = HEX.dup
end

def queue_run(klass, strings)
  q = Queue.new
  t0 = now
  worker = Thread.new { while (s = q.pop); klass.hexdigest(s); end }
  strings.each { |s| q << s }
  q << nil
  worker.join
  now - t0
end

def push_run(strings)
  q = Queue.new
  t0 = now
  strings.each { |s| q << s }
  now - t0
end

# The program of the Feature: the queue is filled first, then timed.
def filled_queue_run(klass, strings)
  q = Queue.new
  strings.each { |s| q << s }
  t0 = now
  worker = Thread.new { while (s = (q.pop(true) rescue nil)); klass.hexdigest(s); end }
  worker.join
  now - t0
end

def plain_run(strings)
  t0 = now
  strings.each { |s| Hashbatch::SHA1.hexdigest(s) }
  now - t0
end

c1, c2 = `ONE_STRING=#{ENV.fetch("ONE_STRING", "0")} #{BIN} #{N} #{SIZE} #{REPS} 1 2`.lines.map { |l| Float(l.split[1]) }
abort "ceiling.c failed" unless $?.success? && c2

ONE = ENV.fetch("ONE_STRING", "0") == "1"
if ONE
  store = "x" * SIZE
  strings = Array.new(N, store)
else
  base = Random.new(11_625).bytes(SIZE + 65_536)
  strings = Array.new(N) { |i| format("%08d", i) << base.byteslice((i * 61) % 65_536, SIZE - 8) }
end
Hashbatch::SHA1.gvl_threshold = SIZE + 1 # held: R1 is hashing plus the call
runner = ONE ? method(:filled_queue_run) : method(:queue_run)
rows = { r1: -> { plain_run(strings) }, q: -> { runner.call(NullHash, strings) },
         p: -> { ONE ? 0.0 : push_run(strings) }, s: -> { runner.call(Digest::SHA1, strings) } }
times = Hash.new { |h, k| h[k] = [] }
REPS.times { rows.each { |k, run| GC.start; times[k] << run.call } }
r1, q, pu, s = %i[r1 q p s].map { |k| median(times[k]) }
g = r1 - c1 + q
floor = pu + [g - pu, (2 * c2 + g - pu) / 2].max
dream = (2 * c2 + q) / 2
puts "# #{RUBY_DESCRIPTION}; N=#{N} SIZE=#{SIZE} REPS=#{REPS}#{ONE ? '; one String (the program as written)' : '; distinct strings'}"
puts "| part | seconds |"
puts "|---|---|"
puts format("| C1: C, 1 thread, hashing only | %.3f |", c1)
puts format("| C2: C, 2 threads, hashing only | %.3f |", c2)
puts format("| R1: Ruby loop of Hashbatch::SHA1.hexdigest, GVL held | %.3f |", r1)
puts format("| Q: Queue loop, hasher doing nothing | %.3f |", q)
puts format("| P: the push alone, part of Q | %.3f |", pu)
puts format("| G = R1 - C1 + Q: Ruby work needing the GVL | %.3f |", g)
puts format("| floor for THREADS=2: P + max(G - P, (2*C2 + G - P)/2) | %.3f |", floor)
puts format("| S: stock Digest::SHA1, THREADS=1 | %.3f |", s)
puts format("| best ratio THREADS=2 can reach: S / floor | %.2fx |", s / floor)
puts format("| if all Ruby work but the Queue were free: S / ((2*C2 + Q)/2) | %.2fx |", s / dream)
