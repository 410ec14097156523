// IdxSource: MNIST-style idx files (idx.h) as a data source of raw records, so Fashion-MNIST
// runs through the same loader and tools as any image set (import-idx writes it to LMDB).
// The images are held in memory as the files hold them: N x H x W (one channel) or
// N x C x H x W, handed out as H x W x C bytes.
#pragma once

#include "data/data_source.h"
#include "data/idx.h"

namespace tandem {

class IdxSource final : public DataSource {
public:
    // DataError (from read_idx, or naming both files when the counts differ or the images have
    // 2 or more than 3 channels).
    IdxSource(const std::string& images_path, const std::string& labels_path);

    std::int64_t size() const override { return count_; }
    std::int64_t classes() const override { return classes_; }
    std::int32_t label(std::int64_t index) const override;
    std::string key(std::int64_t index) const override;
    std::string description() const override;
    std::unique_ptr<SourceReader> open_reader() const override;

    std::uint32_t height() const { return height_; }
    std::uint32_t width() const { return width_; }
    std::uint32_t channels() const { return channels_; }

private:
    class Reader;
    std::string images_path_;
    std::vector<unsigned char> pixels_;  // N x H x W x C
    std::vector<std::int32_t> labels_;
    std::int64_t count_ = 0, classes_ = 0;
    std::uint32_t height_ = 0, width_ = 0, channels_ = 1;
};

}  // namespace tandem
