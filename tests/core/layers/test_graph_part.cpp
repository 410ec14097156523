// GraphPart (what every pipeline stage runs): a forward that keeps nothing for backward lets go
// of each value it makes once no later node reads it, unless the caller reads it, and
// computes what a forward keeping everything does.
#include <gtest/gtest.h>

#include "layers/graph_part.h"
#include "layers/linear.h"
#include "layers/merge.h"
#include "layers/relu.h"
#include "support/grad_check.h"

namespace tandem::test {
namespace {

// v0 (input) -fc-> v1 -relu-> v2; add(v1, v2) -> v3: v1 is read twice, the last time by add.
struct Branch {
    Branch() { fc->initialize(3); }
    GraphPart part(std::vector<std::size_t> outputs) {
        std::vector<PartNode> nodes{
            {.layer = fc.get(), .inputs = {0}, .output = 1, .need_dx = false, .where = "fc"},
            {.layer = relu.get(), .inputs = {1}, .output = 2, .where = "relu"},
            {.layer = add.get(),
             .merge = add.get(),
             .inputs = {1, 2},
             .output = 3,
             .where = "add"}};
        return GraphPart(std::move(nodes), std::move(outputs));
    }
    std::vector<Tensor> run(GraphPart& part, Mode mode, GraphPart::Keep keep) {
        std::vector<Tensor> values(4);
        const std::vector<float> x{0.5f, -1.f, 2.f, 1.5f, 0.25f, -0.75f};
        values[0] = Tensor::from_vector({2, 3}, test_device(), x);
        Tape tape;
        Pass pass{test_device(), mode, 0, tape, 0};
        part.forward(values, pass, 0, part.size(), keep);
        return values;
    }
    std::shared_ptr<Linear> fc = std::make_shared<Linear>(LinearOptions{3, 4, true, "kaiming"});
    std::shared_ptr<ReLU> relu = std::make_shared<ReLU>();
    std::shared_ptr<Add> add = std::make_shared<Add>();
};

TEST(GraphPart, KeepingOnlyOutputsLetsGoOfSpentValues) {
    Branch b;
    GraphPart part = b.part({3});
    const std::vector<Tensor> all = b.run(part, Mode::train, GraphPart::Keep::for_backward);
    for (const Tensor& v : all) EXPECT_TRUE(v.defined());
    for (Mode mode : {Mode::train, Mode::eval}) {
        const std::vector<Tensor> kept = b.run(part, mode, GraphPart::Keep::outputs);
        EXPECT_TRUE(kept[0].defined()) << "the input is the caller's";
        EXPECT_FALSE(kept[1].defined()) << "read last by add";
        EXPECT_FALSE(kept[2].defined()) << "read only by add";
        ASSERT_TRUE(kept[3].defined());
        EXPECT_EQ(kept[3].to_vector(), all[3].to_vector());
    }
}

TEST(GraphPart, ValuesTheCallerReadsAreKept) {
    Branch b;
    GraphPart part = b.part({1, 3});
    const std::vector<Tensor> kept = b.run(part, Mode::eval, GraphPart::Keep::outputs);
    EXPECT_TRUE(kept[1].defined());
    EXPECT_FALSE(kept[2].defined());
    EXPECT_TRUE(part.reads(1));
    EXPECT_FALSE(part.reads(3));
}

}  // namespace
}  // namespace tandem::test
