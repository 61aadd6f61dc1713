"""Greedy and beam search over a step function, with the paper's length penalty.  Section 6.1.

"We used beam search with a beam size of 4 and length penalty alpha = 0.6 [GNMT]. ... We set
the maximum output length during inference to input length + 50, but terminate early when
possible." (6.1)

The searches take a *step function*, never the model (as tensor2tensor's ``beam_search`` and
fairseq's scripted-decoder tests do), so that a test can script the probabilities:

    step_fn(prefix, origin) -> scores (N, V) of the next token

``prefix`` (N, t) holds the N live hypotheses, each starting with BOS; ``origin`` (N,) says for
each row which row of the previous call it extends (so a cache can be reordered, expanded to
the beams or shrunk as sentences finish), or is None when the rows are the previous call's rows
in the same order. On the first call the rows are the sentences, in order. The scores are
logits or log-probabilities: the search normalises them with log_softmax.

Conventions, the same for every search here:
- a hypothesis is the list of output tokens, BOS excluded, ending with exactly one EOS;
- |Y| counts that EOS (so the empty translation has |Y| = 1 and lp = 1), as tensor2tensor and
  fairseq do; score = log P(Y | X) / lp(|Y|);
- the input length |X| counts the source tokens without padding, its EOS included (tensor2tensor
  and fairseq count it too); at most floor(a |X| + b) output tokens, EOS included, are made;
  at the last allowed position only EOS may follow, so every hypothesis ends with EOS;
- PAD and BOS are never produced (their log-probabilities are set to -inf, not renormalised:
  scores stay the model's log-probabilities).

>>> import torch
>>> def step(prefix, origin):  # always: EOS with probability 0.6, token 3 with 0.4
...     return torch.tensor([[0.0, 0.0, 0.6, 0.4]]).log().expand(prefix.size(0), 4)
>>> best = beam_search(step, [3], beam=2, nbest=2)[0]
>>> [(h.tokens, round(h.logprob, 4)) for h in best]
[([2], -0.5108), ([3, 2], -1.4271)]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from aiayn.config import DecodeConfig, LengthPenalty
from aiayn.data.specials import BOS, EOS, PAD
from aiayn.model import DecoderState, Transformer

StepFn = Callable[[Tensor, Tensor | None], Tensor]


@dataclass(frozen=True)
class Hypothesis:
    """One finished translation: tokens (ending with EOS), score = logprob / lp(|Y|), logprob."""

    tokens: list[int]
    score: float
    logprob: float


def length_penalty(
    length: int | float | Tensor, alpha: float = 0.6, kind: LengthPenalty = "gnmt"
) -> float | Tensor:
    """lp(Y) = ((5 + |Y|) / 6)^alpha.  Section 6.1, from GNMT (Wu et al. 2016, Eq. 14).

    ``kind="fairseq"`` is |Y|^alpha (fairseq, Hugging Face, CTranslate2: the same "0.6" is a
    different penalty there); ``kind="none"`` is 1. Both grow with |Y| for alpha >= 0.

    >>> [round(length_penalty(n), 4) for n in (1, 10, 20)]
    [1.0, 1.7329, 2.3544]
    >>> round(length_penalty(10, kind="fairseq"), 4), length_penalty(10, kind="none")
    (3.9811, 1.0)
    """
    if kind == "gnmt":
        return ((5.0 + length) / 6.0) ** alpha
    if kind == "fairseq":
        return length**alpha  # EXTENSION: fairseq's form, a named option (off by default)
    if kind == "none":
        return torch.ones_like(length, dtype=torch.float) if isinstance(length, Tensor) else 1.0
    raise ValueError(f"length_penalty: kind must be gnmt, fairseq or none, got {kind!r}")


def best_possible_score(
    logprob: float | Tensor, max_len: int | Tensor, alpha: float = 0.6, kind: LengthPenalty = "gnmt"
) -> float | Tensor:
    """max over continuations of log P(Y | X) / lp(|Y|) = logprob / lp(max_len).  Section 6.1.

    The early-termination bound for a live hypothesis whose tokens so far have log-probability
    ``logprob`` (<= 0). Any completion Y has log P(Y | X) <= logprob (log-probabilities only
    decrease) and |Y| <= max_len. Dividing a negative number by a *larger* lp makes it larger
    (closer to 0), and lp grows with |Y| for alpha >= 0, so the best a completion can reach is
    logprob / lp(max_len). Using the current length's lp instead, logprob / lp(t), is the trap:
    it is a lower value, so the search stops while a longer hypothesis could still win.

    >>> best_possible_score(-2.0, 10) > -2.0 / length_penalty(3)
    True
    """
    return logprob / length_penalty(max_len, alpha, kind)


def max_lengths(src: Tensor, a: float = 1.0, b: int = 50, pad: int = PAD) -> Tensor:
    """max |Y| = floor(a |X| + b), at least 1.  Section 6.1: "input length + 50".

    |X| counts the non-padding source tokens, EOS included. Shapes: src (B, S) -> (B,).

    >>> max_lengths(torch.tensor([[5, 6, 2], [5, 2, 0]])).tolist()
    [53, 52]
    """
    n = (src != pad).sum(dim=1).double()  # (B,)
    return torch.floor(a * n + b).long().clamp(min=1)  # (B,)


def _next_logprobs(
    step_fn: StepFn,
    prefix: Tensor,
    origin: Tensor | None,
    force_eos: Tensor,
    eos: int,
    banned: Sequence[int],
) -> Tensor:
    """log_softmax of the step function's scores, banned tokens and forced EOS applied.

    Shapes: prefix (N, t), force_eos (N,) -> (N, V).
    """
    logp = torch.log_softmax(step_fn(prefix, origin).float(), dim=-1)  # (N, V)
    if banned:
        logp[:, list(banned)] = -math.inf
    if bool(force_eos.any()):
        eos_logp = logp[:, eos].clone()  # (N,)
        logp[force_eos] = -math.inf  # the last allowed position: only EOS may follow
        logp[:, eos] = eos_logp
    return logp


@torch.inference_mode()
def greedy_search(
    step_fn: StepFn,
    max_len: Sequence[int] | Tensor,
    alpha: float = 0.6,
    penalty: LengthPenalty = "gnmt",
    eos: int = EOS,
    bos: int = BOS,
    banned: Sequence[int] = (PAD, BOS),
    device: torch.device | str | None = None,
) -> list[list[Hypothesis]]:
    """y_t = argmax_v log P(v | y_<t, X) until EOS.  The baseline search of section 6.1.

    Batched over sentences; a sentence leaves the batch once it ends. Returns, per sentence, a
    one-element list (the same format as ``beam_search``). Scored like the beam.
    """
    limit = torch.as_tensor(max_len, dtype=torch.long, device=device).clamp(min=1)  # (B,)
    B = limit.numel()
    sent = torch.arange(B, device=device)  # (N,): the sentence of each live row
    prefix = torch.full((B, 1), bos, dtype=torch.long, device=device)  # (N, 1)
    logprob = torch.zeros(B, device=device)  # (N,)
    origin: Tensor | None = None
    out: list[list[Hypothesis]] = [[] for _ in range(B)]
    t = 1  # |Y| if the next token ends the hypothesis
    while sent.numel() > 0:
        logp = _next_logprobs(step_fn, prefix, origin, limit[sent] <= t, eos, banned)  # (N, V)
        best, token = logp.max(dim=-1)  # (N,), (N,)
        logprob = logprob + best  # (N,)
        ended = token == eos  # (N,)
        if bool(ended.any()):
            lp = length_penalty(t, alpha, penalty)
            rows = ended.nonzero().squeeze(1)  # (F,)
            for s, toks, lpr in zip(
                sent[rows].tolist(), prefix[rows, 1:].tolist(), logprob[rows].tolist(), strict=True
            ):
                out[s].append(Hypothesis([*toks, eos], lpr / lp, lpr))
            keep = (~ended).nonzero().squeeze(1)  # (N',)
            origin = keep
            sent, logprob = sent[keep], logprob[keep]  # (N',)
            prefix = torch.cat([prefix[keep], token[keep, None]], dim=1)  # (N', t + 1)
        else:
            origin = None
            prefix = torch.cat([prefix, token[:, None]], dim=1)  # (N, t + 1)
        t += 1
    return out


@dataclass(frozen=True)
class BeamStep:
    """One step of ``beam_search`` for one sentence, as the search itself saw it.  Section 6.1.

    ``t``: |Y| of a hypothesis that ends at this step (EOS counted). ``live_before``: the
    hypotheses the step extended (tokens without BOS, log-probability). ``candidates``: the
    step's K best one-token extensions (all of the beam's K V, by log P(Y | X)), best first,
    each a dict with ``parent`` (index into live_before), ``token``, ``tokens``, ``logprob``,
    ``lp`` = lp(t), ``score`` = logprob / lp and ``status``: "live" (kept for the next step),
    "finished" (ended with EOS, joins the n-best), "no slot" (ranked beyond the K - finished
    open slots: pruned) or "stopped" (would have lived, but the search stopped). ``dropped``:
    indices of live_before none of whose extensions survived (pruned with their whole line).
    The bound: ``best_live`` (the best live logprob after this step), ``bound`` =
    best_live / lp(max_len), ``threshold`` (the nbest-th finished score, -inf while fewer than
    nbest have finished), ``stop`` True when bound <= threshold ended the search here while
    live hypotheses were left (a search that ran out of live ones ends without it);
    ``finished_total``: hypotheses finished so far.
    """

    t: int
    max_len: int
    live_before: list[tuple[list[int], float]]
    candidates: list[dict[str, Any]]
    dropped: list[int]
    best_live: float
    bound: float
    threshold: float
    stop: bool
    finished_total: int


@dataclass(frozen=True, kw_only=True)
class _StepView:
    """What ``beam_search`` knows after one step's decisions: the tensors ``_record_step`` reads.

    N rows were live before the step, in A active sentences of B; K candidates each.
    """

    t: int  # |Y| of a hypothesis that ends at this step
    alpha: float
    penalty: LengthPenalty
    nbest: int
    prefix: Tensor  # (N, t): the live rows before the step, BOS first
    logprob: Tensor  # (N,)
    sent: Tensor  # (N,): the sentence of each row
    active: Tensor  # (A,): the sentences searched in this step
    parent: Tensor  # (A, K): the row each candidate extends
    token: Tensor  # (A, K)
    top: Tensor  # (A, K): the candidates' log-probabilities, best first
    ended: Tensor  # (A, K): taken and ended with EOS
    live: Tensor  # (A, K): taken and still open (before the stop below)
    settled: Tensor  # (A,): stopped by the bound here
    best_live: Tensor  # (A,)
    bound: Tensor  # (A,)
    fin_scores: Tensor  # (B, K): the finished scores so far, best first
    n_fin: Tensor  # (B,)
    limit: Tensor  # (B,): max_len


def _record_step(record: list[list[BeamStep]], v: _StepView) -> None:
    """Append each active sentence's BeamStep (called only when beam_search records)."""
    lp = float(length_penalty(v.t, v.alpha, v.penalty))
    rows_of = v.sent.tolist()  # (N,): the sentence of each row of prefix
    prefixes, logprobs = v.prefix[:, 1:].tolist(), v.logprob.tolist()
    tops, parents, tokens = v.top.tolist(), v.parent.tolist(), v.token.tolist()  # (A, K) each
    ends, lives, settle = v.ended.tolist(), v.live.tolist(), v.settled.tolist()
    best, bounds, fins = v.best_live.tolist(), v.bound.tolist(), v.fin_scores.tolist()
    for a, s in enumerate(v.active.tolist()):
        rows = [n for n, r in enumerate(rows_of) if r == s]
        candidates, used = [], set()
        for k in range(v.top.shape[1]):
            lpr = tops[a][k]
            if not math.isfinite(lpr):
                continue
            p = rows.index(parents[a][k])
            if ends[a][k]:
                status = "finished"
            elif lives[a][k]:
                status = "stopped" if settle[a] else "live"
            else:
                status = "no slot"
            if status != "no slot":
                used.add(p)
            candidates.append(
                {"parent": p, "token": tokens[a][k], "tokens": [*prefixes[parents[a][k]],
                 tokens[a][k]], "logprob": lpr, "lp": lp, "score": lpr / lp, "status": status}
            )  # fmt: skip
        done = int(v.n_fin[s])
        record[s].append(
            BeamStep(
                t=v.t,
                max_len=int(v.limit[s]),
                live_before=[(prefixes[n], logprobs[n]) for n in rows],
                candidates=candidates,
                dropped=[p for p in range(len(rows)) if p not in used],
                best_live=best[a],
                bound=bounds[a],
                threshold=fins[s][v.nbest - 1] if done >= v.nbest else -math.inf,
                stop=settle[a] and any(lives[a]),
                finished_total=done,
            )
        )


@torch.inference_mode()
def beam_search(
    step_fn: StepFn,
    max_len: Sequence[int] | Tensor,
    beam: int = 4,
    alpha: float = 0.6,
    penalty: LengthPenalty = "gnmt",
    nbest: int = 1,
    eos: int = EOS,
    bos: int = BOS,
    banned: Sequence[int] = (PAD, BOS),
    device: torch.device | str | None = None,
    record: list[list[BeamStep]] | None = None,
) -> list[list[Hypothesis]]:
    """argmax_Y log P(Y | X) / lp(|Y|) over a beam of K hypotheses.  Section 6.1.

    Per sentence, K slots. Each step takes the K - (finished so far) best one-token extensions
    of the live hypotheses by log-probability (all candidates have the same length, so this is
    also the order of their scores); those ending in EOS are finished and leave the beam, the
    others are the new live hypotheses (the beam shrinks as hypotheses finish, as in Nematus;
    with K = 1 this is exactly ``greedy_search``). At the maximum length only EOS may follow,
    so every slot ends finished: the n-best lists are full (K >= nbest) unless the step function
    gives fewer than nbest sequences a finite probability.

    Early termination ("terminate early when possible"): a sentence stops once it has nbest
    finished hypotheses and no live one can still beat the nbest-th best of them, i.e. when
    ``best_possible_score(best live logprob, max_len)`` <= that finished score. The bound divides
    by lp(max_len), the largest penalty any completion can get (see ``best_possible_score``).

    ``record``: when a list, it receives one list per sentence of ``BeamStep``, one a step the
    sentence was searched in, with every candidate the step considered and what became of it
    (see ``BeamStep``). Recording reads the search's own tensors after each step's decisions
    and changes nothing; without it the search does no extra work.

    Returns, per sentence, up to ``nbest`` hypotheses, best score first (ties: found first).
    """
    if not 1 <= nbest <= beam:
        raise ValueError(f"beam_search: nbest must be between 1 and beam={beam}, got {nbest}")
    K = beam
    limit = torch.as_tensor(max_len, dtype=torch.long, device=device).clamp(min=1)  # (B,)
    B = limit.numel()
    sent = torch.arange(B, device=device)  # (N,): live rows, sorted by sentence
    slot = torch.zeros(B, dtype=torch.long, device=device)  # (N,): the row's place in its beam
    prefix = torch.full((B, 1), bos, dtype=torch.long, device=device)  # (N, 1)
    logprob = torch.zeros(B, device=device)  # (N,)
    origin: Tensor | None = None
    n_fin = torch.zeros(B, dtype=torch.long, device=device)  # (B,)
    fin_scores = torch.full((B, K), -math.inf, device=device)  # (B, K): best first
    found: list[list[Hypothesis]] = [[] for _ in range(B)]
    if record is not None:
        record[:] = [[] for _ in range(B)]
    t = 1  # |Y| if the next token ends the hypothesis
    while sent.numel() > 0:
        logp = _next_logprobs(step_fn, prefix, origin, limit[sent] <= t, eos, banned)  # (N, V)
        N, V = logp.shape
        active, local = torch.unique_consecutive(sent, return_inverse=True)  # (A,), (N,)
        A = active.numel()
        # Every candidate of sentence a in one row: slot k's V extensions at k V .. k V + V - 1.
        grid = torch.full((A * K, V), -math.inf, device=logp.device)  # (A K, V)
        grid[local * K + slot] = logprob[:, None] + logp  # (N, V) into their places
        top, idx = grid.view(A, K * V).topk(K, dim=1)  # (A, K), (A, K): best first
        row_at = torch.zeros(A * K, dtype=torch.long, device=logp.device)  # (A K,)
        row_at[local * K + slot] = torch.arange(N, device=logp.device)
        parent = row_at[torch.arange(A, device=logp.device)[:, None] * K + idx // V]  # (A, K)
        token = idx % V  # (A, K)
        open_slots = K - n_fin[active]  # (A,)
        rank = torch.arange(K, device=logp.device)  # (K,)
        take = (rank[None, :] < open_slots[:, None]) & torch.isfinite(top)  # (A, K)
        ended = take & (token == eos)  # (A, K)
        live = take & (token != eos)  # (A, K)

        if bool(ended.any()):
            new_scores = torch.where(ended, top / length_penalty(t, alpha, penalty), -math.inf)
            merged = torch.cat([fin_scores[active], new_scores], dim=1)  # (A, 2 K)
            fin_scores[active] = merged.topk(K, dim=1).values  # (A, K)
            n_fin[active] += ended.sum(dim=1)
            a_i, r_i = ended.nonzero(as_tuple=True)  # (F,), (F,)
            rows = parent[a_i, r_i]  # (F,)
            for s, toks, lpr, sc in zip(
                active[a_i].tolist(),
                prefix[rows, 1:].tolist(),
                top[a_i, r_i].tolist(),
                new_scores[a_i, r_i].tolist(),
                strict=True,
            ):
                found[s].append(Hypothesis([*toks, eos], sc, lpr))

        # Early termination: stop when no live hypothesis can beat the nbest-th finished one.
        best_live = torch.where(live, top, -math.inf).amax(dim=1)  # (A,)
        bound = best_possible_score(best_live, limit[active], alpha, penalty)  # (A,)
        settled = (n_fin[active] >= nbest) & (bound <= fin_scores[active, nbest - 1])  # (A,)
        if record is not None:
            view = _StepView(
                t=t, alpha=alpha, penalty=penalty, nbest=nbest, prefix=prefix, logprob=logprob,
                sent=sent, active=active, parent=parent, token=token, top=top, ended=ended,
                live=live, settled=settled, best_live=best_live, bound=bound,
                fin_scores=fin_scores, n_fin=n_fin, limit=limit,
            )  # fmt: skip
            _record_step(record, view)
        live &= ~settled[:, None]

        a_i, r_i = live.nonzero(as_tuple=True)  # (N',), (N',): sorted by sentence, then rank
        origin = parent[a_i, r_i]  # (N',)
        prefix = torch.cat([prefix[origin], token[a_i, r_i, None]], dim=1)  # (N', t + 1)
        sent, slot, logprob = active[a_i], r_i, top[a_i, r_i]  # (N',)
        t += 1
    return [sorted(h, key=lambda x: -x.score)[:nbest] for h in found]


def search(
    step_fn: StepFn,
    max_len: Sequence[int] | Tensor,
    cfg: DecodeConfig,
    device: torch.device | str | None = None,
    record: list[list[BeamStep]] | None = None,
) -> list[list[Hypothesis]]:
    """The search a DecodeConfig asks for: greedy when beam = 1 (proven equal), else beam.

    With ``record`` (see ``beam_search``) the beam search runs even for beam = 1, so that its
    steps can be recorded; the tests prove it gives greedy's result.
    """
    if cfg.beam == 1 and record is None:
        return greedy_search(step_fn, max_len, cfg.alpha, cfg.length_penalty, device=device)
    return beam_search(
        step_fn,
        max_len,
        cfg.beam,
        cfg.alpha,
        cfg.length_penalty,
        cfg.nbest,
        device=device,
        record=record,
    )


class SentenceRows:
    """Which sentence each row of the search's calls belongs to, following ``origin``.  6.1.

    ``follow(origin)`` moves to the new rows and says whether every row still belongs to the
    sentence it did (a beam reordering) or not (a sentence or hypothesis finished, the beams were
    expanded): a cache reorders its sentence-only parts in the second case alone
    (``DecoderState.reorder(origin, same_sentences)``). Shared by every cached step function.
    """

    def __init__(self, n: int, device: torch.device | str | None = None) -> None:
        self.rows = torch.arange(n, device=device)  # (N,): the first call's rows are sentences

    def follow(self, origin: Tensor) -> bool:
        """Rows = rows[origin]; True when each row's sentence is the one before it in order."""
        new = self.rows.index_select(0, origin.to(self.rows.device))  # (N',)
        same = new.shape == self.rows.shape and bool(torch.equal(new, self.rows))
        self.rows = new
        return same


def follow_origin(state: DecoderState, rows: SentenceRows, origin: Tensor | None) -> None:
    """Make the cache follow the search's rows before a step (``origin`` as in ``StepFn``)."""
    if origin is not None:
        state.reorder(origin, same_sentences=rows.follow(origin))


def model_step_fn(model: Transformer, src: Tensor, cached: bool = True) -> StepFn:
    """The step function of a Transformer on source ids src (B, S).  Sections 3.2.3 and 6.1.

    ``cached``: incremental decoding, feeding only the newest token and reusing every layer's
    keys and values (``model.start`` / ``model.step`` / ``state.reorder``). Otherwise the
    decoder re-runs on the whole prefix at every step (the slow path, proven equal in tests).
    The source is encoded once, on the first call (inside the search's inference mode).

    What depends only on the sentence (the memory, its mask and the cross-attention keys and
    values) is reordered only when the rows' sentences change (a sentence or a hypothesis has
    finished), not at every beam reordering; the self-attention caches follow every ``origin``.
    """
    if model.training:
        raise ValueError("model_step_fn: call model.eval() first (dropout would randomise search)")
    box: dict[str, Any] = {}
    rows = SentenceRows(src.size(0), src.device)

    def step_cached(prefix: Tensor, origin: Tensor | None) -> Tensor:
        if "state" not in box:
            box["state"] = model.start(src)
        state: DecoderState = box["state"]
        follow_origin(state, rows, origin)
        if state.length != prefix.size(1) - 1:
            raise RuntimeError(f"cache holds {state.length} positions, prefix {prefix.size(1)}")
        return model.step(prefix[:, -1:], state)[:, -1]  # (N, V)

    def full_step(prefix: Tensor, origin: Tensor | None) -> Tensor:
        if "memory" not in box:
            box["memory"], box["keep"] = model.encode(src)  # (B, S, D), (B, 1, 1, S)
        elif origin is not None and not rows.follow(origin):
            box["memory"] = box["memory"].index_select(0, origin)  # (N, S, D)
            box["keep"] = box["keep"].index_select(0, origin)  # (N, 1, 1, S)
        z = model.decode(prefix, box["memory"], box["keep"])  # (N, t, D)
        return model.logits(z[:, -1:])[:, -1]  # (N, V)

    return step_cached if cached else full_step
