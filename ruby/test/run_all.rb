# frozen_string_literal: true

# Runs every test_*.rb beside this file (what the ruby_gem ctest test runs).
require "minitest/autorun"
Dir[File.join(__dir__, "test_*.rb")].sort.each { |f| require f }
