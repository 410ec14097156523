"""bf16 mixed precision on the CPU (issue 21): a convolution and a Linear layer whose forward
runs under torch.autocast('cpu', dtype=torch.bfloat16), on fixed inputs, for
tests/core/layers/test_mixed_precision.cpp.

Each fixture holds x, weight, bias and dy (float32), and what PyTorch computes from them: y (its
bfloat16 output, as float32), dx, dweight and dbias (the gradients of <y, dy>, each rounded to
bfloat16 by autocast's casts). Tandem writes float32 results: the two agree to that rounding.

Made with PyTorch 2 (`.venv-torch/bin/python tests/torch/make_fixtures.py mixed_precision`, the
peer of issue 21), not Debian's 1.13: its bf16 Linear backward rounds partial sums to bfloat16,
which put its input gradient 1% of the largest value off the exact sum of the rounded operands
(2.15: within the output's rounding).
"""
import torch

if int(torch.__version__.split(".")[0]) < 2:
    raise SystemExit("cases_mixed_precision.py needs PyTorch 2 or later (see its docstring)")


def fixed(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) * 2 - 1


def run(layer, x_shape):
    x = fixed(x_shape, 1).requires_grad_(True)
    with torch.no_grad():
        layer.weight.copy_(fixed(layer.weight.shape, 2))
        layer.bias.copy_(fixed(layer.bias.shape, 3))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = layer(x)
    assert y.dtype == torch.bfloat16
    dy = fixed(y.shape, 4)
    y.float().backward(dy)
    return {"x": x.detach(), "weight": layer.weight.detach(), "bias": layer.bias.detach(),
            "dy": dy, "y": y.detach().float(), "dx": x.grad, "dweight": layer.weight.grad,
            "dbias": layer.bias.grad}


def cases():
    return {
        "bf16_conv2d": run(torch.nn.Conv2d(8, 16, 3, stride=1, padding=1), (2, 8, 7, 7)),
        "bf16_conv2d_strided": run(torch.nn.Conv2d(16, 24, 3, stride=2, padding=1), (3, 16, 9, 9)),
        "bf16_linear": run(torch.nn.Linear(37, 13), (5, 37)),
    }
