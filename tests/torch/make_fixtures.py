#!/usr/bin/python3
"""Writes the PyTorch reference fixtures the C++ tests compare against (tests/torch/fixtures).

Each cases_*.py module beside this script has a function cases() returning
{fixture name: {tensor name: torch tensor}}: fixed inputs and what PyTorch computes from them
(outputs, input and parameter gradients, optimizer steps). Every fixture is written as a
safetensors file the tests read with Tandem's own reader (tests/support/torch_fixture.h).

Run it with Debian's PyTorch (apt-get install python3-torch) after changing a case:
    tests/torch/make_fixtures.py            # every module
    tests/torch/make_fixtures.py optim      # cases_optim.py only
The files are committed, so the tests need no PyTorch.
"""
import importlib
import json
import pathlib
import struct
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "fixtures"
DTYPES = {torch.float32: "F32", torch.int32: "I32", torch.uint8: "U8"}


def write_safetensors(path, tensors, metadata):
    """The safetensors layout: 8-byte header length, JSON header (space-padded to 8), data."""
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        if t.dtype == torch.float64:
            t = t.float()
        if t.dtype == torch.int64:
            t = t.int()
        data = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    tmp.replace(path)


def main(selected):
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    modules = sorted(p.stem for p in HERE.glob("cases_*.py"))
    if selected:
        modules = [m for m in modules if m[len("cases_"):] in selected]
    OUT.mkdir(exist_ok=True)
    sys.path.insert(0, str(HERE))
    for module in modules:
        for name, tensors in importlib.import_module(module).cases().items():
            metadata = {"torch": torch.__version__, "module": module + ".py"}
            write_safetensors(OUT / f"{name}.safetensors", tensors, metadata)
            print(f"{name}: {len(tensors)} tensors")


if __name__ == "__main__":
    main(sys.argv[1:])
