// idx files, the format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/):
// two zero bytes, a type code, a dimension count d, d big-endian 32-bit sizes, then the data
// in row-major order. Files may be gzip-compressed (.gz, or gzip's magic); zlib reads both
// kinds alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

struct IdxArray {
    std::vector<std::int64_t> dims;
    std::vector<unsigned char> bytes;  // unsigned bytes (type 0x08), the only type datasets use
};

// DataError naming the file when it is missing or unreadable, has a bad magic, another element
// type, a truncated header or data ("expected N bytes of data, found M"), corrupt gzip data, or
// bytes after the data its header promises.
IdxArray read_idx(const std::string& path);

// Checks that `images` (N x H x W or N x C x H x W) and `labels` (N) read from these paths
// belong together: DataError naming the file otherwise.
void check_idx_pair(const IdxArray& images, const IdxArray& labels, const std::string& images_path,
                    const std::string& labels_path);

}  // namespace tandem
