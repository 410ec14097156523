#include "data/db_builder.h"

#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <thread>

#include "data/dataset.h"
#include "data/image_decode.h"
#include "data/interactions.h"
#include "data/lmdb_source.h"
#include "data/lmdb_writer.h"

namespace tandem {
namespace {

constexpr std::int64_t kChunk = 256;

// Runs work(thread, i) for i in [begin, end) on `threads` threads; rethrows the first error.
void parallel_range(int threads, std::int64_t begin, std::int64_t end,
                    const std::function<void(int, std::int64_t)>& work) {
    std::atomic<std::int64_t> next{begin};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto run = [&](int t) {
        try {
            for (std::int64_t i; (i = next.fetch_add(1)) < end;) work(t, i);
        } catch (...) {
            std::lock_guard lock(error_mutex);
            if (!error) error = std::current_exception();
            next = end;  // the others stop at their next sample
        }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(run, t);
    run(0);
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace

std::string encode_image_record(const cv::Mat& image, std::int32_t label, Encoding encoding,
                                int quality) {
    RecordHeader h;
    h.encoding = encoding;
    h.label = label;
    h.height = std::uint32_t(image.rows);
    h.width = std::uint32_t(image.cols);
    h.channels = std::uint32_t(image.channels());
    if (encoding == Encoding::raw) {
        cv::Mat rgb;
        if (image.channels() == 3)
            cv::cvtColor(image, rgb, cv::COLOR_BGR2RGB);
        else
            rgb = image.isContinuous() ? image : image.clone();
        return encode_record(h, {rgb.data, rgb.total() * rgb.elemSize()});
    }
    std::vector<unsigned char> bytes;
    const std::vector<int> params = {cv::IMWRITE_JPEG_QUALITY, quality};
    TANDEM_CHECK_AS(BackendError,
                    cv::imencode(encoding == Encoding::png ? ".png" : ".jpg", image, bytes, params))
        << "OpenCV could not encode a " << image.rows << "x" << image.cols << " image";
    return encode_record(h, bytes);
}

DbBuildResult build_db(const DataSource& source, const std::string& path, const DbBuildOptions& o) {
    TANDEM_CHECK_AS(ConfigError, o.threads >= 1 && o.threads <= 256)
        << "threads must be in [1, 256], got " << o.threads;
    TANDEM_CHECK_AS(ConfigError, o.quality >= 1 && o.quality <= 100)
        << "JPEG quality must be in [1, 100], got " << o.quality;
    TANDEM_CHECK_AS(ConfigError, o.encoding != Encoding::other) << "records are raw, png or jpeg";
    TANDEM_CHECK_AS(ConfigError, o.resize >= 0) << "resize must be >= 0, got " << o.resize;
    const std::int64_t n = source.size();
    const std::vector<std::int64_t> order = epoch_order(n, o.seed, 0, o.shuffle);
    std::vector<std::unique_ptr<SourceReader>> readers;
    for (int t = 0; t < o.threads; ++t) readers.push_back(source.open_reader());
    LmdbWriter writer(path, o.overwrite);
    writer.set_class_names(source.class_names());
    DbBuildResult result;
    std::vector<std::string> records(kChunk), errors(kChunk);
    for (std::int64_t begin = 0; begin < n; begin += kChunk) {
        const std::int64_t end = std::min(n, begin + kChunk);
        parallel_range(o.threads, begin, end, [&](int t, std::int64_t p) {
            const auto slot = std::size_t(p - begin);
            records[slot].clear();
            errors[slot].clear();
            try {
                const RawSample s = readers[std::size_t(t)]->read(order[std::size_t(p)]);
                const cv::Mat decoded = decode_image(s, o.channels, ImageCheck::full);
                const cv::Mat image = resize_shorter(decoded, o.resize);
                // Already right: keep the file's own bytes rather than encoding them again.
                const bool as_is = image.data == decoded.data && s.encoding == o.encoding &&
                                   o.encoding != Encoding::raw &&
                                   (o.channels == 0 || int(s.channels) == o.channels ||
                                    (s.channels == 0 && decoded.channels() == o.channels));
                if (as_is) {
                    RecordHeader h{o.encoding, s.label, std::uint32_t(image.rows),
                                   std::uint32_t(image.cols), std::uint32_t(image.channels())};
                    records[slot] = encode_record(
                        h,
                        {reinterpret_cast<const unsigned char*>(s.bytes.data()), s.bytes.size()});
                } else {
                    records[slot] = encode_image_record(image, s.label, o.encoding, o.quality);
                }
            } catch (const CorruptSampleError& e) {
                if (o.strict) throw;
                errors[slot] = e.what();
            }
        });
        for (std::int64_t p = begin; p < end; ++p) {
            const auto slot = std::size_t(p - begin);
            if (!errors[slot].empty()) {
                result.skipped.push_back(errors[slot]);
                continue;
            }
            writer.put(record_key(result.written), std::move(records[slot]));
            ++result.written;
        }
        if (o.progress) o.progress(end, n);
    }
    // Nothing decoded: no database at all (the writer removes what it began), so a rerun on
    // the mended source is not refused as "already exists".
    TANDEM_CHECK_AS(DataError, result.written > 0)
        << "no image of " << source.description() << " could be decoded (" << result.skipped.size()
        << " skipped); nothing written to " << path;
    writer.finish();
    return result;
}

std::vector<std::string> check_db(const std::string& path, int threads,
                                  const std::function<void(std::int64_t, std::int64_t)>& progress) {
    const LmdbSource source(path);
    const std::int64_t n = source.size();
    // A database of interaction records is read as the loader reads it (decode_interaction);
    // a record of the other kind in it is named as the loader would skip it.
    const bool interactions = source.sample_kind() == SampleKind::interaction;
    std::vector<std::unique_ptr<SourceReader>> readers;
    for (int t = 0; t < std::max(1, threads); ++t) readers.push_back(source.open_reader());
    std::vector<std::string> problems, errors(kChunk);
    for (std::int64_t begin = 0; begin < n; begin += kChunk) {
        const std::int64_t end = std::min(n, begin + kChunk);
        parallel_range(std::max(1, threads), begin, end, [&](int t, std::int64_t i) {
            errors[std::size_t(i - begin)].clear();
            try {
                const RawSample sample = readers[std::size_t(t)]->read(i);
                if (interactions) {
                    std::vector<float> row(std::size_t(sample.height) + sample.width);
                    decode_interaction(sample, row.data());
                } else {
                    decode_image(sample, 0, ImageCheck::full);
                }
            } catch (const CorruptSampleError& e) {
                errors[std::size_t(i - begin)] = e.what();
            }
        });
        for (std::int64_t i = begin; i < end; ++i)
            if (!errors[std::size_t(i - begin)].empty())
                problems.push_back(errors[std::size_t(i - begin)]);
        if (progress) progress(end, n);
    }
    return problems;
}

}  // namespace tandem
