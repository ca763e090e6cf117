# frozen_string_literal: true

# libhashbatch_embed.rb - turns kernels/sha1.cl into the C source the
# library links (hb_kernel_sha1_source and its _size), as
# cmake/embed_file.cmake does for the CMake build: a NUL-terminated byte
# array, twelve bytes a line.
# Must not: change the kernel's bytes, or rewrite an output that is
# already up to date (so make sees nothing new).
module HashbatchBuild
  module Embed
    BYTES_PER_LINE = 12

    module_function

    # The C text holding input's bytes as symbol.
    def c_source(input, symbol)
      bytes = File.binread(input).bytes.map { |b| format("0x%02x,", b) }
      lines = bytes.each_slice(BYTES_PER_LINE).map(&:join)
      <<~C
        /* Generated from #{File.basename(input)} by ruby/tools/libhashbatch_embed.rb; do not edit. */
        #include <stddef.h>
        const char #{symbol}[] = {
        #{(lines + ["0x00"]).join("\n")}
        };
        const size_t #{symbol}_size = sizeof(#{symbol}) - 1;
      C
    end

    # Writes input as symbol into output unless output already says that.
    def write(input, output, symbol)
      text = c_source(input, symbol)
      return output if File.file?(output) && File.read(output) == text
      File.write(output, text)
      output
    end
  end
end
