#!/usr/bin/env python3
"""The PyTorch peer of bench/train_step_lstm: examples/text_lstm's model and train step in
eager PyTorch, on the same shapes.

Embedding(vocab, embed) -> nn.LSTM(embed, units, batch_first) returning the sequence ->
Linear(units, vocab) at every step; cross-entropy from logits, mean over batch x time;
Adam(lr, betas 0.9/0.999, eps 1e-7, Keras's). One timed step is forward, loss, backward and
the optimizer update on a fresh batch of random token ids (the ids do not change the work).
nn.LSTM has two bias vectors where Keras has one: 4 * units more parameters, noise in time.

Prints one JSON object: the median ms per step over --steps steps after --warmup, and the
BLAS torch runs on (the peers' blas_probe: "kind" must be "openblas"). Run it under
/usr/bin/python3 (Debian's numpy and torch) with OMP_NUM_THREADS=2, as bench_main.h's
pytorch_peer does.
"""
import argparse
import json
import os
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_peer


class TextLstm(nn.Module):
    def __init__(self, vocab, embed, units):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, units, batch_first=True)
        self.dense = nn.Linear(units, vocab)

    def forward(self, tokens):  # tokens: (batch, T) -> logits (batch, T, vocab)
        h, _ = self.lstm(self.embedding(tokens))
        return self.dense(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--embed", type=int, default=32)
    ap.add_argument("--units", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--peers", default=os.path.join(os.path.dirname(__file__), "../../shared/peers"))
    args = ap.parse_args()

    res = torch_peer.start(args.threads, args.peers)

    model = TextLstm(args.vocab, args.embed, args.units)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-7)
    g = torch.Generator().manual_seed(1)

    def step():
        x = torch.randint(0, args.vocab, (args.batch, args.seq_len), generator=g)
        y = torch.randint(0, args.vocab, (args.batch, args.seq_len), generator=g)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1))
        accuracy = (logits.argmax(-1) == y).float().mean()  # Kiln's step updates "accuracy" too
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return float(loss), float(accuracy)

    res.update({"vocab": args.vocab, "seq_len": args.seq_len, "embed": args.embed, "units": args.units,
                "batch": args.batch, "steps": args.steps,
                "ms_per_step_median": torch_peer.median_ms(step, args.warmup, args.steps)})
    print(json.dumps(res))


if __name__ == "__main__":
    main()
