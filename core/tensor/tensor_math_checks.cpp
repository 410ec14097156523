#include "tensor/tensor_math_checks.h"

#include "device/device.h"

namespace tandem::math_detail {

Tensor host_input(const Tensor& x, std::string_view function, std::string_view arg) {
    TANDEM_CHECK(x.defined()) << function << ": argument '" << arg << "' is an undefined tensor";
    TANDEM_CHECK(x.dtype() == DType::f32)
        << function << ": argument '" << arg << "' must be an f32 tensor, got " << x.description();
    // The loops below read memory through plain pointers: a GPU's memory would crash them.
    TANDEM_CHECK(x.device().host_accessible())
        << function << ": argument '" << arg << "' is " << x.description()
        << ", in memory the host cannot read; tensor math runs on the host and CPU devices "
           "(copy it to one first)";
    return x.to_layout(Layout::contiguous);
}

void check_same_device(const Tensor& a, const Tensor& b, std::string_view function) {
    TANDEM_CHECK(&a.device() == &b.device())
        << function << ": the operands are on different devices: " << a.description() << " and "
        << b.description() << " (copy one to the other's device)";
}

void check_dim(const Tensor& x, int dim, std::string_view function, std::string_view arg) {
    const int rank = x.shape().rank();
    TANDEM_CHECK_AS(ShapeError, dim >= 0 && dim < rank)
        << function << ": " << arg << " " << dim << " is out of range for " << x.description()
        << " (rank " << rank << ", dimensions from 0)";
}

Around around(const Shape& shape, int dim) {
    Around a;
    for (int i = 0; i < shape.rank(); ++i) {
        if (i < dim)
            a.outer *= shape[i];
        else if (i == dim)
            a.size = shape[i];
        else
            a.inner *= shape[i];
    }
    return a;
}

Tensor result_like(const Tensor& like, const Shape& shape) {
    return Tensor::empty(shape, like.device(), DType::f32);
}

}  // namespace tandem::math_detail
