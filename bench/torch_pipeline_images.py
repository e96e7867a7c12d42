#!/usr/bin/env python3
"""The PyTorch peer of bench/pipeline_images: torchvision's ImageFolder over the same JPEG files
with the same transforms (RandomCrop(224), RandomHorizontalFlip, ToTensor, Normalize to
[-1, 1]) and a DataLoader(batch 32, shuffle, num_workers=2), as the torchvision tutorials write
it. Prints one JSON object: the median epoch's images/s after the first, and the image decoder
behind it (PIL, on Debian's libjpeg-turbo). Run it under /usr/bin/python3 (Debian's torch and
torchvision).
"""
import argparse
import json
import statistics
import time

import torch
import torchvision
from torchvision import transforms

import torch_peer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--crop", type=int, default=224)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peers", default="../shared/peers")
    args = ap.parse_args()

    res = torch_peer.start(args.threads, args.peers, torchvision=torchvision.__version__)
    res["image_backend"] = torchvision.get_image_backend()
    tf = transforms.Compose([transforms.RandomCrop(args.crop), transforms.RandomHorizontalFlip(),
                             transforms.ToTensor(), transforms.Normalize([0.5] * 3, [0.5] * 3)])
    ds = torchvision.datasets.ImageFolder(args.root, transform=tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers)
    rates = []
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        n = sum(x.shape[0] for x, _ in loader)
        if epoch > 0:
            rates.append(n / (time.perf_counter() - t0))
    res.update({"images": len(ds), "crop": args.crop, "batch": args.batch, "workers": args.workers,
                "epochs": args.epochs, "images_per_s": statistics.median(rates)})
    print(json.dumps(res))


if __name__ == "__main__":
    main()
