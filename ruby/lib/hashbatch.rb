# frozen_string_literal: true

# hashbatch: SHA-1 over many strings at once, on libhashbatch's engine
# (OpenCL devices and a pool of OpenSSL threads), with the GVL released
# while the work runs.
#
#   require "hashbatch"
#   Hashbatch::SHA1.hexdigest("abc")          # a Digest::Class, OpenSSL on the CPU
#   Hashbatch.hexdigest_many(["a", "b"])      # the default engine
#   engine = Hashbatch::Engine.new(backend: "cpu")
#   job = engine.submit(strings)              # Hashbatch::Job
#   job.value                                 # Array of 20-byte digests
#
# This file adds the Ruby-side parts; the rest is the C glue in
# ext/hashbatch (hashbatch/hashbatch_ext).
require "digest"
require_relative "hashbatch/version"
require "hashbatch/hashbatch_ext"
require_relative "hashbatch/digest_dropin" # Hashbatch.replace_digest!: off until called

module Hashbatch
  # Base class of every error hashbatch raises for an hb_status.
  class Error
    # The hb_status value (Integer; see Hashbatch::Status).
    attr_reader :status
    # The status's name, e.g. "HB_ERR_DEVICE".
    attr_reader :status_name
    # The library's detail text (OpenCL error name, build log), or "".
    attr_reader :detail
  end

  # An OpenCL device failed; #cl_error is the OpenCL error code (Integer)
  # when the library named one, else nil.
  class DeviceError
    attr_reader :cl_error
  end

  # A forked child has only the thread that called fork: readers of a
  # String that were inside the parent's other threads never leave there,
  # so the child unlocks what they held (pin.c). Ruby 3.1's Process._fork
  # is the hook every fork goes through (Kernel#fork, Process.fork, IO.popen
  # with "-").
  module ForgetReadersAfterFork
    def _fork
      pid = super
      Hashbatch.__forget_readers if pid.zero?
      pid
    end
  end
  Process.singleton_class.prepend(ForgetReadersAfterFork) if Process.respond_to?(:_fork)

  class Engine
    # Opens an engine, yields it and closes it afterwards.
    def self.open(**options)
      engine = new(**options)
      return engine unless block_given?

      begin
        yield engine
      ensure
        engine.close
      end
    end

    def inspect
      closed? ? "#<Hashbatch::Engine closed>" : "#<Hashbatch::Engine #{describe}>"
    end
  end

  class Job
    # The engine the job was submitted to.
    attr_reader :engine
  end

  # One file could not be hashed: #path names it, #errno is the errno
  # (Integer) for an I/O error, else nil. Raised by file_digests, or
  # returned in its result with errors: :return.
  class FileError
    attr_reader :path, :errno
  end

  # Hashbatch.file_digests(paths, hex: false, errors: :raise) and
  # Engine#file_digests exist when the linked libhashbatch has files jobs
  # (hb_submit_files).
end
