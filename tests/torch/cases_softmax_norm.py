"""Softmax, LogSoftmax and LayerNorm (issue 18) on fixed inputs, for
tests/core/layers/test_softmax_norm.cpp: x, dy, and what PyTorch computes: y, dx and the
parameters' gradients (grad.weight, grad.bias) where there are any."""
import torch

LAYERS = {
    "softmax_features": (lambda: torch.nn.Softmax(dim=-1), (4, 7)),
    "softmax_channels": (lambda: torch.nn.Softmax(dim=1), (2, 5, 3, 4)),
    "log_softmax_rows": (lambda: torch.nn.LogSoftmax(dim=2), (2, 3, 6, 4)),
    "layer_norm_last": (lambda: torch.nn.LayerNorm(6), (3, 5, 6)),
    "layer_norm_image": (lambda: torch.nn.LayerNorm([3, 4, 5]), (2, 3, 4, 5)),
    "layer_norm_plain": (lambda: torch.nn.LayerNorm(8, eps=1e-3, elementwise_affine=False), (4, 8)),
}


def cases():
    out = {}
    for name, (make, shape) in LAYERS.items():
        layer = make()
        for p in layer.parameters():  # away from the ones and zeros PyTorch starts with
            with torch.no_grad():
                p.copy_(torch.rand(p.shape) + 0.5)
        x = (torch.rand(*shape) * 6 - 3).requires_grad_(True)
        dy = torch.rand(*shape) * 2 - 1
        y = layer(x)
        y.backward(dy)
        result = {"x": x.detach(), "dy": dy, "y": y.detach(), "dx": x.grad}
        for pname, p in layer.named_parameters():
            result[pname] = p.detach()
            result["grad." + pname] = p.grad
        out[name] = result
    return out
