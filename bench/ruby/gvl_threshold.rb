# frozen_string_literal: true

# gvl_threshold.rb - where releasing the GVL around one Hashbatch::SHA1
# hash starts to pay. For each input size, BYTES of hashing in total is
# split over calls of that size and timed four ways: on 1 and on 2 threads,
# with the GVL held for every call (gvl_threshold above the size) and
# released for every call (gvl_threshold 0, gvl_slots 1024: a turn each). Releasing
# costs a little on 1 thread and gains on 2 once the hash outweighs the
# hand-off. Medians of REPS interleaved runs.
#
# Usage: ruby -I<gem lib> -I<ext dir> bench/ruby/gvl_threshold.rb
#   env: BYTES (268435456), REPS (5), SIZES ("256 512 1024 2048 4096 8192 16384 65536")
require "hashbatch"

BYTES = Integer(ENV.fetch("BYTES", 256 << 20))
REPS = Integer(ENV.fetch("REPS", 5))
SIZES = ENV.fetch("SIZES", "256 512 1024 2048 4096 8192 16384 65536").split.map { |s| Integer(s) }

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def median(a) = a.sort[a.size / 2]

# run: seconds for `threads` threads to hash BYTES in calls of `size` bytes.
def run(size, threads, release)
  Hashbatch::SHA1.gvl_threshold = release ? 0 : size + 1
  Hashbatch::SHA1.gvl_slots = 1024 # the most: every call releases
  calls = BYTES / size / threads
  strs = Array.new(threads) { |i| (i.to_s * size)[0, size] }
  t0 = now
  Array.new(threads) { |i| Thread.new { s = strs[i]; calls.times { Hashbatch::SHA1.hexdigest(s) } } }.each(&:join)
  now - t0
end

defaults = [Hashbatch::SHA1.gvl_threshold, Hashbatch::SHA1.gvl_slots]
puts "# #{RUBY_DESCRIPTION}; BYTES=#{BYTES} REPS=#{REPS}; uptime #{`uptime`.strip}"
puts "| size | 1 thread hold ns/call | 1 thread release ns/call | 2 threads hold MB/s | 2 threads release MB/s | release gain (2 thr) | release cost (1 thr) |"
puts "|---:|---:|---:|---:|---:|---:|---:|"
SIZES.each do |size|
  t = Hash.new { |h, k| h[k] = [] }
  REPS.times do
    [[1, false], [1, true], [2, false], [2, true]].each { |th, rel| t[[th, rel]] << run(size, th, rel) }
  end
  calls1 = BYTES / size
  h1, r1, h2, r2 = [[1, false], [1, true], [2, false], [2, true]].map { |k| median(t[k]) }
  printf("| %d | %.0f | %.0f | %.0f | %.0f | %+.0f%% | %+.0f%% |\n", size, h1 / calls1 * 1e9, r1 / calls1 * 1e9,
         BYTES / h2 / 1e6, BYTES / r2 / 1e6, (h2 / r2 - 1) * 100, (r1 / h1 - 1) * 100)
end
Hashbatch::SHA1.gvl_threshold, Hashbatch::SHA1.gvl_slots = defaults
puts "# uptime at end: #{`uptime`.strip}"
