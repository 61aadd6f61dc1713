"""Run the main job: for now, one forward and backward pass of a tiny model on one sentence pair.

This verb grows into the whole flow of the paper (data, BPE, training, averaging, beam search,
BLEU); until then it shows the model computing, and says so.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")


def run(args: argparse.Namespace) -> int:
    import torch
    import torch.nn.functional as F

    from aiayn import Transformer, model_preset

    torch.manual_seed(args.seed)
    words = ["<pad>", "<s>", "</s>", "I", "love", "you", "ich", "liebe", "dich"]
    ids = {w: i for i, w in enumerate(words)}
    cfg = model_preset("tiny", vocab_size=len(words))
    model = Transformer(cfg)
    src = torch.tensor([[ids["I"], ids["love"], ids["you"], ids["</s>"]]])  # (1, S)
    tgt = torch.tensor([[ids["<s>"], ids["ich"], ids["liebe"], ids["dich"], ids["</s>"]]])
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]  # 3.2.3: outputs shifted right
    logits = model(src, tgt_in)  # (1, T, V)
    loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten())
    loss.backward()
    grad_norm = torch.sqrt(sum(p.grad.pow(2).sum() for p in model.parameters()))
    print("aiayn demo (preview): the full training demo is not built yet.")
    print(f"model: tiny preset, {model.num_parameters():,} parameters, vocabulary {len(words)}")
    print("source: I love you </s>   target: <s> ich liebe dich </s>")
    print(f"logits shape {tuple(logits.shape)}, untrained cross-entropy {loss.item():.4f} nats")
    print(f"one backward pass: gradient norm {grad_norm.item():.4f}")
    return 0
