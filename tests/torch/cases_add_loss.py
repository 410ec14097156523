"""Several losses in one step (nn.AddLoss): a code feeds a classifier head and a decoder, and the
objective is cross-entropy on the head plus 0.5 x the MSE of the decoder's output against the
input (reduction 'mean' for both), with every parameter's gradient and the objective."""
import torch


def fixed(shape, seed, lo=-1.0, hi=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) * (hi - lo) + lo


def cases():
    x = fixed((4, 6), 11)
    labels = torch.tensor([0, 2, 1, 2])
    enc, dec, head = torch.nn.Linear(6, 3), torch.nn.Linear(3, 6), torch.nn.Linear(3, 3)
    with torch.no_grad():
        for i, layer in enumerate((enc, dec, head)):
            layer.weight.copy_(fixed(layer.weight.shape, 20 + i, -0.5, 0.5))
            layer.bias.copy_(fixed(layer.bias.shape, 30 + i, -0.1, 0.1))
    code = enc(x)
    recon = dec(code)
    added = 0.5 * torch.nn.functional.mse_loss(recon, x)
    loss = torch.nn.functional.cross_entropy(head(code), labels) + added
    loss.backward()
    out = {"x": x, "labels": labels.int(), "loss": loss.detach().reshape(1), "added": added.detach().reshape(1)}
    for name, layer in (("enc", enc), ("dec", dec), ("head", head)):
        out[name + ".weight"] = layer.weight.detach()
        out[name + ".bias"] = layer.bias.detach()
        out[name + ".weight.grad"] = layer.weight.grad
        out[name + ".bias.grad"] = layer.bias.grad
    return {"add_loss_autoencoder_head": out}
