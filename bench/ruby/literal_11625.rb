# frozen_string_literal: true

# literal_11625.rb - the program of Ruby Feature #11625 exactly as it was
# published (feature11625/test.rb: one String pushed 600,000 times, then
# THREADS threads popping it), run as separate processes and timed two
# ways: the whole process (as its author timed it, `time ruby test.rb`)
# and the threads' phase (feature11625/phase_timer.rb, loaded with -r).
# Rows, at THREADS=1, 2 and 4:
#   stock            ruby test.rb
#   drop-in          ruby -rhashbatch/digest test.rb
#   Hashbatch::SHA1  the same program with Digest::SHA1 replaced by
#                    Hashbatch::SHA1 (and -rhashbatch)
# Every run of every row is interleaved with the others (REPS rounds), so
# machine noise spreads over all; each cell is a median, and every ratio
# is to stock THREADS=1 measured in the same rounds.
#
# Usage: ruby bench/ruby/literal_11625.rb GEM_LIB EXT_LIB
#        (bench/ruby/literal_11625.sh BUILD_DIR builds the extension first)
#   env: REPS (5), THREADS ("1 2 4"), SIZE (4096)
require "etc"
require "open3"
require "rbconfig"
require "tmpdir"

GEM_LIB, EXT_LIB = ARGV
abort "usage: literal_11625.rb GEM_LIB EXT_LIB" unless EXT_LIB
REPS = Integer(ENV.fetch("REPS", 5))
THREADS = ENV.fetch("THREADS", "1 2 4").split.map { |t| Integer(t) }
SIZE = ENV.fetch("SIZE", "4096")
HERE = File.join(__dir__, "feature11625")
PROGRAM = File.join(HERE, "test.rb")
RUBY = RbConfig.ruby

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def median(a)
  s = a.sort
  s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
end

# [whole-process seconds, phase seconds] of one run.
def run(args, threads)
  env = { "THREADS" => threads.to_s, "SIZE" => SIZE }
  t0 = now
  _, err, st = Open3.capture3(env, RUBY, "-r#{File.join(HERE, 'phase_timer.rb')}", *args)
  wall = now - t0
  abort "#{args.join(' ')} THREADS=#{threads} failed: #{err}" unless st.success?
  phase = err[/^phase ([0-9.]+)$/, 1] or abort "no phase printed by #{args.join(' ')}: #{err}"
  [wall, Float(phase)]
end

Dir.mktmpdir do |dir|
  renamed = File.join(dir, "test_hashbatch_sha1.rb")
  File.write(renamed, File.read(PROGRAM).gsub("Digest::SHA1.hexdigest", "Hashbatch::SHA1.hexdigest"))
  gem = ["-I", GEM_LIB, "-I", EXT_LIB]
  rows = {
    "stock Digest::SHA1" => [PROGRAM],
    "drop-in (-rhashbatch/digest)" => [*gem, "-rhashbatch/digest", PROGRAM],
    "Hashbatch::SHA1" => [*gem, "-rhashbatch", renamed]
  }
  times = Hash.new { |h, k| h[k] = [] }
  REPS.times do
    rows.each { |name, args| THREADS.each { |t| times[[name, t]] << run(args, t) } }
  end
  model = `lscpu 2>/dev/null`[/^Model name:\s*(.+)$/, 1] || "unknown CPU"
  puts "# #{Time.now.utc.strftime('%Y-%m-%d %H:%M UTC')}; #{model.strip}, #{Etc.nprocessors} CPUs; " \
       "#{RUBY_DESCRIPTION}; SIZE=#{SIZE}; medians of #{REPS}"
  stock_wall = median(times[["stock Digest::SHA1", 1]].map(&:first))
  stock_phase = median(times[["stock Digest::SHA1", 1]].map(&:last))
  puts "| program | THREADS | process s | phase s | phase vs own T=1 | phase vs stock T=1 (#{format('%.3f', stock_phase)} s) | process vs stock T=1 (#{format('%.3f', stock_wall)} s) |"
  puts "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
  rows.each_key do |name|
    own1 = median(times[[name, THREADS.first]].map(&:last))
    THREADS.each do |t|
      wall = median(times[[name, t]].map(&:first))
      phase = median(times[[name, t]].map(&:last))
      puts format("| %s | %d | %.3f | %.3f | %.2fx | %.2fx | %.2fx |", name, t, wall, phase,
                  own1 / phase, stock_phase / phase, stock_wall / wall)
    end
  end
end
