"""Embedding (issue 18) on fixed indices, for tests/core/layers/test_embedding.cpp: the weight,
indices (as f32, which Tandem takes; repeated ones included), dy, and PyTorch's y and the
weight's gradient."""
import torch


def cases():
    layer = torch.nn.Embedding(10, 4)
    ids = torch.tensor([[1, 3, 3, 9], [0, 3, 7, 1], [5, 5, 5, 2]])
    y = layer(ids)
    dy = torch.rand(*y.shape) * 2 - 1
    y.backward(dy)
    return {"embedding": {"weight": layer.weight.detach(), "x": ids.float(), "dy": dy, "y": y.detach(),
                          "grad.weight": layer.weight.grad}}
