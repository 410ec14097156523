// `tandem mean SOURCE [--resize=N] [--limit=N] [--threads=N]`: per-channel mean and standard
// deviation of a data set's pixels, on the 0..1 scale in RGB order: what a Loader's transforms
// take as `mean` and `std`.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>

#include "commands.h"
#include "data/image_decode.h"
#include "progress_line.h"
#include "tool_args.h"

namespace tandem::tool {

const ToolSpec kMeanSpec{
    "mean",
    "SOURCE",
    "per-channel mean and std of a database, folder or list",
    "SOURCE: an LMDB database, an image folder or a list file. The figures are on the 0..1 scale\n"
    "in RGB order: what a Loader's transforms take as mean and std.",
    {{"limit", "N", "read the first N images only (default: all)"},
     {"threads", "N", "decode threads (default: the cores, at most 8)"},
     {"root", "DIR", "a list file's paths are relative to DIR (default: the list's folder)"}},
    1,
    1};

int command_mean(const Args& args) {
    const ToolArgs a(args, kMeanSpec);
    // Every option is read (and checked) before the source is opened.
    const std::int64_t limit = a.integer("limit", INT64_MAX, 1, INT64_MAX);
    const int threads = static_cast<int>(a.integer("threads", default_threads(), 1, 256));
    const auto source = open_image_source(a.positional()[0], a.text("root", ""));
    const std::int64_t n = std::min(source->size(), limit);
    // Sums in double per thread, merged at the end: exact enough for billions of pixels.
    std::mutex mutex;
    double sum[3] = {0, 0, 0}, squares[3] = {0, 0, 0};
    std::int64_t pixels = 0, done = 0, skipped = 0;
    int channels = 0;
    std::atomic<std::int64_t> next{0};
    ProgressLine bar("mean", n);
    auto work = [&] {
        auto reader = source->open_reader();
        for (std::int64_t i; (i = next.fetch_add(1)) < n;) {
            cv::Mat image;
            try {
                image = decode_image(reader->read(i), 0);
            } catch (const CorruptSampleError& e) {
                std::lock_guard lock(mutex);
                std::fprintf(stderr, "warning: skipped %s\n", e.what());
                ++skipped;
                continue;
            }
            const int c = image.channels();
            double s[3] = {0, 0, 0}, q[3] = {0, 0, 0};
            for (int y = 0; y < image.rows; ++y) {
                const unsigned char* row = image.ptr<unsigned char>(y);
                for (int x = 0; x < image.cols; ++x)
                    for (int k = 0; k < c; ++k) {
                        const double v = row[x * c + k] / 255.0;
                        s[k] += v;
                        q[k] += v * v;
                    }
            }
            std::lock_guard lock(mutex);
            TANDEM_CHECK_AS(DataError, channels == 0 || channels == c)
                << "image '" << source->key(i) << "' has " << c << " channels, others " << channels;
            channels = c;
            for (int k = 0; k < c; ++k) {
                sum[c == 3 ? 2 - k : 0] += s[k];  // BGR to RGB
                squares[c == 3 ? 2 - k : 0] += q[k];
            }
            pixels += std::int64_t(image.rows) * image.cols;
            bar.update(++done);
        }
    };
    std::vector<std::thread> pool;
    std::exception_ptr error;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            try {
                work();
            } catch (...) {
                std::lock_guard lock(mutex);
                if (!error) error = std::current_exception();
                next = n;
            }
        });
    for (auto& t : pool) t.join();
    bar.finish();
    if (error) std::rethrow_exception(error);
    TANDEM_CHECK_AS(DataError, pixels > 0) << "no image of " << source->description() << " decoded";
    std::printf("%s: %lld images (%lld skipped), %d channel%s\n", source->description().c_str(),
                static_cast<long long>(done), static_cast<long long>(skipped), channels,
                channels > 1 ? "s" : "");
    std::string mean = "{", std = "{";
    for (int k = 0; k < channels; ++k) {
        const double m = sum[k] / double(pixels);
        const double sd = std::sqrt(std::max(0.0, squares[k] / double(pixels) - m * m));
        char text[64];
        std::snprintf(text, sizeof text, "%s%.4f", k ? ", " : "", m);
        mean += text;
        std::snprintf(text, sizeof text, "%s%.4f", k ? ", " : "", sd);
        std += text;
    }
    std::printf("mean = %s}, std = %s}\n", mean.c_str(), std.c_str());
    return 0;
}

}  // namespace tandem::tool
