#include "data/data_source.h"

#include "data/image_format.h"

namespace tandem {

Encoding sniff_encoding(const std::string& bytes) {
    switch (image_format(bytes)) {
        case ImageFormat::png: return Encoding::png;
        case ImageFormat::jpeg: return Encoding::jpeg;
        default: return Encoding::other;
    }
}

}  // namespace tandem
