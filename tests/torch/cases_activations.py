"""Element-wise activations (issue 18) on fixed inputs, for tests/core/layers/test_activation.cpp.

Each fixture holds x (2x3x4x5, uniform in [-4, 4): both tails of sigmoid, tanh and GELU), dy,
and what PyTorch computes from them: y = layer(x) and dx, the gradient of <y, dy>.
"""
import torch

LAYERS = {
    "activation_relu": lambda: torch.nn.ReLU(),
    "activation_leaky_relu": lambda: torch.nn.LeakyReLU(0.2),
    "activation_sigmoid": lambda: torch.nn.Sigmoid(),
    "activation_tanh": lambda: torch.nn.Tanh(),
    "activation_gelu": lambda: torch.nn.GELU(),
    "activation_gelu_tanh": lambda: torch.nn.GELU(approximate="tanh"),
}


def cases():
    out = {}
    for name, make in LAYERS.items():
        x = (torch.rand(2, 3, 4, 5) * 8 - 4).requires_grad_(True)
        dy = torch.rand(2, 3, 4, 5) * 2 - 1
        y = make()(x)
        y.backward(dy)
        out[name] = {"x": x.detach(), "dy": dy, "y": y.detach(), "dx": x.grad}
    return out
