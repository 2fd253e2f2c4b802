#pragma once
/// \file
/// IDX files, the format of MNIST and Fashion-MNIST: a big-endian 32-bit magic number
/// 0x0000TTDD (TT the element type, 0x08 = uint8; DD the number of dimensions), DD big-endian
/// 32-bit sizes, then the elements in row-major order. Files are read through zlib, so
/// gzip-compressed (.gz) and plain files are both accepted, whatever their name.

#include <cstdint>
#include <string>
#include <vector>

#include "simmer/data/dataset.hpp"

namespace simmer::data {

/// Magic number of a uint8 image file [count][rows][cols].
inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
/// Magic number of a uint8 label file [count].
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;

/// Images as stored: one byte per pixel, 0 = background for MNIST-like data.
struct IdxImages {
  std::int64_t count = 0;            ///< images read (the file may hold more, see max_count)
  std::int64_t rows = 0;             ///< image height in pixels
  std::int64_t cols = 0;             ///< image width in pixels
  std::vector<std::uint8_t> pixels;  ///< [count][rows][cols], row-major
};

/// Reads the first `max_count` images of an IDX image file (0 or more than the file holds:
/// all of them). Errors (simmer::Error, the message starts with the path):
///  - the file cannot be opened or read, or is not valid gzip where it claims to be;
///  - a wrong magic number, saying what was found and what was expected (another element type,
///    another dimension count, or a labels file given where images are expected);
///  - a size of 0 in the header, or sizes whose product overflows a 64-bit byte count;
///  - truncated data (how many bytes and images were expected and how many were read) and data
///    beyond what the header declares (extra bytes).
/// A plain file's size is checked against the header before reading, so truncation and extra
/// bytes are found even when only a prefix is read. A gzip file's size is unknown until it is
/// decompressed: truncation is reported when the read of the requested images falls short,
/// extra bytes only when all images are read.
IdxImages read_idx_images(const std::string& path, std::int64_t max_count = 0);

/// Reads the first `max_count` labels (0: all) of an IDX label file; the errors are those of
/// read_idx_images with "labels" for "images". The values are not range-checked here.
std::vector<std::uint8_t> read_idx_labels(const std::string& path, std::int64_t max_count = 0);

/// Loads `<part>-images-idx3-ubyte` and `<part>-labels-idx1-ubyte` from `dir` (each as given or
/// with ".gz"; the uncompressed file is preferred when both exist). `part` is "train" or
/// "t10k" for MNIST and Fashion-MNIST. Returns the first `max_count` images (0: all) as a
/// 10-class classification data set in raw units:
///  - x [images][height·width]: pixel values 0..255 as doubles, one row per image, flattened
///    row-major (pixel (r, c) is column r·width + c), one channel;
///  - feature_names "p0", "p1", ...: "p<k>" is column k, i.e. pixel (k / width, k % width);
///  - y one-hot [images][10], labels 0..9, class_names "0".."9", target_names {"label"};
///  - image_shape {height, width, 1}.
/// Errors besides those of the readers: a file not found (naming the paths looked for), image
/// and label files with different counts in their headers (naming both files), a label
/// outside 0..9 (naming the label file and the 0-based index).
Dataset load_idx_directory(const std::string& dir, const std::string& part, std::int64_t max_count = 0);

}  // namespace simmer::data
