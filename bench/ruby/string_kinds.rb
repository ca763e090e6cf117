# frozen_string_literal: true

# string_kinds.rb - what one Hashbatch::SHA1.hexdigest costs for each kind
# of String, so that each kind's path (pin.c, sha1_class.c) is chosen from
# a measurement:
#   frozen     nothing to hold: hashed as it is
#   unfrozen   a String of its own: locked, its reader counted (pin.c)
#   substring  byteslice of a 1 MiB buffer, sharing its bytes: locked the same way
#   embedded   up to 23 bytes inside the object: below gvl_threshold, hashed
#              holding the GVL, nothing held (sizes under 24 only)
#   copied     the path a String locked by someone else takes: a private
#              frozen copy of its bytes (Hashbatch::Testing.lock_string
#              stands for that other owner)
# Each row times CALLS calls on one thread (ns per call), and 2 threads
# hashing that one String at once (the Feature #11625 program's shape;
# MB/s). Medians of REPS interleaved runs. Private copies are counted, so a
# row that copies when it should not shows it.
#
# Usage: ruby -I<gem lib> -I<ext dir> bench/ruby/string_kinds.rb
#   env: SIZES ("16 1024 4096 65536"), BYTES (134217728), REPS (5)
require "hashbatch"

SIZES = ENV.fetch("SIZES", "16 1024 4096 65536").split.map { |s| Integer(s) }
BYTES = Integer(ENV.fetch("BYTES", 128 << 20))
REPS = Integer(ENV.fetch("REPS", 5))

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def median(a) = a.sort[a.size / 2]

BUFFER = Random.new(11_625).bytes(1 << 20)

# string_of: a String of `kind` and `size` bytes (its own object each time).
def string_of(kind, size)
  case kind
  when :frozen then BUFFER.byteslice(0, size).b.freeze
  when :unfrozen, :copied, :embedded then String.new(BUFFER.byteslice(0, size), capacity: size + 1)
  when :substring then BUFFER.byteslice(4096, size)
  end
end

# calls: hexdigest calls that hash BYTES in total (at least 100,000 for
# tiny strings, whose cost is the call itself).
def calls_for(size) = [BYTES / size, 100_000].max

def time_threads(str, threads, calls)
  each = calls / threads
  t0 = now
  Array.new(threads) { Thread.new { each.times { Hashbatch::SHA1.hexdigest(str) } } }.each(&:join)
  now - t0
end

def run(kind, size, threads)
  str = string_of(kind, size)
  Hashbatch::Testing.lock_string(str) if kind == :copied
  calls = calls_for(size)
  copies_before = Hashbatch::Testing.shared_readers[2]
  seconds = time_threads(str, threads, calls)
  copies = Hashbatch::Testing.shared_readers[2] - copies_before
  Hashbatch::Testing.unlock_string(str) if kind == :copied
  [seconds, copies]
end

def kinds_for(size) = size < 24 ? %i[embedded frozen copied] : %i[frozen unfrozen substring copied]

puts "# #{RUBY_DESCRIPTION}; gvl_threshold #{Hashbatch::SHA1.gvl_threshold}; " \
     "BYTES=#{BYTES} REPS=#{REPS}; uptime #{`uptime`.strip}"
puts "| size | kind | 1 thread ns/call | 2 threads MB/s | copies per call |"
puts "|---:|---|---:|---:|---:|"
SIZES.each do |size|
  kinds = kinds_for(size)
  t = Hash.new { |h, k| h[k] = [] }
  copies = Hash.new(0)
  REPS.times do
    kinds.each do |kind|
      [1, 2].each do |threads|
        s, c = run(kind, size, threads)
        t[[kind, threads]] << s
        copies[kind] = c.fdiv(calls_for(size) / threads * threads) if threads == 1
      end
    end
  end
  calls = calls_for(size)
  kinds.each do |kind|
    ns = median(t[[kind, 1]]) / calls * 1e9
    mbs = size * (calls / 2 * 2) / median(t[[kind, 2]]) / 1e6
    printf("| %d | %s | %.0f | %.0f | %.2f |\n", size, kind, ns, mbs, copies[kind])
  end
end
