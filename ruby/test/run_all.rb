# frozen_string_literal: true

# Runs every test_*.rb beside this file (what the ruby_gem ctest tests run).
# With HB_MINITEST_SKIPS set to a file, each skipped test is appended to it
# ("<suite>: Class#test: reason"), so ctest can report a run with skips as
# a SKIP (ruby/CMakeLists.txt) instead of a pass; a skip never passes
# silently.
require "minitest"

module Minitest
  # Collects the skipped results and appends them to HB_MINITEST_SKIPS.
  class HashbatchSkipsReporter < AbstractReporter
    def initialize(path)
      super()
      @path = path
      @skips = []
    end

    def record(result)
      @skips << "#{result.klass}##{result.name}: #{result.failure.message}" if result.skipped?
    end

    def report
      return if @skips.empty?

      where = File.expand_path(__dir__)
      File.open(@path, "a") { |f| @skips.each { |s| f.puts("#{where}: #{s}") } }
      @skips.each { |s| warn "minitest SKIP: #{s}" }
    end
  end

  def self.plugin_hashbatch_skips_init(_options)
    path = ENV.fetch("HB_MINITEST_SKIPS", "")
    reporter << HashbatchSkipsReporter.new(path) unless path.empty?
  end
end
Minitest.load_plugins # the installed ones first: a non-empty list stops their loading
Minitest.extensions << "hashbatch_skips"

require "minitest/autorun"
Dir[File.join(__dir__, "test_*.rb")].sort.each { |f| require f }
