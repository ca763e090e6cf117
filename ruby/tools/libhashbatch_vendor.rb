# frozen_string_literal: true

# libhashbatch_vendor.rb - where the library's sources are, and the copy of
# them the gem carries.
#
# The repository's host/ and kernels/ are the one source of truth. At `gem
# build` (the gemspec) and `rake vendor`, they are copied into
# ruby/vendor/libhashbatch/ in the same layout (host/include, host/src and
# its part folders, host/opencl_sources.txt, kernels/*.cl, LICENSE), which
# git ignores; extconf.rb builds from the tree when it is there and from
# that copy in an installed gem.
# Must not: edit, filter or generate sources (the copy is byte for byte),
# or write anywhere but ruby/vendor/.
require "fileutils"

module HashbatchBuild
  module Vendor
    GEM_ROOT = File.expand_path("..", __dir__)
    REPO_ROOT = File.expand_path("..", GEM_ROOT)
    VENDOR_DIR = File.join(GEM_ROOT, "vendor", "libhashbatch")
    # What the vendored build needs, relative to the repository's root.
    PATTERNS = [
      "host/include/*.h",
      "host/src/*.{c,h}",
      "host/src/*/*.{c,h}",
      "host/opencl_sources.txt",
      "kernels/*.cl",
      "LICENSE"
    ].freeze

    module_function

    # The repository's root when this gem sits in it (a checkout), else nil
    # (an installed or unpacked gem).
    def repo_root
      File.file?(File.join(REPO_ROOT, "host", "include", "hashbatch.h")) ? REPO_ROOT : nil
    end

    # Where to build the library from: the checkout's tree when there is
    # one (never a stale copy), else the copy the gem carries; nil if
    # neither is there.
    def source_root
      return repo_root if repo_root
      File.file?(File.join(VENDOR_DIR, "host", "include", "hashbatch.h")) ? VENDOR_DIR : nil
    end

    # The files PATTERNS match under root, relative to it, sorted.
    def files(root)
      Dir.chdir(root) { PATTERNS.flat_map { |p| Dir[p] }.select { |f| File.file?(f) }.sort }
    end

    # Replaces VENDOR_DIR with a fresh copy of the checkout's files; returns
    # their paths relative to GEM_ROOT ("vendor/libhashbatch/host/..."), or
    # [] outside a checkout (the copy already in the gem stays as it is).
    # The copy is made beside VENDOR_DIR and renamed into place, so a
    # reader never sees half of it.
    def copy!
      root = repo_root or return []
      list = files(root)
      staging = "#{VENDOR_DIR}.#{Process.pid}.tmp"
      FileUtils.rm_rf(staging)
      list.each do |rel|
        FileUtils.mkdir_p(File.dirname(File.join(staging, rel)))
        FileUtils.cp(File.join(root, rel), File.join(staging, rel), preserve: true)
      end
      FileUtils.rm_rf(VENDOR_DIR)
      begin
        File.rename(staging, VENDOR_DIR)
      rescue Errno::ENOTEMPTY, Errno::EEXIST
        FileUtils.rm_rf(staging) # another copy! (same files) got there first
      end
      list.map { |rel| File.join("vendor", "libhashbatch", rel) }
    end

    # The vendored files already in the gem (an installed or unpacked gem,
    # or after copy!), relative to GEM_ROOT.
    def vendored_files
      return [] unless File.directory?(VENDOR_DIR)
      files(VENDOR_DIR).map { |rel| File.join("vendor", "libhashbatch", rel) }
    end
  end
end
