#!/usr/bin/env python3
"""The PyTorch peer of bench/train_step_mobilenet: torchvision's MobileNetV2 train step and
ResNet-50 inference, eager, on the same shapes as Kiln's keras.applications builders.

MobileNetV2 (width 1.0, 1000 classes, random weights): forward in train mode (BatchNorm on
batch statistics, dropout 0.2 as torchvision's classifier has it; Keras's has none), cross-entropy
from logits, backward and SGD with momentum 0.9. ResNet-50: forward in eval mode under
torch.inference_mode. Inputs are random float32 images and random labels (the values do not
change the work). Each model runs in both of PyTorch's layouts, contiguous NCHW and
channels_last (NHWC, Kiln's and Keras's layout); the figure quoted is the faster one, so the peer
is at its best setting on this machine.

Prints one JSON object: the median ms per MobileNetV2 step and per ResNet-50 forward over
--steps after --warmup, and the BLAS torch runs on (the peers' blas_probe). Run it under
/usr/bin/python3 (Debian's torch and torchvision) with OMP_NUM_THREADS set, as
bench/train_step_mobilenet does.
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F
import torchvision

import torch_peer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--inference-batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--peers", default=os.path.join(os.path.dirname(__file__), "../../shared/peers"))
    args = ap.parse_args()

    res = torch_peer.start(args.threads, args.peers, torchvision=torchvision.__version__)

    s = args.image_size
    for layout, fmt in (("nchw", torch.contiguous_format), ("channels_last", torch.channels_last)):
        train, infer = run(args, s, fmt)
        res[f"mobilenet_v2_train_ms_median_{layout}"] = train
        res[f"resnet50_inference_ms_median_{layout}"] = infer
    for key in ("mobilenet_v2_train_ms_median", "resnet50_inference_ms_median"):
        res[key] = min(res[key + "_nchw"], res[key + "_channels_last"])
    res.update({"image_size": s, "batch": args.batch, "inference_batch": args.inference_batch,
                "steps": args.steps})
    print(json.dumps(res))


def run(args, s, fmt):
    """Median ms of a MobileNetV2 train step and of a ResNet-50 forward in memory format fmt."""
    g = torch.Generator().manual_seed(1)
    model = torchvision.models.mobilenet_v2(weights=None, num_classes=1000).to(memory_format=fmt)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand((args.batch, 3, s, s), generator=g).to(memory_format=fmt)
    y = torch.randint(0, 1000, (args.batch,), generator=g)

    def train_step():
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        accuracy = (logits.argmax(-1) == y).float().mean()  # Kiln's step updates "accuracy" too
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return float(loss), float(accuracy)

    train_ms = torch_peer.median_ms(train_step, args.warmup, args.steps)

    resnet = torchvision.models.resnet50(weights=None).to(memory_format=fmt)
    resnet.eval()
    xi = torch.rand((args.inference_batch, 3, s, s), generator=g).to(memory_format=fmt)

    def infer():
        with torch.inference_mode():
            return resnet(xi).sum().item()

    return train_ms, torch_peer.median_ms(infer, args.warmup, args.steps)


if __name__ == "__main__":
    main()
