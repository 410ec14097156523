// `tandem dbinfo SOURCE [--limit=N] [--grid=out.png] [--grid-count=64] [--cell=64]`: what a data
// set holds: count, classes with their counts, image shapes and encodings, and optionally a PNG
// grid of samples (drawn across the set by a fixed permutation) to look at.
#include <cmath>
#include <cstdio>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "commands.h"
#include "data/dataset.h"
#include "data/image_decode.h"
#include "io/png_file.h"
#include "progress_line.h"
#include "tool_args.h"

namespace tandem::tool {
namespace {

// A cell x cell thumbnail: shorter side to `cell`, centre crop, always 3 channels.
cv::Mat thumbnail(const cv::Mat& image, int cell) {
    const double scale = double(cell) / std::min(image.rows, image.cols);
    cv::Mat resized, colour;
    cv::resize(image, resized,
               cv::Size(std::max(cell, int(std::lround(image.cols * scale))),
                        std::max(cell, int(std::lround(image.rows * scale)))),
               0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_NEAREST);
    const cv::Rect centre((resized.cols - cell) / 2, (resized.rows - cell) / 2, cell, cell);
    if (resized.channels() == 1)
        cv::cvtColor(resized(centre), colour, cv::COLOR_GRAY2BGR);
    else
        colour = resized(centre).clone();
    return colour;
}

void write_grid(const DataSource& source, const std::string& path, std::int64_t count, int cell) {
    const std::vector<std::int64_t> order = epoch_order(source.size(), 1, 0, true);
    count = std::min<std::int64_t>(count, source.size());
    const int columns = static_cast<int>(std::ceil(std::sqrt(double(count))));
    const int rows = static_cast<int>((count + columns - 1) / columns);
    cv::Mat grid(rows * (cell + 2), columns * (cell + 2), CV_8UC3, cv::Scalar(32, 32, 32));
    auto reader = source.open_reader();
    for (std::int64_t i = 0; i < count; ++i) {
        cv::Mat image;
        try {
            image = decode_image(reader->read(order[std::size_t(i)]), 0);
        } catch (const CorruptSampleError& e) {
            std::fprintf(stderr, "warning: %s\n", e.what());
            continue;
        }
        const int r = int(i / columns), c = int(i % columns);
        thumbnail(image, cell)
            .copyTo(grid(cv::Rect(c * (cell + 2) + 1, r * (cell + 2) + 1, cell, cell)));
    }
    write_png(path, grid);  // names the file when it cannot be written
    std::printf("grid of %lld samples (%dx%d px each) written to %s\n",
                static_cast<long long>(count), cell, cell, path.c_str());
}

}  // namespace

const ToolSpec kDbinfoSpec{
    "dbinfo",
    "SOURCE",
    "count, classes, shapes, encodings; a grid of samples",
    "SOURCE: an LMDB database, an image folder or a list file. Damaged records are counted and\n"
    "named.",
    {{"limit", "N", "examine the first N records' shapes only (default: all)"},
     {"grid", "FILE.png", "also draw a grid of random samples into FILE.png"},
     {"grid-count", "N", "samples in the grid (default 64)"},
     {"cell", "PX", "a grid cell's side (default 64)"},
     {"root", "DIR", "a list file's paths are relative to DIR (default: the list's folder)"}},
    1,
    1};

int command_dbinfo(const Args& args) {
    const ToolArgs a(args, kDbinfoSpec);
    // Every option is read (and checked) before the source is opened.
    const std::int64_t limit_option = a.integer("limit", INT64_MAX, 1, INT64_MAX);
    const std::int64_t grid_count = a.integer("grid-count", 64, 1, 4096);
    const int cell = static_cast<int>(a.integer("cell", 64, 8, 512));
    const std::string grid = a.text("grid", "grid.png");
    // The grid is a PNG: another name would reach OpenCV's "could not find a writer" after the
    // whole set was read (issue 19).
    if (grid.size() < 5 || grid.compare(grid.size() - 4, 4, ".png") != 0)
        a.mistake("--grid must name a .png file, got '" + grid + "'");
    const auto source = open_image_source(a.positional()[0], a.text("root", ""));
    const std::int64_t n = source->size();
    std::printf("%s\n", source->description().c_str());
    // Damaged records have no label: they are counted apart (and named below, when read).
    std::vector<std::int64_t> per_class(static_cast<std::size_t>(source->classes()), 0);
    std::int64_t unlabelled = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        try {
            ++per_class[static_cast<std::size_t>(source->label(i))];  // sources check the range
        } catch (const CorruptSampleError&) {
            ++unlabelled;
        }
    }
    const auto names = source->class_names();
    std::printf("classes: %lld\n", static_cast<long long>(source->classes()));
    for (std::size_t c = 0; c < per_class.size(); ++c)
        std::printf("  %4zu %-24s %lld\n", c, c < names.size() ? names[c].c_str() : "",
                    static_cast<long long>(per_class[c]));
    if (unlabelled > 0)
        std::printf("  damaged records, no label: %lld\n", static_cast<long long>(unlabelled));

    // Shapes and encodings: records state them; image files are decoded to learn them.
    const std::int64_t limit = std::min(n, limit_option);
    std::map<std::string, std::int64_t> shapes, encodings;
    std::int64_t corrupt = 0;
    auto reader = source->open_reader();
    ProgressLine bar("dbinfo", limit);
    for (std::int64_t i = 0; i < limit; ++i) {
        try {
            const RawSample s = reader->read(i);
            std::uint32_t h = s.height, w = s.width, c = s.channels;
            if (h == 0) {
                const cv::Mat m = decode_image(s, 0);
                h = std::uint32_t(m.rows), w = std::uint32_t(m.cols),
                c = std::uint32_t(m.channels());
            }
            // An interaction record's height and width are its sequence length and features.
            ++shapes[s.encoding == Encoding::interaction
                         ? std::to_string(h) + " items + " + std::to_string(w) + " features"
                         : std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c)];
            ++encodings[std::string(encoding_name(s.encoding))];
        } catch (const CorruptSampleError& e) {
            std::fprintf(stderr, "warning: %s\n", e.what());
            ++corrupt;
        }
        if ((i + 1) % 1024 == 0 || i + 1 == limit) bar.update(i + 1);
    }
    bar.finish();
    std::printf("records examined: %lld%s, damaged: %lld\n", static_cast<long long>(limit),
                limit < n ? " (--limit)" : "", static_cast<long long>(corrupt));
    std::printf("encodings:");
    for (const auto& [e, count] : encodings)
        std::printf(" %s %lld", e.c_str(), static_cast<long long>(count));
    std::printf("\nshapes (H x W x C, or an interaction's): %zu distinct\n", shapes.size());
    std::vector<std::pair<std::int64_t, std::string>> sorted;
    for (const auto& [s, count] : shapes) sorted.emplace_back(-count, s);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size() && i < 8; ++i)
        std::printf("  %-16s %lld\n", sorted[i].second.c_str(),
                    static_cast<long long>(-sorted[i].first));
    if (sorted.size() > 8) std::printf("  ... and %zu more\n", sorted.size() - 8);
    if (a.has("grid")) write_grid(*source, grid, grid_count, cell);
    return 0;
}

}  // namespace tandem::tool
