#include "data/data_source.h"

namespace tandem {

Encoding sniff_encoding(const std::string& bytes) {
    static const char kPng[] = "\x89PNG\r\n\x1a\n";
    if (bytes.size() >= 8 && bytes.compare(0, 8, kPng, 8) == 0) return Encoding::png;
    if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xFF &&
        static_cast<unsigned char>(bytes[1]) == 0xD8 &&
        static_cast<unsigned char>(bytes[2]) == 0xFF)
        return Encoding::jpeg;
    return Encoding::other;
}

}  // namespace tandem
