// SHA-256 against the FIPS 180-4 / NIST test vectors, streamed in pieces and from a file.
#include <catch2/catch.hpp>

#include <string>

#include "simmer/core/sha256.hpp"
#include "temp_dir.hpp"

using namespace simmer;

TEST_CASE("SHA-256 gives the NIST test vectors", "[sha256]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  CHECK(sha256_hex(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // The same bytes in uneven pieces (across the 64-byte blocks and the length padding).
  Sha256 pieces;
  for (std::size_t at = 0, n = 1; at < million.size(); at += n, n = n % 97 + 13) {
    const std::size_t take = std::min(n, million.size() - at);
    pieces.update(reinterpret_cast<const unsigned char*>(million.data() + at), take);
  }
  CHECK(pieces.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("a file's fingerprint is its size and SHA-256, and a missing file is named", "[sha256]") {
  test::TempDir dir("sha256");
  const std::string path = dir.write("data.csv", "abc");
  const FileFingerprint f = fingerprint_file(path);
  CHECK(f.size == 3);
  CHECK(f.sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK_THROWS_WITH(fingerprint_file(dir.path("missing.csv")), Catch::Contains("missing.csv"));
}
