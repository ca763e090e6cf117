# frozen_string_literal: true

# Loaded with -r before the Feature #11625 program: prints to stderr how
# long its threads' phase took (from the first Thread.new to exit, when
# the threads are joined), so the program itself stays unchanged.
module PhaseTimer
  @start = nil
  class << self
    attr_accessor :start
  end

  # Thread.new, noting when the first thread started.
  module FirstThread
    def new(*args, &block)
      PhaseTimer.start ||= Process.clock_gettime(Process::CLOCK_MONOTONIC)
      super
    end
  end
end
Thread.singleton_class.prepend(PhaseTimer::FirstThread)
at_exit do
  t = PhaseTimer.start
  warn format("phase %.6f", Process.clock_gettime(Process::CLOCK_MONOTONIC) - t) if t
end
