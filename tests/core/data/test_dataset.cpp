#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "base/error.h"
#include "data/dataset.h"
#include "support/grad_check.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

std::string idx_bytes(const std::vector<std::uint32_t>& dims,
                      const std::vector<unsigned char>& data) {
    std::string out = {'\0', '\0', char(0x08), char(dims.size())};
    for (auto d : dims)
        for (int shift = 24; shift >= 0; shift -= 8) out += char((d >> shift) & 0xFF);
    return out + std::string(data.begin(), data.end());
}

// Five 2x3 images whose pixel values encode (sample, position), labels 4, 0, 2, 2, 1.
struct Files {
    TempDir dir;
    std::string images = dir.file("images-idx3-ubyte");
    std::string labels = dir.file("labels-idx1-ubyte.gz");
    std::vector<unsigned char> pixels;
    Files() {
        for (int n = 0; n < 5; ++n)
            for (int p = 0; p < 6; ++p) pixels.push_back(static_cast<unsigned char>(n * 50 + p));
        write_bytes(images, idx_bytes({5, 2, 3}, pixels));
        const std::string l = idx_bytes({5}, {4, 0, 2, 2, 1});
        gzFile f = gzopen(labels.c_str(), "wb");
        gzwrite(f, l.data(), unsigned(l.size()));
        gzclose(f);
    }
};

float normalized(unsigned char p, float mean, float std) {
    return (float(p) / 255.f - mean) / std;
}

TEST(Dataset, FromIdxNormalizesAndGathers) {
    Files files;
    const float mean = 0.25f, std = 0.5f;
    const auto ds = InMemoryDataset::from_idx(files.images, files.labels, mean, std);
    EXPECT_EQ(ds.size(), 5);
    EXPECT_EQ(ds.classes(), 5);
    EXPECT_EQ(ds.sample_shape(), (Shape{1, 2, 3}));

    const std::vector<std::int64_t> pick = {3, 0, 3};
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        auto [x, y] = ds.gather(pick, test_device(), layout);
        EXPECT_EQ(x.shape(), (Shape{3, 1, 2, 3}));
        EXPECT_EQ(x.layout(), layout);
        EXPECT_EQ(&x.device(), &test_device());
        const auto v = x.to_vector();
        for (std::size_t b = 0; b < pick.size(); ++b)
            for (int p = 0; p < 6; ++p)
                EXPECT_FLOAT_EQ(v[b * 6 + std::size_t(p)],
                                normalized(files.pixels[std::size_t(pick[b] * 6 + p)], mean, std))
                    << "batch " << b << " pixel " << p;
        ASSERT_EQ(y.dtype(), DType::i32);
        EXPECT_EQ(std::vector<int>(y.data<int>(), y.data<int>() + 3), (std::vector<int>{2, 4, 2}));
    }
    const std::vector<std::int64_t> bad = {5};
    EXPECT_THROW(ds.gather(bad, test_device(), Layout::contiguous), DataError);
}

// A 3-channel set in channels_last: each channel's values land where the logical order says.
TEST(Dataset, GatherKeepsChannelsInChannelsLast) {
    std::vector<float> values(2 * 3 * 2 * 2);
    std::iota(values.begin(), values.end(), 0.f);
    Tensor images = Tensor::from_vector({2, 3, 2, 2}, host_device(), values);
    Tensor labels = Tensor::empty({2}, host_device(), DType::i32);
    labels.data<int>()[0] = 1;
    labels.data<int>()[1] = 0;
    InMemoryDataset ds(images, labels);
    EXPECT_EQ(ds.classes(), 2);
    const std::vector<std::int64_t> pick = {1};
    auto [x, y] = ds.gather(pick, test_device(), Layout::channels_last);
    EXPECT_EQ(x.to_vector(), std::vector<float>(values.begin() + 12, values.end()));
    // NHWC storage: element (c=2, h=0, w=1) sits at (0 * 2 + 1) * 3 + 2.
    EXPECT_EQ(x.data<float>()[5], values[12 + 2 * 4 + 1]);
}

// Values as targets (an autoencoder's or a regression's): gathered with their images, in the
// same order, onto the device in either image layout.
TEST(Dataset, GathersF32Targets) {
    std::vector<float> pixels(3 * 4), targets(3 * 2);
    for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = float(i);
    for (std::size_t i = 0; i < targets.size(); ++i) targets[i] = 0.5f * float(i);
    InMemoryDataset ds(Tensor::from_vector({3, 1, 2, 2}, host_device(), pixels),
                       Tensor::from_vector({3, 2}, host_device(), targets));
    EXPECT_EQ(ds.classes(), 0);
    const std::vector<std::int64_t> pick = {2, 0};
    for (Layout layout : {Layout::contiguous, Layout::channels_last}) {
        auto [x, y] = ds.gather(pick, test_device(), layout);
        EXPECT_EQ(y.shape(), Shape({2, 2}));
        EXPECT_EQ(y.dtype(), DType::f32);
        EXPECT_EQ(y.to_vector(), (std::vector<float>{2.f, 2.5f, 0.f, 0.5f}));
        EXPECT_EQ(x.to_layout(Layout::contiguous).to_vector()[0], 8.f);
    }
    EXPECT_THROW(InMemoryDataset(Tensor::zeros({3, 1, 2, 2}, host_device()),
                                 Tensor::zeros({3, 2}, host_device(), DType::i32)),
                 ShapeError);  // i32 targets are class labels: one per image
    EXPECT_THROW(InMemoryDataset(Tensor::zeros({3, 1, 2, 2}, host_device()),
                                 Tensor::zeros({2, 2}, host_device())),
                 ShapeError);
}

TEST(Dataset, MismatchedCountsNameBothFiles) {
    Files files;
    const std::string other = files.dir.file("short-labels-idx1-ubyte");
    write_bytes(other, idx_bytes({4}, {1, 2, 3, 4}));
    try {
        InMemoryDataset::from_idx(files.images, other, 0.f, 1.f);
        FAIL() << "accepted 5 images with 4 labels";
    } catch (const DataError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(files.images), std::string::npos) << m;
        EXPECT_NE(m.find(other), std::string::npos) << m;
    }
    EXPECT_THROW(InMemoryDataset::from_idx(files.images, files.labels, 0.f, 0.f), ConfigError);
    EXPECT_THROW(InMemoryDataset::from_idx(files.labels, files.labels, 0.f, 1.f), DataError);
}

TEST(Dataset, EpochOrderIsADeterministicPermutation) {
    const std::int64_t n = 1000;
    const auto a = epoch_order(n, 42, 3, true);
    EXPECT_EQ(a, epoch_order(n, 42, 3, true));  // same on every call
    auto sorted = a;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int64_t> identity(n);
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_EQ(sorted, identity);  // a permutation
    EXPECT_NE(a, identity);
    EXPECT_NE(a, epoch_order(n, 42, 4, true));  // another epoch, another order
    EXPECT_NE(a, epoch_order(n, 43, 3, true));  // another seed, another order
    EXPECT_EQ(epoch_order(n, 42, 3, false), identity);
    EXPECT_TRUE(epoch_order(0, 1, 0, true).empty());
    EXPECT_EQ(epoch_order(1, 1, 0, true), std::vector<std::int64_t>{0});
    EXPECT_THROW(epoch_order(-1, 1, 0, true), ConfigError);

    // Roughly uniform: over many epochs each position of a 4-element order takes each value
    // about a quarter of the time.
    int counts[4][4] = {};
    const int epochs = 4000;
    for (int e = 0; e < epochs; ++e) {
        const auto o = epoch_order(4, 7, e, true);
        for (int i = 0; i < 4; ++i) ++counts[i][o[std::size_t(i)]];
    }
    for (int i = 0; i < 4; ++i)
        for (int v = 0; v < 4; ++v)
            EXPECT_NEAR(counts[i][v], epochs / 4, epochs / 20)
                << "position " << i << " value " << v;
}

// The real Fashion-MNIST test split, when the machine has it.
TEST(Dataset, FashionMnistTestSplit) {
    const std::string dir = "/usr/share/datasets/fashion-mnist/";
    const std::string images = dir + "t10k-images-idx3-ubyte.gz";
    const std::string labels = dir + "t10k-labels-idx1-ubyte.gz";
    if (!std::filesystem::exists(images) || !std::filesystem::exists(labels))
        GTEST_SKIP() << "Fashion-MNIST not found under " << dir;
    const float mean = 0.2860f, std = 0.3530f;
    const auto ds = InMemoryDataset::from_idx(images, labels, mean, std);
    EXPECT_EQ(ds.size(), 10000);
    EXPECT_EQ(ds.classes(), 10);
    EXPECT_EQ(ds.sample_shape(), (Shape{1, 28, 28}));
    std::vector<int> per_class(10);
    const int* l = ds.labels().data<int>();
    for (std::int64_t i = 0; i < ds.size(); ++i) ++per_class[std::size_t(l[i])];
    EXPECT_EQ(per_class, std::vector<int>(10, 1000));  // the test split is balanced
    // Normalised with the training set's statistics, the test pixels are near mean 0, std 1.
    const float* x = ds.images().data<float>();
    double sum = 0, squares = 0;
    const std::int64_t count = ds.images().numel();
    for (std::int64_t i = 0; i < count; ++i) sum += x[i], squares += double(x[i]) * x[i];
    const double m = sum / double(count);
    EXPECT_NEAR(m, 0.0, 0.02);
    EXPECT_NEAR(std::sqrt(squares / double(count) - m * m), 1.0, 0.02);
}

}  // namespace
}  // namespace tandem::test
