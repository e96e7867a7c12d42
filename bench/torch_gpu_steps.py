#!/usr/bin/env python3
"""The PyTorch GPU peer of Kiln's train-step benches (W1, W2, W3 of shared/peers/README.md),
in eager CUDA PyTorch on the same GPU, run by scripts/device_check.sh.

  W1  the seed MLP: 784 -> Dense(128, relu) -> Dense(10), batch 128
  W2  the Keras MNIST convnet: Conv(32, 3x3, relu) -> MaxPool 2 -> Conv(64, 3x3, relu) ->
      MaxPool 2 -> Flatten -> Dropout(0.5) -> Dense(10), batch 128 (NHWC data, channels_last)
  W3  the wide MLP: 784 -> 1024 relu -> 1024 relu -> 10, batch 512, in f32 and in bf16
      (autocast, the mixed-precision policy's peer); its matmul TFLOP/s against the GPU's peak
      is the "fraction of peak" figure

Every step: forward, sparse softmax cross-entropy from logits (mean), backward, Adam(lr 1e-3,
betas 0.9/0.999, eps 1e-7, Keras's), on a batch already on the GPU (random MNIST-shaped
inputs: the values do not change the work). The median of --steps steps after --warmup, each
timed with CUDA events. One JSON line per workload; where this PyTorch has no CUDA (or there
is no GPU) one JSON line saying so, and exit status 0: the device check reports it, it is not a
failure of Kiln.
"""
import argparse
import json
import statistics
import sys


def workloads(torch, nn):
    def mlp(widths):
        layers = [nn.Flatten()]
        for i in range(len(widths) - 1):
            layers.append(nn.Linear(widths[i], widths[i + 1]))
            if i + 2 < len(widths):
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    def convnet():
        return nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Dropout(0.5), nn.Linear(64 * 5 * 5, 10))

    # name, model, batch, input shape, matmul flops per sample (forward; x3 for a train step)
    return [
        ("w1_seed_mlp", lambda: mlp([784, 128, 10]), 128, (1, 28, 28), 2 * (784 * 128 + 128 * 10)),
        ("w2_convnet", convnet, 128, (1, 28, 28), None),
        ("w3_wide_mlp", lambda: mlp([784, 1024, 1024, 10]), 512, (1, 28, 28),
         2 * (784 * 1024 + 1024 * 1024 + 1024 * 10)),
    ]


def bench(torch, F, name, make, batch, shape, flops, dtype, args):
    torch.manual_seed(0)
    model = make().cuda()
    if name == "w2_convnet":
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    x = torch.rand((batch,) + shape, device="cuda")
    if name == "w2_convnet":
        x = x.to(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (batch,), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == "bf16"):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.steps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    t = statistics.median(times)
    out = {"bench": "torch_gpu_step", "workload": name, "dtype": dtype, "batch": batch,
           "median_step_ms": t * 1e3, "samples_per_s_median_step": batch / t}
    if flops is not None:
        out["matmul_tflops"] = 3 * flops * batch / t / 1e12  # forward + two backward matmuls
        if args.peak_tflops:
            out["fraction_of_peak"] = out["matmul_tflops"] / args.peak_tflops
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--peak-tflops", type=float, default=0.0,
                    help="the GPU's dense bf16 peak, for W3's fraction of it (H200/H100 SXM: 989)")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError as e:
        print(json.dumps({"bench": "torch_gpu_step", "error": "no PyTorch: %s" % e}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"bench": "torch_gpu_step", "error": "this PyTorch (%s, CUDA %s) sees no CUDA GPU"
                          % (torch.__version__, torch.version.cuda)}))
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 is f32, as in Kiln's f32 steps
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    gpu = torch.cuda.get_device_name()
    for name, make, batch, shape, flops in workloads(torch, nn):
        for dtype in (["f32", "bf16"] if name == "w3_wide_mlp" else ["f32"]):
            r = bench(torch, F, name, make, batch, shape, flops, dtype, args)
            r.update({"framework": "pytorch-cuda-eager", "torch": torch.__version__, "gpu": gpu})
            print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
