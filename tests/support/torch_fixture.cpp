#include "support/torch_fixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "io/safetensors.h"
#include "support/grad_check.h"

namespace tandem::test {

TorchFixture::TorchFixture(const std::string& name) : name_(name) {
    const std::string path = std::string(TANDEM_TORCH_FIXTURES) + "/" + name + ".safetensors";
    for (auto& [key, tensor] : load_safetensors(path, test_device()).tensors)
        tensors_[key] = tensor;
}

const Tensor& TorchFixture::operator[](const std::string& key) const {
    auto it = tensors_.find(key);
    if (it == tensors_.end()) {
        ADD_FAILURE() << "fixture " << name_ << " has no tensor '" << key << "'";
        throw std::runtime_error("missing fixture tensor " + key);
    }
    return it->second;
}

void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what, float rtol,
                  float atol) {
    ASSERT_TRUE(actual.defined()) << what << ": no tensor";
    ASSERT_EQ(actual.shape(), expected.shape()) << what;
    const auto a = actual.to_vector(), e = expected.to_vector();
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!(std::fabs(a[i] - e[i]) <= atol + rtol * std::fabs(e[i]))) {
            ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", PyTorch gives "
                          << e[i] << " (rtol " << rtol << ", atol " << atol << ")";
            return;
        }
    }
}

}  // namespace tandem::test
