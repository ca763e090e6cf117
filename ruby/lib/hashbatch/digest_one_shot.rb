# frozen_string_literal: true

# hashbatch/digest_one_shot.rb - the class-level one-shots the drop-in
# prepends to Digest::SHA1's and OpenSSL::Digest::SHA1's singleton classes
# (hashbatch/digest_dropin.rb installs them).
#
# Owns: Digest::SHA1.digest/hexdigest and OpenSSL::Digest::SHA1.digest/
# hexdigest called on those classes themselves with one argument: they go
# straight to Hashbatch::SHA1.digest/hexdigest (same argument checks,
# same TypeError, same encodings: binary, US-ASCII). base64digest and file
# reach them or the instance hooks as before. Any other call (a subclass,
# other arity) goes to the original (super), which builds an object and so
# reaches the instance hooks.
# Must not: take the short path for a subclass (its initialize, update or
# finish may differ).
module Hashbatch
  module DigestDropin
    module DigestSHA1OneShot
      def digest(*args)
        return super unless args.size == 1 && equal?(::Digest::SHA1)

        Hashbatch::SHA1.digest(args[0])
      end

      def hexdigest(*args)
        return super unless args.size == 1 && equal?(::Digest::SHA1)

        Hashbatch::SHA1.hexdigest(args[0])
      end
    end

    module OpenSSLSHA1OneShot
      def digest(*args)
        return super unless args.size == 1 && equal?(::OpenSSL::Digest::SHA1)

        Hashbatch::SHA1.digest(args[0])
      end

      def hexdigest(*args)
        return super unless args.size == 1 && equal?(::OpenSSL::Digest::SHA1)

        Hashbatch::SHA1.hexdigest(args[0])
      end
    end
  end
end
