#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

#include "base/error.h"

namespace tandem {
namespace {

struct GzCloser {
    void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

const char* type_name(unsigned code) {
    switch (code) {
        case 0x08: return "unsigned byte";
        case 0x09: return "signed byte";
        case 0x0B: return "16-bit integer";
        case 0x0C: return "32-bit integer";
        case 0x0D: return "float";
        case 0x0E: return "double";
        default: return "unknown";
    }
}

std::string hex_byte(unsigned char b) {
    static constexpr char kHex[] = "0123456789abcdef";
    return {kHex[b >> 4], kHex[b & 0xF]};
}

// Reads up to `want` bytes; returns how many arrived. A stream that ends early (a truncated
// gzip member included) returns fewer; any other failure is a DataError.
std::size_t read_some(gzFile file, void* dst, std::size_t want, const std::string& path) {
    std::size_t done = 0;
    while (done < want) {
        const auto chunk = static_cast<unsigned>(std::min<std::size_t>(want - done, 1u << 30));
        const int n = gzread(file, static_cast<char*>(dst) + done, chunk);
        if (n < 0) {
            int code = 0;
            const char* message = gzerror(file, &code);
            if (code == Z_BUF_ERROR) break;  // zlib's "unexpected end of file"
            TANDEM_THROW(DataError) << "cannot read " << path << ": "
                                    << (code == Z_ERRNO ? std::strerror(errno) : message);
        }
        if (n == 0) {
            int code = 0;
            const char* message = gzerror(file, &code);
            TANDEM_CHECK_AS(DataError, code == Z_OK || code == Z_BUF_ERROR)
                << "cannot read " << path << ": "
                << (code == Z_ERRNO ? std::strerror(errno) : message);
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    return done;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
    errno = 0;
    GzFile file(gzopen(path.c_str(), "rb"));
    TANDEM_CHECK_AS(DataError, file != nullptr)
        << "cannot open " << path << ": " << (errno ? std::strerror(errno) : "out of memory");
    gzbuffer(file.get(), 1 << 17);

    unsigned char magic[4];
    const std::size_t got = read_some(file.get(), magic, 4, path);
    TANDEM_CHECK_AS(DataError, got == 4)
        << path << " is too short for an idx file (" << got << " bytes)";
    TANDEM_CHECK_AS(DataError, magic[0] == 0 && magic[1] == 0 && magic[3] > 0)
        << path << " is not an idx file: bad magic 0x" << hex_byte(magic[0]) << hex_byte(magic[1])
        << hex_byte(magic[2]) << hex_byte(magic[3])
        << " (expected two zero bytes, a type code and a dimension count)";
    TANDEM_CHECK_AS(DataError, magic[2] == 0x08)
        << path << " holds " << type_name(magic[2]) << " elements (type 0x" << hex_byte(magic[2])
        << "); Tandem reads only unsigned bytes (type 0x08)";

    IdxArray out;
    const int rank = magic[3];
    std::vector<unsigned char> header(static_cast<std::size_t>(4 * rank));
    const std::size_t header_got = read_some(file.get(), header.data(), header.size(), path);
    TANDEM_CHECK_AS(DataError, header_got == header.size())
        << path << " is truncated: its header promises " << rank << " dimensions, found only "
        << header_got / 4;
    // Overflow-checked: a corrupt header must give an error, not a wrapped-around size.
    std::uint64_t total = 1;
    for (int i = 0; i < rank; ++i) {
        const unsigned char* b = header.data() + 4 * i;
        const std::uint64_t d = (std::uint64_t(b[0]) << 24) | (std::uint64_t(b[1]) << 16) |
                                (std::uint64_t(b[2]) << 8) | std::uint64_t(b[3]);
        TANDEM_CHECK_AS(DataError, d == 0 || total <= (std::uint64_t(1) << 48) / d)
            << path << ": the dimensions in its header are too large";
        total *= d;
        out.dims.push_back(static_cast<std::int64_t>(d));
    }

    // Grow as data arrives rather than trusting the header with one big allocation.
    constexpr std::size_t kStep = std::size_t(64) << 20;
    std::size_t have = 0;
    while (have < total) {
        const std::size_t want = std::min<std::size_t>(total - have, kStep);
        out.bytes.resize(have + want);
        const std::size_t n = read_some(file.get(), out.bytes.data() + have, want, path);
        have += n;
        if (n < want) break;
    }
    TANDEM_CHECK_AS(DataError, have == total)
        << path << " is truncated: expected " << total << " bytes of data, found " << have;
    unsigned char extra = 0;
    TANDEM_CHECK_AS(DataError, read_some(file.get(), &extra, 1, path) == 0)
        << path << " has data past the " << total << " bytes its header promises";
    return out;
}

void check_idx_pair(const IdxArray& images, const IdxArray& labels, const std::string& images_path,
                    const std::string& labels_path) {
    TANDEM_CHECK_AS(DataError, images.dims.size() == 3 || images.dims.size() == 4)
        << images_path << " holds a " << images.dims.size()
        << "-dimensional array; images are N x H x W or N x C x H x W";
    TANDEM_CHECK_AS(DataError, labels.dims.size() == 1)
        << labels_path << " holds a " << labels.dims.size()
        << "-dimensional array; labels are one-dimensional";
    TANDEM_CHECK_AS(DataError, images.dims[0] == labels.dims[0])
        << images_path << " holds " << images.dims[0] << " images but " << labels_path << " holds "
        << labels.dims[0] << " labels";
}

}  // namespace tandem
