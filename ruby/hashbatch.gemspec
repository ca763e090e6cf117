# frozen_string_literal: true

require_relative "lib/hashbatch/version"

Gem::Specification.new do |s|
  s.name = "hashbatch"
  s.version = Hashbatch::VERSION
  s.summary = "SHA-1 over many strings at once, without holding the GVL"
  s.description = <<~TEXT
    Ruby bindings for libhashbatch: Hashbatch::SHA1 (a Digest::Class computed
    with OpenSSL that releases the GVL), and batches hashed by the library's
    engine on OpenCL devices and a pool of CPU threads (Hashbatch.sha1_many,
    Hashbatch::Engine, Hashbatch::Job). Needs libhashbatch installed (found
    through pkg-config) or --with-hashbatch-dir=PREFIX at install time.
  TEXT
  s.authors = ["hashbatch authors"]
  # No license or homepage yet: the project has not chosen them.
  s.required_ruby_version = ">= 3.0"
  s.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "ext/hashbatch/*.{c,h,rb}", "test/*.rb", "hashbatch.gemspec"]
  end
  s.extensions = ["ext/hashbatch/extconf.rb"]
  s.require_paths = ["lib"]
  s.metadata["rubygems_mfa_required"] = "true"
end
