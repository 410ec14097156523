// tandem_bench_data: the image pipeline's decode + augment speed against plain OpenCV, in one
// run (issue 3). Not a test: it prints figures, it asserts nothing.
//
//   build/tandem_bench_data [--images=512] [--size=256] [--crop=224] [--threads=1,2] [--dir=D]
//
// 1. A synthetic folder of colour JPEGs (side `size`, a little smaller or larger).
// 2. Baseline: one thread, the file bytes in memory, cv::imdecode -> random crop -> flip.
// 3. Ours, one thread: ImageTransform::apply (decode, random crop, flip, RGB CHW floats).
// 4. The Loader (reader + T decode threads + assembly) over the folder, for each T: images/s
//    overall and per thread; beside it the baseline on T threads at once (no loader), which
//    says what the machine gives T decoders, and the loader's rate against that.
// The ratio per thread (ours / baseline) is the figure the issue asks for: >= 0.9.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/rng.h"
#include "data/file_list_source.h"
#include "data/loader.h"
#include "data/synthetic_images.h"
#include "data/transform.h"

namespace {

using tandem::RawSample;

double now() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string option(int argc, char** argv, const std::string& key, const std::string& fallback) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("--" + key + "=", 0) == 0) return a.substr(key.size() + 3);
    }
    return fallback;
}

// The baseline's work on one sample: decode, crop at a random place, flip (into a new buffer,
// as a batch needs). Returns a byte of the result, so nothing is optimised away.
unsigned decode_crop_flip(const RawSample& s, std::size_t i, int crop) {
    const cv::Mat buffer(1, int(s.bytes.size()), CV_8UC1, const_cast<char*>(s.bytes.data()));
    const cv::Mat image = cv::imdecode(buffer, cv::IMREAD_COLOR);
    const std::uint64_t key = tandem::rng_key(7, i);
    const int y = int(tandem::rng_bits(key, 1) % std::uint64_t(image.rows - crop + 1));
    const int x = int(tandem::rng_bits(key, 2) % std::uint64_t(image.cols - crop + 1));
    cv::Mat flipped;
    cv::flip(image(cv::Rect(x, y, crop, crop)), flipped, 1);
    return flipped.at<cv::Vec3b>(0, 0)[0];
}

// The baseline on `threads` threads at once, each over every sample: images/s in all. What
// the machine itself gives several decoders (shared caches, memory, turbo), with no loader.
double parallel_baseline(const std::vector<RawSample>& samples, int crop, int threads,
                         std::uint64_t& checksum) {
    std::vector<std::thread> workers;
    std::vector<unsigned> sums(static_cast<std::size_t>(threads), 0);
    const double t0 = now();
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            for (std::size_t i = 0; i < samples.size(); ++i)
                sums[static_cast<std::size_t>(t)] += decode_crop_flip(samples[i], i, crop);
        });
    for (auto& w : workers) w.join();
    const double rate = double(samples.size()) * threads / (now() - t0);
    for (unsigned v : sums) checksum += v;
    return rate;
}

}  // namespace

int main(int argc, char** argv) {
    const int images = std::atoi(option(argc, argv, "images", "512").c_str());
    const int size = std::atoi(option(argc, argv, "size", "256").c_str());
    const int crop = std::atoi(option(argc, argv, "crop", "224").c_str());
    const int rounds = std::atoi(option(argc, argv, "rounds", "3").c_str());
    const std::string thread_list = option(argc, argv, "threads", "1,2");
    const std::string dir = option(
        argc, argv, "dir", (std::filesystem::temp_directory_path() / "tandem_bench_data").string());
    cv::setNumThreads(0);  // every figure single-threaded per worker, the baseline included

    tandem::SyntheticOptions so;
    so.classes = 8;
    so.per_class = (images + 7) / 8;
    so.min_size = std::max(crop, size - 16);
    so.max_size = size + 16;
    std::filesystem::remove_all(dir);
    const auto written = tandem::write_synthetic_images(dir, so);
    auto source = tandem::folder_source(dir);
    std::vector<RawSample> samples;
    auto reader = source->open_reader();
    std::size_t bytes = 0;
    for (std::int64_t i = 0; i < source->size(); ++i) {
        samples.push_back(reader->read(i));
        bytes += samples.back().bytes.size();
    }
    std::printf("synthetic set: %lld JPEGs of %d-%d px, %.1f KB each on average; crops %dx%d\n",
                static_cast<long long>(written), so.min_size, so.max_size,
                double(bytes) / double(samples.size()) / 1024, crop, crop);

    // Ours, one thread: the loader's per-sample work.
    tandem::TransformOptions to;
    to.crop_height = to.crop_width = crop;
    to.random_crop = true;
    to.flip = true;
    to.mean = {0.485f, 0.456f, 0.406f};
    to.std = {0.229f, 0.224f, 0.225f};
    const tandem::ImageTransform transform(to);
    std::vector<float> out;
    // Interleaved rounds, best of each: on a busy machine the two see the same conditions.
    double best_base = 0, best_ours = 0;
    std::uint64_t checksum = 0;
    for (int r = 0; r < rounds; ++r) {
        double t0 = now();
        for (std::size_t i = 0; i < samples.size(); ++i)
            checksum += decode_crop_flip(samples[i], i, crop);
        best_base = std::max(best_base, double(samples.size()) / (now() - t0));
        t0 = now();
        for (std::size_t i = 0; i < samples.size(); ++i)
            transform.apply(samples[i], tandem::rng_key(7, i), tandem::Layout::contiguous, out);
        best_ours = std::max(best_ours, double(samples.size()) / (now() - t0));
    }
    std::printf("\n%-44s %10s %8s\n", "one thread", "images/s", "ratio");
    std::printf("%-44s %10.0f %8s\n", "OpenCV decode-crop-flip (baseline)", best_base, "1.00");
    std::printf("%-44s %10.0f %8.2f\n", "ImageTransform (+RGB CHW float, normalised)", best_ours,
                best_ours / best_base);

    std::printf("\n%-10s %12s %12s %10s %16s %14s %12s\n", "loader T", "images/s", "per thread",
                "ratio/T", "busy decode/s/T", "baseline x T", "vs that");
    std::size_t start = 0;
    while (start < thread_list.size()) {
        std::size_t comma = thread_list.find(',', start);
        if (comma == std::string::npos) comma = thread_list.size();
        const int t = std::atoi(thread_list.substr(start, comma - start).c_str());
        start = comma + 1;
        tandem::LoaderOptions lo;
        lo.batch = 32;
        lo.threads = t;
        lo.transform = to;
        lo.last = tandem::LastBatch::keep;
        tandem::Loader loader(source, lo);
        // The loader's epochs and the baseline on t threads at once, in turns, best of each.
        double best = 0, best_parallel = 0;
        for (int r = 0; r < rounds; ++r) {
            loader.start_epoch(r + 1);
            std::int64_t count = 0;
            const double t0 = now();
            while (auto b = loader.next()) count += b->count;
            best = std::max(best, double(count) / (now() - t0));
            best_parallel = std::max(best_parallel, parallel_baseline(samples, crop, t, checksum));
        }
        const auto s = loader.stats();
        std::printf("%-10d %12.0f %12.0f %10.2f %16.0f %14.0f %12.2f\n", t, best, best / t,
                    best / t / best_base, s.decode_rate(), best_parallel, best / best_parallel);
        // Where the rest of the cores went: the reader's and the assembler's busy time per image.
        std::printf("%-10s read %.1f us/image, assemble %.1f us/image\n", "",
                    1e6 * s.read_seconds / double(std::max<std::int64_t>(1, s.records_read)),
                    1e6 * s.assemble_seconds / double(std::max<std::int64_t>(1, s.images_decoded)));
    }
    std::printf("\n(checksum %llu)\n", static_cast<unsigned long long>(checksum));
    std::filesystem::remove_all(dir);
    return 0;
}
