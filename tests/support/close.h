// Comparisons of a layer's values with a reference's, for the layer tests (torch_fixture.h has
// torch.allclose's rule for values checked against PyTorch).
#pragma once

#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace tandem::test {

// Element-wise |a - b| <= rtol * max(1, |b|); a failure names `what` and the index.
void expect_close(const std::vector<float>& a, const std::vector<float>& b, double rtol,
                  const std::string& what);

// |actual - expected| <= 1e-4 * max(1, max |expected|) everywhere: two kernels' sums of the
// same products, in different orders, agree to the magnitude of the largest value.
void expect_close_to_scale(const Tensor& actual, const Tensor& expected, const std::string& what);

}  // namespace tandem::test
