"""aiayn/translator.py: text in, translations out (section 6.1).

The Translator equals the library's beam search on the same batch, gives results in input
order whatever the batching, runs the fast kernels unless told "plain", and handles bad input
without failing: an empty line is the empty sentence, a line longer than any in training is
translated with a warning, a line over the limit is skipped and reported, unknown characters go
through the bytes. `aiayn translate` itself is tested in tests/test_cli_translate.py.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import aiayn.kernels
import aiayn.model
from aiayn.config import DecodeConfig
from aiayn.data import EOS, UNK, Tokenizer, collate
from aiayn.decode import beam_search, max_lengths, model_step_fn
from aiayn.errors import UserError
from aiayn.translator import TRAINED_LENGTH_KEY, Translator, length_batches, load_translator
from tests.translator_support import TEXTS, make_checkpoint


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.train(TEXTS, vocab_size=300)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory, tokenizer) -> Path:
    path = tmp_path_factory.mktemp("ckpt") / "model.safetensors"
    make_checkpoint(path, tokenizer)
    return path


def test_length_batches_sort_longest_first_under_both_budgets() -> None:
    sources = [[5] * n for n in (3, 9, 1, 9, 4, 2)]
    batches = length_batches(sources, max_tokens=20, max_sentences=2)
    assert sorted(i for b in batches for i in b) == list(range(6))  # each source once
    assert batches[0] == [1, 3]  # the two longest first: 2 x (9 + EOS) = 20 tokens
    for b in batches:
        assert len(b) <= 2
        assert len(b) * (len(sources[b[0]]) + 1) <= 20
        assert all(len(sources[i]) <= len(sources[b[0]]) for i in b)  # its first is longest
    assert all(len(b) == 1 for b in length_batches(sources, 20, 2, equal_length=True)[2:])


def test_results_come_back_in_input_order_whatever_the_batching(ckpt, tokenizer) -> None:
    lines = [TEXTS[i % 4] * (1 + i % 3) for i in range(7)]
    one_by_one = load_translator(ckpt, DecodeConfig(max_len_b=4), max_sentences=1)
    batched = load_translator(ckpt, DecodeConfig(max_len_b=4), max_sentences=4)
    expected = [one_by_one.translate([line])[0][0][1].tokens for line in lines]
    assert [nbest[0][1].tokens for nbest in batched.translate(lines)] == expected


def test_the_fast_kernels_run_unless_told_plain(ckpt) -> None:
    assert load_translator(ckpt).model.ops is aiayn.kernels.FAST
    assert load_translator(ckpt, kernels="plain").model.ops is aiayn.model.PLAIN


def test_a_tokenizer_of_another_vocabulary_is_one_clear_error(ckpt) -> None:
    tr = load_translator(ckpt)
    other = Tokenizer.train(["x y z"], vocab_size=270)  # only the 256 bytes and 4 specials
    with pytest.raises(UserError, match="tokenizer has 260 tokens but the model's vocabulary"):
        Translator(tr.model, other, DecodeConfig())


def test_a_line_over_the_limit_is_skipped_and_reported(ckpt) -> None:
    tr = load_translator(ckpt, DecodeConfig(max_len_b=2), max_input_tokens=5)
    skipped: list[tuple[int, int]] = []
    lines = ["a dog", "a dog runs on the grass ."]
    out = tr.translate(lines, first_line=10, on_skip=lambda *a: skipped.append(a))
    assert len(out[0]) == 1
    assert out[1] == []
    assert skipped == [(11, len(tr.tokenizer.encode(lines[1])))]


def test_translator_equals_beam_search(ckpt, tokenizer) -> None:
    tr = load_translator(ckpt, DecodeConfig(max_len_b=4, nbest=2))
    sources = [tokenizer.encode(t) for t in TEXTS[:4]]
    got = tr.translate_ids(sources)
    src = collate([(s, []) for s in sources]).src  # (B, S)
    ref = beam_search(model_step_fn(tr.model, src), max_lengths(src, 1.0, 4), nbest=2)
    assert [[h.tokens for h in hs] for hs in got] == [[h.tokens for h in hs] for hs in ref]


def test_long_line_warns_and_translates(tmp_path, tokenizer, caplog) -> None:
    path = tmp_path / "m.safetensors"
    make_checkpoint(path, tokenizer, **{TRAINED_LENGTH_KEY: "6"})
    tr = load_translator(path, DecodeConfig(max_len_a=0.0, max_len_b=2))
    long = "two men are playing football in the park . " * 3
    with caplog.at_level(logging.WARNING, logger="aiayn.translator"):
        out = tr.translate(["a dog", long])
    assert len(out) == 2
    assert all(len(o) == 1 for o in out)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    # Both counts are BPE tokens without EOS, as --max-input-tokens counts them: the metadata
    # holds the longest sequence with EOS (6), i.e. a sentence of 5 tokens.
    n = len(tokenizer.encode(long))
    assert warnings[0].startswith(f"line 2: {n} tokens,")
    assert "longer than any sentence in training (5 tokens)" in warnings[0]


def test_no_trained_length_no_warning(ckpt, caplog) -> None:
    tr = load_translator(ckpt, DecodeConfig(max_len_a=0.0, max_len_b=2))
    with caplog.at_level(logging.WARNING, logger="aiayn.translator"):
        tr.translate(["word " * 80])
    assert not caplog.records


def test_unknown_characters_use_bytes(ckpt, tokenizer) -> None:
    text = "猫 😺 ǅ ﬁ \u0301"  # never seen in training
    ids = tokenizer.encode(text)
    assert UNK not in ids
    assert tokenizer.decode(ids) == text
    tr = load_translator(ckpt, DecodeConfig(max_len_b=3))
    assert len(tr.translate([text])[0]) == 1


def test_empty_line_is_an_empty_translation(ckpt) -> None:
    tr = load_translator(ckpt, DecodeConfig(nbest=4))
    (text, hyp), *rest = tr.translate([""])[0]
    assert text == ""
    assert hyp.tokens == [EOS]
    assert hyp.logprob < 0
    assert rest == []  # the empty sentence is the only output for an empty input
