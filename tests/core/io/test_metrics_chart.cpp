#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include <filesystem>

#include "base/error.h"
#include "io/metrics_chart.h"
#include "io/metrics_log.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

// A run's log as the recipes write it: per epoch the losses, accuracies, rate and lr.
void write_run(const std::string& path, double scale) {
    MetricsLog log(path, false);
    for (int epoch = 1; epoch <= 4; ++epoch)
        log.write({{"epoch", std::int64_t(epoch)},
                   {"step", std::int64_t(100 * epoch)},
                   {"train_loss", scale / epoch},
                   {"test_loss", scale * 1.2 / epoch},
                   {"test_accuracy", 1 - 0.5 / epoch},
                   {"images_per_s", 800.0 + epoch},
                   {"lr", 0.1 / epoch},
                   {"skipped", std::int64_t(0)}});
}

// Pixels of the first curve's colour (BGR 180, 119, 31) in the image.
int first_curve_pixels(const cv::Mat& image) {
    int n = 0;
    for (int y = 0; y < image.rows; ++y)
        for (int x = 0; x < image.cols; ++x) {
            const auto p = image.at<cv::Vec3b>(y, x);
            n += p[0] == 180 && p[1] == 119 && p[2] == 31;
        }
    return n;
}

TEST(MetricsChart, ReadsALogBack) {
    TempDir dir;
    const std::string path = dir.file("run.jsonl");
    write_run(path, 2.0);
    const MetricsRun run = read_metrics_log(path);
    EXPECT_EQ(run.name, "run.jsonl");
    ASSERT_EQ(run.rows.size(), 4u);
    EXPECT_EQ(run.rows[1].at("epoch"), 2);
    EXPECT_DOUBLE_EQ(run.rows[1].at("train_loss"), 1.0);
}

TEST(MetricsChart, DrawsAPanelPerKindOfFigure) {
    TempDir dir;
    const std::string a = dir.file("a.jsonl"), b = dir.file("b.jsonl"),
                      png = dir.file("out/chart.png");
    write_run(a, 2.0);
    write_run(b, 3.0);
    ASSERT_TRUE(draw_metrics_chart({read_metrics_log(a), read_metrics_log(b)}, png));
    const cv::Mat image = cv::imread(png);
    ASSERT_FALSE(image.empty());
    // Four panels (loss, accuracy, learning rate, images/s; the constant 'skipped' has none)
    // in two columns of 560 x 340.
    EXPECT_EQ(image.cols, 2 * 560);
    EXPECT_EQ(image.rows, 2 * 340);
    EXPECT_GT(first_curve_pixels(image), 200);
}

TEST(MetricsChart, NothingToDrawWritesNothing) {
    TempDir dir;
    const std::string path = dir.file("run.jsonl"), png = dir.file("run.png");
    MetricsLog(path, false).write({{"note", std::string("no epoch here")}});
    EXPECT_FALSE(draw_metrics_chart({read_metrics_log(path)}, png));
    EXPECT_FALSE(std::filesystem::exists(png));
    EXPECT_EQ(chart_path_for("logs/run.jsonl"), "logs/run.png");
    EXPECT_EQ(chart_path_for("a.b/run"), "a.b/run.png");
}

TEST(MetricsChart, ALogRedrawsItsChartAtEveryWrite) {
    TempDir dir;
    const std::string path = dir.file("logs/run.jsonl");
    MetricsLog log(path, false, true);
    log.write({{"epoch", std::int64_t(1)}, {"train_loss", 1.0}});
    ASSERT_TRUE(std::filesystem::exists(dir.file("logs/run.png")));
    const auto first = read_bytes(dir.file("logs/run.png"));
    log.write({{"epoch", std::int64_t(2)}, {"train_loss", 0.5}});
    EXPECT_NE(read_bytes(dir.file("logs/run.png")), first);
}

TEST(MetricsChart, AMalformedLineIsNamed) {
    TempDir dir;
    const std::string path = dir.file("bad.jsonl");
    write_bytes(path, "{\"epoch\": 1, \"loss\": 1}\n{\"epoch\": 2, \"loss\": \n");
    try {
        read_metrics_log(path);
        FAIL() << "read a malformed log";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("bad.jsonl, line 2: not a metrics line"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(read_metrics_log(dir.file("missing.jsonl")), DataError);
}

}  // namespace
}  // namespace tandem::test
