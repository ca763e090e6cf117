# frozen_string_literal: true

# hashbatch.gemspec - the gem's specification. Evaluated in a checkout, it
# first copies the library's sources (host/, kernels/, LICENSE) into
# vendor/libhashbatch/ (tools/libhashbatch_vendor.rb), so a built .gem
# carries them and `gem install hashbatch` needs no libhashbatch installed;
# the tree stays the one copy anyone edits.

require_relative "lib/hashbatch/version"
require_relative "tools/libhashbatch_vendor"

vendored = begin
  HashbatchBuild::Vendor.copy!
rescue SystemCallError => e
  warn "hashbatch.gemspec: cannot refresh vendor/libhashbatch (#{e.message}); using what is there"
  []
end
vendored = HashbatchBuild::Vendor.vendored_files if vendored.empty?

Gem::Specification.new do |s|
  s.name = "hashbatch"
  s.version = Hashbatch::VERSION
  s.summary = "SHA-1 over many strings at once, without holding the GVL"
  s.description = <<~TEXT
    Ruby bindings for libhashbatch: Hashbatch::SHA1 (a Digest::Class computed
    with OpenSSL that releases the GVL), and batches hashed by the library's
    engine on OpenCL devices and a pool of CPU threads (Hashbatch.sha1_many,
    Hashbatch::Engine, Hashbatch::Job). The gem carries the library's
    sources and builds them into the extension when no installed
    libhashbatch is found through pkg-config (needs a C compiler and
    OpenSSL's headers; OpenCL's headers and loader are used when present,
    else the gem hashes on the OpenSSL pool alone). Install with
    --use-system-libraries or --with-hashbatch-dir=PREFIX to link an
    installed libhashbatch instead.
  TEXT
  s.authors = ["hashbatch authors"]
  s.license = "MIT"
  s.required_ruby_version = ">= 3.0"
  s.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "ext/hashbatch/*.{c,h,rb}", "tools/*.rb", "test/*.rb",
        "hashbatch.gemspec", "Rakefile", "Gemfile"] + vendored
  end.uniq.sort
  s.extensions = ["ext/hashbatch/extconf.rb"]
  s.require_paths = ["lib"]
  s.metadata["rubygems_mfa_required"] = "true"
end
