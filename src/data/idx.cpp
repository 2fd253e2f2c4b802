#include "simmer/data/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <system_error>

#include "gz_file.hpp"
#include "simmer/core/error.hpp"

namespace simmer::data {
namespace {

namespace fs = std::filesystem;

using detail::gz_reason;
using detail::GzFile;
using detail::open_gz;

/// What a caller expects to find: the magic number and how to name the items in messages.
struct IdxKind {
  std::uint32_t magic = 0;
  const char* items = "";      ///< "images"
  const char* file_kind = "";  ///< "an images file"
};

constexpr IdxKind kImages{kIdxImagesMagic, "images", "an images file"};
constexpr IdxKind kLabels{kIdxLabelsMagic, "labels", "a labels file"};

/// The header and the items read, in file order.
struct IdxData {
  std::vector<std::int64_t> dims;   ///< sizes from the header; dims[0] is the item count
  std::int64_t item_bytes = 0;      ///< bytes of one item (product of dims[1..])
  std::int64_t items_read = 0;      ///< items in `bytes`
  std::vector<std::uint8_t> bytes;  ///< [items_read][item_bytes]
};

std::string hex(std::uint32_t value) {
  std::array<char, 16> text{};
  std::snprintf(text.data(), text.size(), "0x%08X", static_cast<unsigned>(value));
  return text.data();
}

/// Reads up to `size` bytes; fewer only at the end of the data. Sets `stream_cut` when a gzip
/// stream ended before its trailer (a truncated .gz file).
std::size_t read_bytes(gzFile file, std::uint8_t* out, std::size_t size, const std::string& path,
                       bool* stream_cut = nullptr) {
  std::size_t total = 0;
  while (total < size) {
    const auto chunk = static_cast<unsigned>(std::min<std::size_t>(size - total, 1U << 30));
    const int got = gzread(file, out + total, chunk);
    if (got < 0) throw Error(path + ": cannot read file: " + gz_reason(file, path));
    if (got == 0) {
      int code = Z_OK;
      gzerror(file, &code);
      if (stream_cut != nullptr) *stream_cut = code == Z_BUF_ERROR;
      break;
    }
    total += static_cast<std::size_t>(got);
  }
  return total;
}

std::uint32_t big_endian(const std::uint8_t* b) {
  return (std::uint32_t{b[0]} << 24U) | (std::uint32_t{b[1]} << 16U) | (std::uint32_t{b[2]} << 8U) |
         std::uint32_t{b[3]};
}

const char* type_name(std::uint32_t type_code) {
  switch (type_code) {
    case 0x08:
      return "uint8";
    case 0x09:
      return "int8";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "unknown element type";
  }
}

/// "0x00000801 (uint8, 1 dimension)"
std::string describe_magic(std::uint32_t magic) {
  const std::uint32_t dims = magic & 0xFFU;
  return hex(magic) + " (" + type_name((magic >> 8U) & 0xFFU) + ", " + std::to_string(dims) +
         (dims == 1 ? " dimension)" : " dimensions)");
}

void check_magic(std::uint32_t magic, const IdxKind& kind, const std::string& path) {
  if (magic == kind.magic) return;
  const std::string expected = "; expected " + describe_magic(kind.magic) + ", " + kind.file_kind;
  if ((magic >> 16U) != 0) {
    throw Error(path + ": not an IDX file: magic number " + hex(magic) + " (the first two bytes of an IDX file are 0)" +
                expected);
  }
  const IdxKind& other = kind.magic == kImages.magic ? kLabels : kImages;
  if (magic == other.magic) {
    throw Error(path + ": magic number " + describe_magic(magic) + ": this is " + other.file_kind + expected);
  }
  if (((magic >> 8U) & 0xFFU) != ((kind.magic >> 8U) & 0xFFU)) {
    throw Error(path + ": magic number " + describe_magic(magic) + ": wrong element type" + expected);
  }
  throw Error(path + ": magic number " + describe_magic(magic) + ": wrong dimension count" + expected);
}

std::string plural(std::int64_t count, const char* what) { return std::to_string(count) + " " + what; }

/// "60000 images of 28x28"
std::string item_text(std::int64_t count, const IdxKind& kind, const std::vector<std::int64_t>& dims) {
  std::string text = plural(count, kind.items);
  for (std::size_t d = 1; d < dims.size(); ++d) {
    text += d == 1 ? " of " : "x";
    text += std::to_string(dims[d]);
  }
  return text;
}

IdxData read_idx(const std::string& path, const IdxKind& kind, std::int64_t max_count) {
  if (max_count < 0) {
    throw Error(path + ": max_count = " + std::to_string(max_count) + ": must be >= 0 (0 reads all)");
  }
  const GzFile file = open_gz(path);

  std::array<std::uint8_t, 4> word{};
  const std::size_t magic_read = read_bytes(file.get(), word.data(), word.size(), path);
  if (magic_read == 0) throw Error(path + ": the file is empty; expected " + kind.file_kind);
  if (magic_read < word.size()) {
    throw Error(path + ": truncated header: expected a 4-byte magic number, read " + std::to_string(magic_read) +
                " bytes");
  }
  const std::uint32_t magic = big_endian(word.data());
  check_magic(magic, kind, path);

  const auto dim_count = static_cast<std::size_t>(magic & 0xFFU);
  const auto header_bytes = static_cast<std::int64_t>(4 * (1 + dim_count));
  IdxData data;
  data.dims.resize(dim_count);
  for (std::size_t d = 0; d < dim_count; ++d) {
    if (read_bytes(file.get(), word.data(), word.size(), path) < word.size()) {
      throw Error(path + ": truncated header: the magic number declares " + std::to_string(dim_count) +
                  " sizes, the file ends in size " + std::to_string(d + 1));
    }
    data.dims[d] = big_endian(word.data());
    if (data.dims[d] == 0) {
      throw Error(path + ": header size " + std::to_string(d + 1) + " of " + std::to_string(dim_count) +
                  " is 0; sizes must be non-zero");
    }
  }

  // Each size is < 2^32, so the products are checked by division before they are formed.
  constexpr std::int64_t kMaxBytes = std::numeric_limits<std::int64_t>::max();
  std::int64_t total_bytes = 1;
  for (const std::int64_t size : data.dims) {
    if (total_bytes > kMaxBytes / size) {
      std::string sizes;
      for (const std::int64_t s : data.dims) {
        if (!sizes.empty()) sizes += 'x';
        sizes += std::to_string(s);
      }
      throw Error(path + ": header sizes " + sizes + " overflow a 64-bit byte count");
    }
    total_bytes *= size;
  }
  const std::int64_t count = data.dims[0];
  data.item_bytes = total_bytes / count;
  const std::int64_t wanted = max_count == 0 ? count : std::min(max_count, count);
  const bool compressed = gzdirect(file.get()) == 0;

  bool size_checked = false;
  if (!compressed) {
    // A plain file's size is known: check the whole data length against the header now, so a
    // broken file is refused even when only its first items are read.
    std::error_code ec;
    const auto file_size = fs::file_size(path, ec);
    if (!ec) {
      size_checked = true;
      const auto data_bytes = static_cast<std::int64_t>(file_size) - header_bytes;
      if (data_bytes < total_bytes) {
        throw Error(path + ": truncated data: the header declares " + item_text(count, kind, data.dims) + " (" +
                    std::to_string(total_bytes) + " bytes after the " + std::to_string(header_bytes) +
                    "-byte header); the file has " + std::to_string(data_bytes) + " bytes (" +
                    plural(data_bytes / data.item_bytes, kind.items) + ")");
      }
      if (data_bytes > total_bytes) {
        throw Error(path + ": " + std::to_string(data_bytes - total_bytes) + " extra bytes after the " +
                    item_text(count, kind, data.dims) + " the header declares");
      }
    }
  }

  const std::int64_t wanted_bytes = wanted * data.item_bytes;
  if (static_cast<std::uint64_t>(wanted_bytes) > std::numeric_limits<std::size_t>::max()) {
    throw Error(path + ": " + item_text(wanted, kind, data.dims) + " do not fit in memory");
  }
  // A gzip file's header is not checked against its length: grow the buffer as data arrives,
  // so a header declaring terabytes fails as truncated rather than as an allocation.
  constexpr std::size_t kChunkBytes = std::size_t{1} << 24;
  const auto wanted_size = static_cast<std::size_t>(wanted_bytes);
  if (size_checked) data.bytes.reserve(wanted_size);
  bool stream_cut = false;
  std::size_t filled = 0;
  while (filled < wanted_size) {
    const std::size_t step = std::min(wanted_size - filled, kChunkBytes);
    data.bytes.resize(filled + step);
    const std::size_t read = read_bytes(file.get(), data.bytes.data() + filled, step, path, &stream_cut);
    filled += read;
    if (read < step) break;
  }
  data.bytes.resize(filled);
  const auto got = static_cast<std::int64_t>(filled);
  if (got < wanted_bytes) {
    throw Error(path + ": truncated data: expected " + std::to_string(wanted_bytes) + " bytes (" +
                item_text(wanted, kind, data.dims) + ") after the " + std::to_string(header_bytes) +
                "-byte header, read " + std::to_string(got) + " bytes (" + plural(got / data.item_bytes, kind.items) +
                ")" + (stream_cut ? "; the gzip stream ends early" : ""));
  }
  data.items_read = wanted;

  if (wanted == count && !size_checked) {
    // All items read: anything after them is data the header does not declare.
    std::array<std::uint8_t, 1 << 14> rest{};
    std::int64_t extra = 0;
    for (;;) {
      const std::size_t more = read_bytes(file.get(), rest.data(), rest.size(), path, &stream_cut);
      extra += static_cast<std::int64_t>(more);
      if (more < rest.size()) break;
    }
    if (stream_cut) {
      throw Error(path + ": truncated gzip file: the stream ends before its end marker (after " +
                  item_text(count, kind, data.dims) + " and " + std::to_string(extra) + " more bytes)");
    }
    if (extra > 0) {
      throw Error(path + ": " + std::to_string(extra) + " extra bytes after the " + item_text(count, kind, data.dims) +
                  " the header declares");
    }
  }
  return data;
}

/// `<dir>/<stem>` or `<dir>/<stem>.gz`, whichever exists (the plain one first).
std::string find_part_file(const std::string& dir, const std::string& stem) {
  const fs::path plain = fs::path(dir) / stem;
  const fs::path gz = fs::path(dir) / (stem + ".gz");
  for (const fs::path& candidate : {plain, gz}) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  throw Error(dir + ": no file " + stem + "[.gz]: looked for " + plain.string() + " and " + gz.string());
}

}  // namespace

IdxImages read_idx_images(const std::string& path, std::int64_t max_count) {
  IdxData data = read_idx(path, kImages, max_count);
  IdxImages images;
  images.count = data.items_read;
  images.rows = data.dims[1];
  images.cols = data.dims[2];
  images.pixels = std::move(data.bytes);
  return images;
}

std::vector<std::uint8_t> read_idx_labels(const std::string& path, std::int64_t max_count) {
  return read_idx(path, kLabels, max_count).bytes;
}

Dataset load_idx_directory(const std::string& dir, const std::string& part, std::int64_t max_count) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(dir + ": not a directory (IDX data set '" + part + "')");
  const std::string images_path = find_part_file(dir, part + "-images-idx3-ubyte");
  const std::string labels_path = find_part_file(dir, part + "-labels-idx1-ubyte");

  // Labels first: they are small, and a count mismatch is found before the images are read.
  const IdxData labels = read_idx(labels_path, kLabels, max_count);
  IdxData images = read_idx(images_path, kImages, max_count);
  if (images.dims[0] != labels.dims[0]) {
    throw Error(images_path + " has " + plural(images.dims[0], "images") + " but " + labels_path + " has " +
                plural(labels.dims[0], "labels"));
  }

  constexpr Index kClasses = 10;
  const auto count = static_cast<Index>(images.items_read);
  Dataset d;
  d.task = Task::classification;
  d.labels.resize(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < d.labels.size(); ++i) {
    const std::uint8_t label = labels.bytes[i];
    if (label >= kClasses) {
      throw Error(labels_path + ": label " + std::to_string(label) + " at index " + std::to_string(i) +
                  " is outside 0.." + std::to_string(kClasses - 1));
    }
    d.labels[i] = label;
  }

  const Index height = images.dims[1];
  const Index width = images.dims[2];
  const Index pixels = height * width;
  d.x.resize(count, pixels);
  std::transform(images.bytes.begin(), images.bytes.end(), d.x.data(),
                 [](std::uint8_t p) { return static_cast<double>(p); });
  images.bytes = {};
  d.y = one_hot(d.labels, kClasses);
  d.feature_names.reserve(static_cast<std::size_t>(pixels));
  for (Index k = 0; k < pixels; ++k) {
    std::string name(1, 'p');
    name += std::to_string(k);
    d.feature_names.push_back(std::move(name));
  }
  d.target_names = {"label"};
  for (Index c = 0; c < kClasses; ++c) d.class_names.push_back(std::to_string(c));
  d.image_shape = {height, width, 1};
  return d;
}

}  // namespace simmer::data
