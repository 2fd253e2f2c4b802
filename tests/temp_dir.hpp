#pragma once
/// \file
/// A fresh directory under the system temp dir for one test, removed with everything in it at
/// scope exit, so parallel test runs never see each other's files; TempFile is one file in one.
/// Shared by the C++ tests, with error_of (the message of the simmer::Error a call throws).

#include <zlib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "simmer/core/error.hpp"

namespace simmer::test {

/// The message of the simmer::Error `f` throws (fails the test when it throws nothing).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const simmer::Error& e) {
    return e.what();
  }
  FAIL("expected a simmer::Error");
  return {};
}

class TempDir {
 public:
  /// `prefix` names the test in the directory name, e.g. "csv" -> simmer_test_csv_<n>_<k>.
  explicit TempDir(const std::string& prefix) {
    static std::atomic<int> counter{0};
    std::random_device entropy;
    path_ = std::filesystem::temp_directory_path() /
            ("simmer_test_" + prefix + "_" + std::to_string(entropy()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// Writes `content` byte for byte (binary, so "\r\n" stays CRLF), gzip-compressed when the
  /// name ends in ".gz", and returns the path.
  [[nodiscard]] std::string write(const std::string& name, const std::string& content) const {
    const std::string file = path(name);
    if (name.ends_with(".gz")) {
      gzFile gz = gzopen(file.c_str(), "wb");
      REQUIRE(gz != nullptr);
      if (!content.empty()) {
        REQUIRE(gzwrite(gz, content.data(), static_cast<unsigned>(content.size())) == static_cast<int>(content.size()));
      }
      REQUIRE(gzclose(gz) == Z_OK);
    } else {
      std::ofstream out(file, std::ios::binary);
      out << content;
    }
    return file;
  }
  [[nodiscard]] std::string path(const std::string& name) const { return (path_ / name).string(); }
  [[nodiscard]] std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

/// One file, `name` holding `content` (TempDir::write), in a TempDir of its own.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& content) : dir_(name), path_(dir_.write(name, content)) {}
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  TempDir dir_;
  std::string path_;
};

}  // namespace simmer::test
