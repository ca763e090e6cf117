# frozen_string_literal: true

# libhashbatch_build.rb - compiles libhashbatch from its sources into a
# static archive for the gem's extension, without CMake: what extconf.rb
# runs when no installed libhashbatch is wanted or found.
#
# The sources are the CMake build's: every host/src/*.c and
# host/src/*/*.c, less the OpenCL files host/opencl_sources.txt names
# when built without OpenCL (then with its stand-in), plus kernels/sha1.cl
# embedded as C (libhashbatch_embed.rb) when built with it. The flags are
# the CMake build's too: C11, position-independent, hidden visibility, the
# library's definitions and warnings (-Werror when HB_WERROR=1). The SIMD
# files need no flags of their own: their functions carry target
# attributes. Objects mirror the source tree under build_dir (src/mb/x.o),
# are rebuilt only when older than their source or any header, and are
# compiled a few at a time.
# Must not: write outside build_dir, or decide whether to vendor (extconf.rb
# does).
require "fileutils"
require "open3"
require "etc"
require "rbconfig"
require_relative "libhashbatch_embed"

module HashbatchBuild
  class Library
    DEFINES = %w[-D_GNU_SOURCE -DCL_TARGET_OPENCL_VERSION=120 -DOPENSSL_SUPPRESS_DEPRECATED
                 -DNDEBUG].freeze
    # The CMake build's HB_WARNINGS (CMakeLists.txt).
    WARNINGS = %w[-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
                  -Wformat=2 -Wconversion -Wno-sign-conversion -Wundef -Wcast-align -Wvla].freeze
    KERNEL_SYMBOL = "hb_kernel_sha1_source"

    attr_reader :archive

    # root: a tree holding host/ and kernels/ (the checkout or the gem's
    # vendor/libhashbatch); build_dir: where objects and the archive go;
    # cc: the compiler command (an Array); cppflags: extra -I/-D (OpenSSL's
    # include dir, say); opencl: build the OpenCL backend or its stand-in.
    def initialize(root:, build_dir:, cc:, opencl:, cppflags: [], werror: false,
                   jobs: Etc.nprocessors, out: $stdout)
      @host = File.join(root, "host")
      @kernel = File.join(root, "kernels", "sha1.cl")
      @build_dir = File.expand_path(build_dir)
      @cc = Array(cc)
      @opencl = opencl
      @cppflags = cppflags
      @werror = werror
      @jobs = [jobs, 1].max
      @out = out
      @archive = File.join(@build_dir, "libhashbatch.a")
    end

    def include_dir
      File.join(@host, "include")
    end

    # Compiles what is out of date and (re)writes the archive; returns its
    # path. Raises with the compiler's output when a file does not compile.
    def build!
      FileUtils.mkdir_p(@build_dir)
      units = sources.map { |src| [src, object_for(src)] }
      stale = units.reject { |src, obj| up_to_date?(src, obj) }
      @out.puts "libhashbatch: compiling #{stale.size} of #{units.size} files " \
                "(#{@opencl ? 'with' : 'without'} OpenCL) into #{@build_dir}"
      compile_all(stale)
      write_archive(units.map(&:last)) if !stale.empty? || !File.file?(@archive)
      @archive
    end

    # The library's C sources, absolute, in a stable order.
    def sources
      all = Dir[File.join(@host, "src", "*.c"), File.join(@host, "src", "*", "*.c")].sort
      opencl_only, absent = opencl_split
      list = @opencl ? all - absent : all - opencl_only
      list << embedded_kernel if @opencl
      list
    end

    # The compiler's arguments for every source file.
    def flags
      f = %w[-std=c11 -O2 -g -fPIC -fvisibility=hidden -pthread] + DEFINES + WARNINGS
      f << "-DHB_NO_OPENCL=1" unless @opencl
      f << "-Werror" if @werror
      f + ["-I#{include_dir}", "-I#{File.join(@host, 'src')}"] + @cppflags
    end

    private

    # [OpenCL files, their stand-ins] from host/opencl_sources.txt.
    def opencl_split
      lines = File.readlines(File.join(@host, "opencl_sources.txt"), chomp: true)
                  .map(&:strip).reject { |l| l.empty? || l.start_with?("#") }
      absent, opencl_only = lines.partition { |l| l.start_with?("absent:") }
      [opencl_only.map { |l| File.join(@host, l) },
       absent.map { |l| File.join(@host, l.delete_prefix("absent:").strip) }]
    end

    def embedded_kernel
      Embed.write(@kernel, File.join(@build_dir, "kernel_sha1_cl.c"), KERNEL_SYMBOL)
    end

    def object_for(src)
      rel = src.start_with?(@host) ? src.delete_prefix("#{@host}/") : File.basename(src)
      File.join(@build_dir, "obj", rel.sub(/\.c\z/, ".o"))
    end

    def newest_header
      @newest_header ||= Dir[File.join(@host, "**", "*.h")].map { |h| File.mtime(h) }.max
    end

    def up_to_date?(src, obj)
      File.file?(obj) && File.mtime(obj) >= File.mtime(src) && File.mtime(obj) >= newest_header
    end

    # Runs the compiler on every unit, @jobs at a time; raises after all
    # finished if any failed, with each failure's output.
    def compile_all(units)
      queue = Queue.new
      units.each { |u| queue << u }
      failures = []
      lock = Mutex.new
      workers = Array.new([@jobs, units.size].min) do
        Thread.new do
          while (unit = (queue.pop(true) rescue nil))
            ok, text = compile(*unit)
            lock.synchronize do
              @out.print text unless text.empty?
              failures << unit.first unless ok
            end
          end
        end
      end
      workers.each(&:join)
      raise "libhashbatch: #{failures.size} file(s) failed to compile: #{failures.join(', ')}" unless failures.empty?
    end

    def compile(src, obj)
      FileUtils.mkdir_p(File.dirname(obj))
      text, status = Open3.capture2e(*@cc, *flags, "-c", src, "-o", obj)
      [status.success?, text]
    end

    def write_archive(objects)
      FileUtils.rm_f(@archive)
      ar = RbConfig::CONFIG["AR"].to_s.empty? ? "ar" : RbConfig::CONFIG["AR"]
      text, status = Open3.capture2e(ar, "rcs", @archive, *objects)
      raise "libhashbatch: #{ar} failed: #{text}" unless status.success?
    end
  end
end
