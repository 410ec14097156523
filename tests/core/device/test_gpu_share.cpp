// How the MPI ranks of one node divide its GPUs (device/gpu_share.h): no GPU needed, the
// bus ids stand for what each rank's CUDA runtime reports.
#include <gtest/gtest.h>

#include "base/error.h"
#include "device/gpu_share.h"

namespace tandem::test {
namespace {

using Seen = std::vector<std::vector<std::string>>;

const std::vector<std::string> kNode = {"0000:1a:00.0", "0000:1b:00.0", "0000:3d:00.0",
                                        "0000:3e:00.0"};

std::string share_error(const Seen& seen, int local_rank, int wanted) {
    try {
        node_gpu_share(seen, local_rank, wanted);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(GpuShare, OneRankTakesWhatItAsks) {
    EXPECT_EQ(node_gpu_share({kNode}, 0, -1), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(node_gpu_share({kNode}, 0, 2), (std::vector<int>{0, 1}));
    EXPECT_NE(share_error({kNode}, 0, 5).find("5 asked, 4 given to this rank"), std::string::npos);
}

TEST(GpuShare, RanksSeeingTheSameGpusShareThemOut) {
    const Seen two{kNode, kNode};
    EXPECT_EQ(node_gpu_share(two, 0, -1), (std::vector<int>{0, 1}));
    EXPECT_EQ(node_gpu_share(two, 1, -1), (std::vector<int>{2, 3}));
    EXPECT_EQ(node_gpu_share(two, 1, 1), (std::vector<int>{1}));
    const Seen four{kNode, kNode, kNode, kNode};
    for (int r = 0; r < 4; ++r) EXPECT_EQ(node_gpu_share(four, r, -1), (std::vector<int>{r}));
    // Three ranks on four GPUs: one each, the last GPU idle.
    const Seen three{kNode, kNode, kNode};
    EXPECT_EQ(node_gpu_share(three, 2, -1), (std::vector<int>{2}));
}

TEST(GpuShare, SharingFollowsTheBusIdsNotEachRanksNumbering) {
    // Rank 1 sees the same GPUs in another CUDA order (CUDA_VISIBLE_DEVICES=3,2,1,0): it still
    // takes the two rank 0 leaves, under its own ordinals.
    const std::vector<std::string> reversed(kNode.rbegin(), kNode.rend());
    const Seen seen{kNode, reversed};
    EXPECT_EQ(node_gpu_share(seen, 0, -1), (std::vector<int>{0, 1}));
    EXPECT_EQ(node_gpu_share(seen, 1, -1), (std::vector<int>{0, 1}));  // its 0, 1 = bus 3e, 3d
}

TEST(GpuShare, RanksGivenTheirOwnGpusKeepThem) {
    const Seen own{{kNode[0], kNode[1]}, {kNode[2], kNode[3]}};
    EXPECT_EQ(node_gpu_share(own, 0, -1), (std::vector<int>{0, 1}));
    EXPECT_EQ(node_gpu_share(own, 1, -1), (std::vector<int>{0, 1}));
    EXPECT_EQ(node_gpu_share(own, 1, 1), (std::vector<int>{0}));
    const Seen one_each{{kNode[0]}, {kNode[1]}, {kNode[2]}, {kNode[3]}};
    EXPECT_EQ(node_gpu_share(one_each, 3, -1), (std::vector<int>{0}));
}

TEST(GpuShare, TooFewGpusOrOverlapsAreClearErrors) {
    const Seen crowded{{kNode[0]}, {kNode[0]}, {kNode[0]}};
    EXPECT_EQ(share_error(crowded, 1, -1),
              "no CUDA device: 3 MPI ranks on this node see the same 1 GPU (0000:1a:00.0); start "
              "at most 1 ranks per node, or give each rank its own GPUs (CUDA_VISIBLE_DEVICES)");
    EXPECT_EQ(share_error({kNode, kNode}, 0, 3),
              "no CUDA device: 2 MPI ranks on this node share its 4 GPUs, so 3 each would need 6; "
              "ask for at most 2 per rank, or 'all'");
    const Seen overlap{{kNode[0], kNode[1]}, {kNode[1], kNode[2]}};
    const std::string e = share_error(overlap, 0, -1);
    EXPECT_NE(
        e.find("MPI ranks 0 and 1 on this node both see GPU 0000:1b:00.0, but not the same GPUs"),
        std::string::npos)
        << e;
    EXPECT_EQ(share_error(overlap, 1, -1), e);  // both ranks stop, with the same words
}

}  // namespace
}  // namespace tandem::test
