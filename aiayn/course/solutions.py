"""Reference solutions of the course's exercises, written as a learner would, in plain PyTorch.

Kept apart from the notebooks, which ask the learner to write these. The notebooks' build
(``notebooks/build.py``) puts each function in place of its exercise's stub to run the course
with the solutions filled in; ``from aiayn.course.solutions import layer_norm`` shows one.
Each function's name is its exercise's name.
"""

from __future__ import annotations

import math
from collections import Counter

import torch


# Notebook 1 ---------------------------------------------------------------------------------
def positional_encoding(n_positions, d_model):
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)[None, :]  # (1, D/2)
    angle = pos / 10000 ** (two_i / d_model)  # (L, D/2)
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)  # (L, D)
    pe[:, 0::2] = torch.sin(angle)  # even dimensions: sin
    pe[:, 1::2] = torch.cos(angle)  # odd dimensions: cos
    return pe


def input_embedding(ids, E):
    d_model = E.shape[1]
    return math.sqrt(d_model) * E[ids] + positional_encoding(ids.shape[1], d_model)  # (B, L, D)


def pe_rotation(k, d_model):
    R = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        w = 1 / 10000 ** (2 * i / d_model)
        c, s = math.cos(w * k), math.sin(w * k)
        R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]])
    return R


# Notebook 2 ---------------------------------------------------------------------------------
def attention_scores(Q, K):
    d_k = Q.shape[-1]
    return Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # (B, H, Lq, Lk)


def softmax_rows(S):
    e = torch.exp(S - S.max(dim=-1, keepdim=True).values)  # the row maximum first: no overflow
    return e / e.sum(dim=-1, keepdim=True)


def split_heads(X, h):
    B, L, d_model = X.shape
    return X.view(B, L, h, d_model // h).transpose(1, 2)  # (B, H, L, d_k)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, h):
    B, L, _ = X.shape
    Q, K, V = split_heads(X @ W_Q, h), split_heads(X @ W_K, h), split_heads(X @ W_V, h)
    A = torch.softmax(attention_scores(Q, K), dim=-1)  # (B, H, L, L)
    heads = A @ V  # (B, H, L, d_k)
    concat = heads.transpose(1, 2).reshape(B, L, -1)  # (B, L, H d_k)
    return concat @ W_O  # (B, L, d_model)


# Notebook 3 ---------------------------------------------------------------------------------
def layer_norm(x, gamma, beta, eps):
    mu = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


def feed_forward(x, W_1, b_1, W_2, b_2):
    return torch.relu(x @ W_1 + b_1) @ W_2 + b_2


def add_and_norm(x, sublayer, gamma, beta):
    return layer_norm(x + sublayer, gamma, beta, 1e-5)


# Notebook 4 ---------------------------------------------------------------------------------
def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()  # True on and below the diagonal


def note_mask(T):
    M = torch.zeros(T, T)
    return M.masked_fill(~causal_mask(T), float("-inf"))


def padding_mask(ids, pad_id):
    return (ids != pad_id)[:, None, None, :]  # (B, 1, 1, L)


def masked_attention(Q, K, V, keep):
    S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (B, H, Lq, Lk)
    S = S.masked_fill(~keep, float("-inf"))  # before the softmax
    A = torch.softmax(S, dim=-1)
    return A @ V, A


def cross_attention(H_D, Z_E, W_Q, W_K, W_V, W_O, h):
    B, T, d_model = H_D.shape
    S, d_k = Z_E.shape[1], d_model // h
    Q = (H_D @ W_Q).view(B, T, h, d_k).transpose(1, 2)  # queries from the decoder
    K = (Z_E @ W_K).view(B, S, h, d_k).transpose(1, 2)  # keys and values from the encoder
    V = (Z_E @ W_V).view(B, S, h, d_k).transpose(1, 2)
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)  # (B, H, T, S)
    return (A @ V).transpose(1, 2).reshape(B, T, -1) @ W_O  # (B, T, d_model)


# Notebook 5 ---------------------------------------------------------------------------------
def output_logits(Z_D, E):
    return Z_D @ E.T  # (B, T, V)


def label_smoothed_loss(logits, target, eps, pad_id):
    V = logits.shape[-1]
    logp = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    q = torch.full_like(logp, eps / (V - 1))
    q.scatter_(-1, target[..., None], 1 - eps)  # 1 - eps on the correct token
    rows = -(q * logp).sum(dim=-1)  # (B, T)
    keep = target != pad_id  # padding rows do not count
    return (rows * keep).sum() / keep.sum()


def loss_grad(logits, target, eps, pad_id):
    V = logits.shape[-1]
    p = torch.softmax(logits, dim=-1)
    q = torch.full_like(p, eps / (V - 1))
    q.scatter_(-1, target[..., None], 1 - eps)
    keep = (target != pad_id)[..., None]
    return (p - q) * keep / keep.sum()


def softmax_backward(dA, A):
    return A * (dA - (dA * A).sum(dim=-1, keepdim=True))


# Notebook 6 ---------------------------------------------------------------------------------
def lrate(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def decoder_input(tgt_out):
    bos = torch.full_like(tgt_out[:, :1], 1)
    tgt_in = torch.cat([bos, tgt_out[:, :-1]], dim=1)  # shifted right
    return tgt_in.masked_fill(tgt_out == 0, 0)  # padded where the target is (no </s> left)


# Notebook 7 ---------------------------------------------------------------------------------
def length_penalty(length, alpha):
    return ((5 + length) / 6) ** alpha


def beam_step(logprob, logp, t, alpha):
    K, V = logp.shape
    total = logprob[:, None] + logp  # (K, V): log P of each extension
    new, idx = total.view(-1).topk(K)
    parent, token = idx // V, idx % V
    finished = token == 2  # </s>
    score = torch.where(finished, new / length_penalty(t, alpha), new)
    return new, parent, token, score


def bleu(hyps, refs):
    c = sum(len(h.split()) for h in hyps)
    r = sum(len(x.split()) for x in refs)
    log_p = 0.0
    for n in range(1, 5):
        match = total = 0
        for h, x in zip(hyps, refs, strict=True):
            hw, xw = h.split(), x.split()
            hn = Counter(tuple(hw[i : i + n]) for i in range(len(hw) - n + 1))
            xn = Counter(tuple(xw[i : i + n]) for i in range(len(xw) - n + 1))
            match += sum(min(k, xn[g]) for g, k in hn.items())  # clipped counts
            total += sum(hn.values())
        log_p += math.log(match / total) / 4
    bp = math.exp(1 - r / c) if c < r else 1.0
    return 100 * bp * math.exp(log_p)


# Notebook 8 ---------------------------------------------------------------------------------
def perplexity(nll_sum, tokens):
    return math.exp(nll_sum / tokens)


def ablate_head(W_O, head, h):
    d_k = W_O.shape[0] // h
    W = W_O.clone()
    W[head * d_k : (head + 1) * d_k] = 0  # the rows that head i's output multiplies
    return W
