#!/usr/bin/env python3
"""PyTorch on one GPU: training-step throughput (forward, loss, backward, SGD with momentum) of
the peers' reference nets on synthetic data, the GPU counterpart of ../shared/peers/bench_torch.py.

usage: bench/torch_cuda.py --net NET --batch B [--peers DIR] [--channels-last] [--tf32]
       [--precision fp32|fp16|bf16] [--iters N] [--warmup W]
Each timed step ends with torch.cuda.synchronize(), so the time is the GPU's, not the launches'.
--precision fp16 / bf16: mixed precision as PyTorch documents it, the forward and the loss under
torch.autocast('cuda', dtype), and in fp16 a GradScaler (dynamic loss scaling, as Tandem's
T.Engine scales by default in fp16); the peer of `tandem bench --device=cuda --precision=...`.
Prints one JSON line with the median and mean images/s, as bench_torch.py does.
"""
import argparse, json, os, statistics, sys

from torch_steps import sgd_setup, time_steps

ap = argparse.ArgumentParser()
ap.add_argument('--net', required=True)
ap.add_argument('--batch', type=int, required=True)
ap.add_argument('--peers', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                                'shared', 'peers'),
                help='folder holding the peers\' nets.py')
ap.add_argument('--channels-last', action='store_true')
ap.add_argument('--iters', type=int, default=0, help='timed iterations (0: about 5 s)')
ap.add_argument('--warmup', type=int, default=10)
ap.add_argument('--tf32', action='store_true', help='let PyTorch use TF32 tensor cores (its default '
                                                   'for convolutions)')
ap.add_argument('--precision', default='fp32', choices=['fp32', 'fp16', 'bf16'],
                help='fp16/bf16: forward and loss under autocast (fp16 with a GradScaler)')
a = ap.parse_args()

import torch
sys.path.insert(0, a.peers)
from nets import NETS

if not torch.cuda.is_available():
    sys.exit('torch_cuda.py: PyTorch sees no GPU')
# cuDNN picks its fastest algorithms, as Tandem's devices do with benchmark = true. Float32
# throughout, as Tandem computes (FMA, no TF32 tensor cores) unless --tf32 says otherwise.
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = a.tf32
torch.backends.cuda.matmul.allow_tf32 = a.tf32
torch.manual_seed(0)
# The 224-pixel nets are torchvision's, which recipes/nets/{resnet50,vgg16,alexnet224}.lua equal.
if a.net in ('resnet50', 'vgg16', 'alexnet224'):
    import torchvision.models as models
    ctor = {'resnet50': models.resnet50, 'vgg16': models.vgg16, 'alexnet224': models.alexnet}[a.net]
    model, shape, classes = ctor(weights=None), (3, 224, 224), 1000
else:
    ctor, shape = NETS[a.net]
    model, classes = ctor(), 10
model = model.cuda().train()
x = torch.randn(a.batch, *shape, device='cuda')
y = torch.randint(0, classes, (a.batch,), device='cuda')
model, x, opt, crit = sgd_setup(model, x, a.channels_last)


half = {'fp16': torch.float16, 'bf16': torch.bfloat16}.get(a.precision)
scaler = torch.amp.GradScaler('cuda') if a.precision == 'fp16' else None


def step():
    opt.zero_grad(set_to_none=True)
    if half is None:
        crit(model(x), y).backward()
        opt.step()
    else:
        with torch.autocast('cuda', dtype=half):
            loss = crit(model(x), y)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    torch.cuda.synchronize()


iters, ts = time_steps(step, a.warmup, a.iters, budget_s=5.0, most=2000)
med = statistics.median(ts)
print(json.dumps(dict(net=a.net, batch=a.batch, device=torch.cuda.get_device_name(),
                      torch=torch.__version__, cudnn=torch.backends.cudnn.version(),
                      channels_last=a.channels_last, tf32=a.tf32, precision=a.precision,
                      iters=iters, median_s=round(med, 6),
                      img_per_s_median=round(a.batch / med, 1),
                      img_per_s_mean=round(a.batch * iters / sum(ts), 1))), flush=True)
