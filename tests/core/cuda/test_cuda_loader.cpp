// The image loader writing into a GPU (issue 7 with issue 3): batches are prepared in the GPU's
// pinned host memory and cross in one copy each; they hold what the same loader writes on the
// host. Skipped, saying why, without a GPU.
#include <gtest/gtest.h>

#include "core/data/data_fixtures.h"
#include "data/lmdb_source.h"
#include "data/loader.h"
#include "support/cuda_parity.h"
#include "support/temp_dir.h"

namespace tandem::test {
namespace {

std::vector<std::vector<float>> epoch_images(Loader& loader) {
    std::vector<std::vector<float>> images;
    loader.start_epoch(1);
    while (auto b = loader.next()) images.push_back(b->images.to_vector());
    return images;
}

TEST(CudaLoader, BatchesOnTheGpuEqualThoseOnTheHost) {
    TANDEM_REQUIRE_GPUS(1);
    TempDir dir;
    write_pattern_db(dir.file("db"), 21, 3, 10, 12, 3, Encoding::jpeg);
    auto source = std::make_shared<LmdbSource>(dir.file("db"));
    LoaderOptions o;
    o.batch = 8;
    o.threads = 2;
    o.last = LastBatch::keep;
    o.layout = Layout::channels_last;
    o.transform.crop_height = o.transform.crop_width = 8;
    o.transform.random_crop = o.transform.flip = true;
    Loader on_host(source, o);
    o.device = std::shared_ptr<Device>(&gpu(), [](Device*) {});  // the tests' GPU, not owned
    Loader on_gpu(source, o);
    Device& pinned = *gpu().pinned_host();
    pinned.allocator().reset_peak();
    EXPECT_EQ(epoch_images(on_gpu), epoch_images(on_host));
    EXPECT_GE(pinned.allocator().stats().peak, std::size_t(8 * 3 * 8 * 8 * 4))
        << "the batches were prepared in pinned memory";
}

}  // namespace
}  // namespace tandem::test
