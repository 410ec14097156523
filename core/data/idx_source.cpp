#include "data/idx_source.h"

#include <algorithm>

namespace tandem {

class IdxSource::Reader final : public SourceReader {
public:
    explicit Reader(const IdxSource& source) : source_(source) {}
    RawSample read(std::int64_t index) override {
        const IdxSource& s = source_;
        const std::size_t bytes = std::size_t(s.height_) * s.width_ * s.channels_;
        RawSample r;
        r.key = s.key(index);
        r.label = s.label(index);
        r.encoding = Encoding::raw;
        r.height = s.height_;
        r.width = s.width_;
        r.channels = s.channels_;
        const auto* p = s.pixels_.data() + static_cast<std::size_t>(index) * bytes;
        r.bytes.assign(reinterpret_cast<const char*>(p), bytes);
        return r;
    }

private:
    const IdxSource& source_;
};

IdxSource::IdxSource(const std::string& images_path, const std::string& labels_path)
    : images_path_(images_path) {
    IdxArray images = read_idx(images_path);
    const IdxArray labels = read_idx(labels_path);
    check_idx_pair(images, labels, images_path, labels_path);
    TANDEM_CHECK_AS(DataError, images.dims[0] > 0) << images_path << " holds no images";
    count_ = images.dims[0];
    const bool planar = images.dims.size() == 4;
    channels_ = planar ? static_cast<std::uint32_t>(images.dims[1]) : 1;
    height_ = static_cast<std::uint32_t>(images.dims[planar ? 2 : 1]);
    width_ = static_cast<std::uint32_t>(images.dims[planar ? 3 : 2]);
    TANDEM_CHECK_AS(DataError, channels_ == 1 || channels_ == 3)
        << images_path << " has " << channels_ << " channels; 1 or 3 are supported";
    if (channels_ == 1) {
        pixels_ = std::move(images.bytes);
    } else {
        // C x H x W planes to interleaved H x W x C, as raw records hold them.
        const std::size_t plane = std::size_t(height_) * width_;
        pixels_.resize(images.bytes.size());
        for (std::int64_t n = 0; n < count_; ++n) {
            const unsigned char* src = images.bytes.data() + n * plane * channels_;
            unsigned char* dst = pixels_.data() + n * plane * channels_;
            for (std::size_t p = 0; p < plane; ++p)
                for (std::uint32_t c = 0; c < channels_; ++c)
                    dst[p * channels_ + c] = src[c * plane + p];
        }
    }
    labels_.assign(labels.bytes.begin(), labels.bytes.end());
    classes_ = *std::max_element(labels_.begin(), labels_.end()) + 1;
}

std::int32_t IdxSource::label(std::int64_t index) const {
    return labels_.at(static_cast<std::size_t>(index));
}

std::string IdxSource::key(std::int64_t index) const {
    return images_path_ + "#" + std::to_string(index);
}

std::string IdxSource::description() const {
    return "idx " + images_path_ + " (" + std::to_string(count_) + " images of " +
           std::to_string(height_) + "x" + std::to_string(width_) + "x" +
           std::to_string(channels_) + ", " + std::to_string(classes_) + " classes)";
}

std::unique_ptr<SourceReader> IdxSource::open_reader() const {
    return std::make_unique<Reader>(*this);
}

}  // namespace tandem
