"""Tensor math from Lua (issue 18) on fixed inputs, for tests/core/tensor/test_tensor_math.cpp
and tests/lua/test_tensor_math.lua.

One fixture, "tensor_math": the inputs (a, b of 2x3x4; row of 4 and col of 3x1 to broadcast;
pos, positive, for log, sqrt and pow; matrices for matmul; x4 of 2x3x4x5 for the layouts) and
what PyTorch computes from them, one tensor per operation. Dimensions are PyTorch's (0-based);
the Lua test adds 1. max's indices are 0-based here.
"""
import torch


def cases():
    torch.manual_seed(18)  # the same inputs whichever modules run before this one
    a = torch.randn(2, 3, 4)
    b = torch.randn(2, 3, 4)
    row = torch.randn(4)
    col = torch.randn(3, 1)
    pos = torch.rand(2, 3, 4) + 0.1
    m1, m2 = torch.randn(3, 5), torch.randn(5, 4)
    bm1, bm2 = torch.randn(2, 3, 5), torch.randn(2, 5, 4)
    x4 = torch.randn(2, 3, 4, 5)
    max_values, max_indices = a.max(dim=1)
    out = {
        "a": a, "b": b, "row": row, "col": col, "pos": pos,
        "m1": m1, "m2": m2, "bm1": bm1, "bm2": bm2, "x4": x4,
        "add": a + b, "sub": a - b, "mul": a * b, "div": a / pos,
        "add_row": a + row, "mul_col": a * col, "sub_col_row": col - row,
        "mul_scalar": a * 2.5, "rsub_scalar": 1.5 - a, "rdiv_scalar": 2.0 / pos,
        "exp": a.exp(), "log": pos.log(), "tanh": a.tanh(), "sigmoid": a.sigmoid(),
        "abs": a.abs(), "sqrt": pos.sqrt(), "neg": -a, "pow": pos.pow(1.7), "square": a.pow(2),
        "matmul": m1 @ m2, "bmm": bm1 @ bm2, "bmm_shared": bm1 @ m2,
        "sum1": a.sum(dim=1), "mean2": a.mean(dim=2), "sum0_keep": a.sum(dim=0, keepdim=True),
        "sum_all": a.sum(), "mean_all": a.mean(),
        "max1_values": max_values, "max1_indices": max_indices.int(),
        "argmax2": a.argmax(dim=2).int(),
        "transpose02": a.transpose(0, 2).contiguous(),
        "narrow1": a.narrow(1, 1, 2).contiguous(),
        "cat1": torch.cat([a, b[:, :2]], dim=1), "cat2": torch.cat([a, b, a], dim=2),
        "x4_sum1": x4.sum(dim=1), "x4_transpose13": x4.transpose(1, 3).contiguous(),
        "x4_mul_x4": x4 * x4.flip(0),
    }
    return {"tensor_math": out}
