// PyTorch reference fixtures: tensors written by tests/torch/make_fixtures.py from Debian's
// PyTorch (fixed inputs and what PyTorch computes from them), read back with Tandem's own
// safetensors reader. The files are committed, so the tests need no PyTorch.
#pragma once

#include <map>
#include <string>

#include "tensor/tensor.h"

namespace tandem::test {

class TorchFixture {
public:
    // Loads tests/torch/fixtures/<name>.safetensors onto the test device.
    explicit TorchFixture(const std::string& name);
    // The tensor `key`; fails the test (and throws) when the fixture lacks it.
    const Tensor& operator[](const std::string& key) const;
    bool has(const std::string& key) const { return tensors_.count(key) != 0; }
    const std::string& name() const { return name_; }

private:
    std::string name_;
    std::map<std::string, Tensor> tensors_;
};

// Element-wise |actual - expected| <= atol + rtol * |expected| (torch.allclose's rule), with
// equal shapes; a failure names `what`, the first bad index and both values.
void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what,
                  float rtol = 1e-5f, float atol = 1e-6f);

}  // namespace tandem::test
