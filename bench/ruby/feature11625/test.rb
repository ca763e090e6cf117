# The program of Ruby Feature #11625 ("Unlock GVL for SHA1 calculations"),
# as its author ran it: THREADS=4 SIZE=4096 time ruby test.rb. One String
# is pushed 600,000 times into a Queue, then THREADS threads pop it and
# hash it with Digest::SHA1 until the queue is empty. Kept unchanged here:
# literal_11625.rb runs it as it is (and, for the Hashbatch::SHA1 row, with
# that one name replaced).
require 'digest/sha1'
require 'thread'

threads = (ENV['THREADS'] || 1).to_i
size = (ENV['SIZE'] || 4096).to_i

queue = Queue.new
store = 'x' * size
600_000.times { queue.push(store) }

threads.times.map do
  Thread.new do
    while (work = (queue.pop(true) rescue nil))
      Digest::SHA1.hexdigest(work)
    end
  end
end.each(&:join)
