"""Losses: torch.nn.MSELoss and BCEWithLogitsLoss (reduction 'mean') on fixed outputs and
targets, with the gradient of the mean loss with respect to the output; a 2-D batch, a 4-D
one (an image autoencoder's output) and BCE on logits large enough to overflow a naive exp."""
import torch


def fixed(shape, seed, lo=-1.0, hi=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) * (hi - lo) + lo


def case(loss_fn, output, target):
    y = output.clone().requires_grad_(True)
    loss = loss_fn(y, target)
    loss.backward()
    return {"output": output, "target": target, "loss": loss.detach().reshape(1), "grad": y.grad}


def cases():
    mse, bce = torch.nn.MSELoss(), torch.nn.BCEWithLogitsLoss()
    probabilities = fixed((4, 5), 3, 0.0, 1.0)
    large = torch.tensor([[50.0, -50.0, 30.0], [-80.0, 0.5, 20.0]])
    return {
        "mse_2d": case(mse, fixed((4, 5), 1), fixed((4, 5), 2)),
        "mse_4d": case(mse, fixed((2, 3, 2, 2), 4), fixed((2, 3, 2, 2), 5)),
        "bce_2d": case(bce, fixed((4, 5), 6, -3.0, 3.0), probabilities),
        "bce_4d": case(bce, fixed((2, 3, 2, 2), 7, -3.0, 3.0), (fixed((2, 3, 2, 2), 8) > 0).float()),
        "bce_large": case(bce, large, torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])),
    }
