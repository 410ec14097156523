// Image grids: each pixel where it belongs, scaled from the range to 0..255 and clamped, the
// same picture from either layout, RGB kept in order, bad shapes and options refused.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include "io/image_grid.h"
#include "support/grad_check.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

cv::Mat read_png(const std::string& path) {
    return cv::imread(path, cv::IMREAD_COLOR);
}

TEST(ImageGrid, PixelsLandInTheirTiles) {
    TempDir dir;
    const std::string path = (dir.path() / "sub" / "grid.png").string();
    // Three 2 x 3 grey images, two columns: the third starts the second row.
    std::vector<float> v(18);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i) / 17.f;
    v[5] = 2.f;   // clamped to white
    v[6] = -1.f;  // clamped to black
    save_image_grid(path, Tensor::from_vector({3, 1, 2, 3}, test_device(), v), {.columns = 2});
    const cv::Mat grid = read_png(path);
    ASSERT_EQ(grid.rows, 2 + 2 * (2 + 2));
    ASSERT_EQ(grid.cols, 2 + 2 * (3 + 2));
    auto grey = [&](int row, int col) { return int(grid.at<cv::Vec3b>(row, col)[0]); };
    EXPECT_EQ(grey(2, 2), 0);                                // image 0, pixel (0, 0)
    EXPECT_EQ(grey(2, 3), int(1.f / 17.f * 255.f + 0.5f));   // image 0, pixel (0, 1)
    EXPECT_EQ(grey(3, 4), 255);                              // image 0, pixel (1, 2): 2 clamped
    EXPECT_EQ(grey(2, 7), 0);                                // image 1, pixel (0, 0): -1 clamped
    EXPECT_EQ(grey(6, 2), int(12.f / 17.f * 255.f + 0.5f));  // image 2 on the second row
    EXPECT_EQ(grey(0, 0), 64);                               // the gap
}

TEST(ImageGrid, LayoutsAndColours) {
    TempDir dir;
    const Tensor rgb = random_tensor({2, 3, 4, 4}, test_device(), 3, 0.f, 1.f);
    const std::string a = (dir.path() / "a.png").string(), b = (dir.path() / "b.png").string();
    save_image_grid(a, rgb);
    save_image_grid(b, rgb.to_layout(Layout::channels_last));
    const cv::Mat ga = read_png(a), gb = read_png(b);
    EXPECT_EQ(cv::norm(ga, gb, cv::NORM_INF), 0);
    const auto v = rgb.to_vector();
    const cv::Vec3b first = ga.at<cv::Vec3b>(2, 2);           // OpenCV's BGR
    EXPECT_EQ(int(first[2]), int(v[0] * 255.f + 0.5f));       // red: channel 0
    EXPECT_EQ(int(first[0]), int(v[2 * 16] * 255.f + 0.5f));  // blue: channel 2
}

TEST(ImageGrid, RefusesWhatIsNoImage) {
    TempDir dir;
    const std::string path = (dir.path() / "x.png").string();
    EXPECT_THROW(save_image_grid(path, Tensor::zeros({2, 2, 4, 4}, test_device())), ShapeError);
    EXPECT_THROW(save_image_grid(path, Tensor::zeros({4, 4}, test_device())), ShapeError);
    EXPECT_THROW(save_image_grid(path, Tensor::zeros({1, 4, 4}, test_device()), {.columns = 0}),
                 ConfigError);
    EXPECT_THROW(
        save_image_grid(path, Tensor::zeros({1, 4, 4}, test_device()), {.low = 1.f, .high = 1.f}),
        ConfigError);
    EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace tandem::test
