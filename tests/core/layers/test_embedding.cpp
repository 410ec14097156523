#include <gtest/gtest.h>

#include "layers/embedding.h"
#include "support/grad_check.h"
#include "support/torch_fixture.h"

namespace tandem::test {
namespace {

TEST(Embedding, LooksUpAndAddsLikePyTorch) {
    const TorchFixture f("embedding");
    Embedding e(10, 4);
    e.parameters()[0]->value.copy_from(f["weight"]);
    Tape tape;
    Pass pass{test_device(), Mode::train, 0, tape, 0};
    expect_close(e.forward(f["x"], pass), f["y"], "y", 0, 0);
    const Tensor dx = e.backward(f["x"], f["dy"], pass);
    expect_close(e.parameters()[0]->grad, f["grad.weight"], "grad.weight", 1e-6f, 1e-6f);
    EXPECT_EQ(tensor_ops(test_device()).sum_squares(dx), 0.0);  // no gradient for indices
    EXPECT_EQ(e.output_shape({3, 4}), (Shape{3, 4, 4}));
    EXPECT_EQ(e.options_text(), "10 x 4");
}

TEST(Embedding, BadIndicesAreNamed) {
    Embedding e(5, 2);
    Tape tape;
    Pass pass{test_device(), Mode::eval, 0, tape, 0};
    for (float bad : {5.f, -1.f, 1.5f}) {
        const Tensor x = Tensor::from_vector({1, 3}, test_device(), std::vector<float>{0, 4, bad});
        try {
            e.forward(x, pass);
            FAIL() << "expected a DataError for " << bad;
        } catch (const DataError& err) {
            EXPECT_NE(std::string(err.what()).find("index 3 is"), std::string::npos) << err.what();
            EXPECT_NE(std::string(err.what()).find("[0, 5)"), std::string::npos) << err.what();
        }
    }
    EXPECT_THROW(Embedding(0, 3), ConfigError);
}

}  // namespace
}  // namespace tandem::test
