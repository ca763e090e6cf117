# frozen_string_literal: true

module Hashbatch
  # The gem's version; follows libhashbatch's (HB_VERSION_STRING).
  VERSION = "0.1.0"
end
