#include "data/png_check.h"

#include <zlib.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tandem {
namespace {

std::uint32_t u32(const std::string& b, std::size_t at) {
    return std::uint32_t(static_cast<unsigned char>(b[at])) << 24 |
           std::uint32_t(static_cast<unsigned char>(b[at + 1])) << 16 |
           std::uint32_t(static_cast<unsigned char>(b[at + 2])) << 8 |
           static_cast<unsigned char>(b[at + 3]);
}

bool is_letter(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

// What IHDR states, once checked.
struct Header {
    std::uint32_t width = 0, height = 0;
    int depth = 0, colour = 0, interlace = 0;
    int samples() const { return colour == 2 ? 3 : colour == 4 ? 2 : colour == 6 ? 4 : 1; }
};

std::string check_header(const std::string& b, std::size_t data, Header& h) {
    h.width = u32(b, data);
    h.height = u32(b, data + 4);
    h.depth = static_cast<unsigned char>(b[data + 8]);
    h.colour = static_cast<unsigned char>(b[data + 9]);
    h.interlace = static_cast<unsigned char>(b[data + 12]);
    if (h.width == 0 || h.height == 0 || h.width > 0x7fffffffu || h.height > 0x7fffffffu)
        return "IHDR states a size of " + std::to_string(h.height) + "x" + std::to_string(h.width);
    // libpng refuses a side over a million pixels (its default user limit).
    if (h.width > 1000000 || h.height > 1000000)
        return "IHDR states " + std::to_string(h.height) + "x" + std::to_string(h.width) +
               ", a side over the 1000000 pixels PNG readers accept";
    const bool depth_ok =
        h.colour == 0
            ? (h.depth == 1 || h.depth == 2 || h.depth == 4 || h.depth == 8 || h.depth == 16)
        : h.colour == 3 ? (h.depth == 1 || h.depth == 2 || h.depth == 4 || h.depth == 8)
        : (h.colour == 2 || h.colour == 4 || h.colour == 6) ? (h.depth == 8 || h.depth == 16)
                                                            : false;
    if (!depth_ok)
        return "IHDR states bit depth " + std::to_string(h.depth) + " with colour type " +
               std::to_string(h.colour) + ", which PNG does not allow";
    if (b[data + 10] != 0 || b[data + 11] != 0 || h.interlace > 1)
        return "IHDR states an unknown compression, filter or interlace method";
    return {};
}

// The rows the zlib stream must hold: one filter byte, then the row's bytes; an interlaced
// image has them for each of Adam7's seven passes that is not empty.
std::vector<std::pair<std::uint64_t, std::uint64_t>> row_runs(
    const Header& h) {  // (rows, bytes per row)
    const std::uint64_t bits = std::uint64_t(h.samples()) * static_cast<std::uint64_t>(h.depth);
    auto run = [&](std::uint64_t w, std::uint64_t rows) {
        return std::pair<std::uint64_t, std::uint64_t>{rows, 1 + (w * bits + 7) / 8};
    };
    if (h.interlace == 0) return {run(h.width, h.height)};
    static constexpr std::array<std::array<std::uint32_t, 4>, 7> kAdam7 = {{// x0, y0, dx, dy
                                                                            {0, 0, 8, 8},
                                                                            {4, 0, 8, 8},
                                                                            {0, 4, 4, 8},
                                                                            {2, 0, 4, 4},
                                                                            {0, 2, 2, 4},
                                                                            {1, 0, 2, 2},
                                                                            {0, 1, 1, 2}}};
    std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;
    for (const auto& p : kAdam7) {
        const std::uint64_t w = h.width > p[0] ? (h.width - p[0] + p[2] - 1) / p[2] : 0;
        const std::uint64_t rows = h.height > p[1] ? (h.height - p[1] + p[3] - 1) / p[3] : 0;
        if (w != 0 && rows != 0) runs.push_back(run(w, rows));
    }
    return runs;
}

// Inflates the IDAT data (streamed through a small buffer: nothing the size of the image is
// allocated) and follows the rows, checking each filter byte.
std::string check_pixels(const std::string& idat, const Header& h) {
    const auto runs = row_runs(h);
    std::uint64_t expected = 0;
    for (const auto& [rows, bytes] : runs) expected += rows * bytes;
    std::size_t run = 0;
    std::uint64_t row = 0, in_row = 0, seen = 0;  // in_row: bytes of the current row already seen

    if (idat.size() > 0xffffffffu) return "its image data is over 4 GB";
    z_stream z{};
    if (inflateInit(&z) != Z_OK)
        return "its pixel data could not be inflated (zlib: out of memory)";
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(idat.data()));
    z.avail_in = static_cast<uInt>(idat.size());
    std::array<unsigned char, 16384> out;
    std::string problem;
    int status = Z_OK;
    while (problem.empty() && status != Z_STREAM_END) {
        z.next_out = out.data();
        z.avail_out = static_cast<uInt>(out.size());
        status = inflate(&z, Z_NO_FLUSH);
        if (status != Z_OK && status != Z_STREAM_END) {
            problem = status == Z_BUF_ERROR
                          ? "its pixel data ends early (the zlib stream is cut short)"
                      : status == Z_NEED_DICT
                          ? "its compressed pixel data asks for a preset dictionary"
                          : "its compressed pixel data is damaged (zlib: " +
                                std::string(z.msg != nullptr ? z.msg : "unknown error") + ")";
            break;
        }
        const std::size_t produced = out.size() - z.avail_out;
        if (seen + produced > expected) {
            problem = "it holds more pixel data than the " + std::to_string(h.height) + "x" +
                      std::to_string(h.width) + " its IHDR states";
            break;
        }
        for (std::size_t at = 0; at < produced;) {
            if (in_row == 0 && out[at] > 4) {
                problem = "row " + std::to_string(row + 1) + " has filter type " +
                          std::to_string(out[at]) + " (PNG has 0 to 4)";
                break;
            }
            const std::uint64_t take =
                std::min<std::uint64_t>(runs[run].second - in_row, produced - at);
            at += static_cast<std::size_t>(take);
            in_row += take;
            if (in_row == runs[run].second) {
                in_row = 0;
                if (++row == runs[run].first) {
                    row = 0;
                    ++run;
                }
            }
        }
        seen += produced;
    }
    const uInt left_over = z.avail_in;
    inflateEnd(&z);
    if (!problem.empty()) return problem;
    if (seen < expected)
        return "its pixel data ends early (" + std::to_string(seen) + " of the " +
               std::to_string(expected) + " bytes its IHDR states)";
    if (left_over != 0)
        return "its IDAT chunks hold " + std::to_string(left_over) + " bytes after the pixel data";
    return {};
}

}  // namespace

std::string png_problem(const std::string& b, PngCheck check) {
    static const char kSignature[] = "\x89PNG\r\n\x1a\n";
    if (b.size() < 8 || b.compare(0, 8, kSignature, 8) != 0) return "not a PNG (no PNG signature)";
    Header h;
    std::string idat;  // the zlib stream, gathered for PngCheck::pixels only
    bool seen_idat = false;
    std::uint32_t palette = 0;  // entries
    bool idat_done = false;
    int chunks = 0;
    for (std::size_t at = 8;; ++chunks) {
        const std::string where = " at byte " + std::to_string(at);
        if (at == b.size()) return "truncated: it ends without an IEND chunk";
        if (b.size() - at < 12) return "truncated: the chunk" + where + " is cut short";
        const std::uint32_t length = u32(b, at);
        const std::string type = b.substr(at + 4, 4);
        if (!is_letter(type[0]) || !is_letter(type[1]) || !is_letter(type[2]) ||
            !is_letter(type[3]))
            return "the chunk" + where + " has no valid type (4 ASCII letters)";
        const std::string chunk = "chunk '" + type + "'" + where;
        if (length > 0x7fffffffu) return chunk + " states a length over 2^31";
        if (b.size() - at - 12 < length)
            return "truncated: " + chunk + " states " + std::to_string(length) + " bytes, " +
                   std::to_string(b.size() - at - 12) + " follow";
        const std::size_t data = at + 8;
        const auto crc = crc32(crc32(0, nullptr, 0),
                               reinterpret_cast<const Bytef*>(b.data() + at + 4), length + 4);
        if (crc != u32(b, data + length)) return chunk + " fails its CRC check";
        at = data + length + 4;

        if (chunks == 0) {
            if (type != "IHDR") return "its first chunk is '" + type + "', not IHDR";
            if (length != 13) return chunk + " has " + std::to_string(length) + " bytes, not 13";
            if (std::string why = check_header(b, data, h); !why.empty()) return why;
            continue;
        }
        if (type == "IHDR") return "it has a second IHDR chunk" + where;
        if (type == "IEND") break;
        if (type == "IDAT") {
            if (idat_done)
                return chunk +
                       " follows other chunks after the image data (IDAT chunks must be "
                       "consecutive)";
            if (h.colour == 3 && palette == 0)
                return "a palette image without a PLTE chunk before its image data";
            seen_idat = true;
            if (check == PngCheck::pixels) idat.append(b, data, length);
            continue;
        }
        if (seen_idat) idat_done = true;
        if (type == "PLTE") {
            if (palette != 0 || seen_idat)
                return chunk + " is a second palette or comes after the image data";
            if (h.colour == 0 || h.colour == 4) return chunk + " is a palette in a grey image";
            if (length == 0 || length % 3 != 0 || length / 3 > 256 ||
                (h.colour == 3 && length / 3 > (1u << h.depth)))
                return chunk + " has " + std::to_string(length) + " bytes, not a valid palette";
            palette = length / 3;
            continue;
        }
        if (type[0] >= 'A' && type[0] <= 'Z')
            return chunk + " is a critical chunk PNG readers do not know";
        // libpng's limit on any chunk but IDAT (PNG_USER_CHUNK_MALLOC_MAX).
        if (length > 8000000)
            return chunk + " has " + std::to_string(length) +
                   " bytes, over the 8000000 PNG readers accept";
    }
    if (!seen_idat) return "it has no image data (IDAT chunk)";
    return check == PngCheck::pixels ? check_pixels(idat, h) : std::string();
}

}  // namespace tandem
