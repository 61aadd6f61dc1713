"""`aiayn translate` end to end in tmp_path: files, n-best lists, stdin, attention maps, and
one clear line for every mistake. The library underneath is tested in tests/test_translator.py.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import torch

from aiayn import ModelConfig, Transformer
from aiayn.cli import main
from aiayn.config import DecodeConfig
from aiayn.data import EOS, Tokenizer
from aiayn.translator import TRAINED_LENGTH_KEY, load_translator
from aiayn.weights import save_model
from tests.translator_support import TEXTS, make_checkpoint


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.train(TEXTS, vocab_size=300)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory, tokenizer) -> Path:
    path = tmp_path_factory.mktemp("ckpt") / "model.safetensors"
    make_checkpoint(path, tokenizer)
    return path


class FakeStdin:
    """sys.stdin with a byte buffer and a chosen answer to isatty()."""

    def __init__(self, text: str, tty: bool) -> None:
        self.buffer = io.BytesIO(text.encode("utf-8"))
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


FAST = ["--max-len-b", "4"]  # random weights: keep the outputs short


def test_translate_file_in_order(tmp_path, ckpt, tokenizer) -> None:
    lines = ["a dog runs .", "", "two men are playing football in the park .", "ein Hund"]
    inp = tmp_path / "in.txt"
    inp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    argv = ["--checkpoint", str(ckpt), "--input", str(inp), "--output", str(out), *FAST]
    assert main(["translate", *argv]) == 0
    got = out.read_text(encoding="utf-8").split("\n")
    assert len(got) == len(lines) + 1
    assert got[1] == ""  # an empty line gives an empty translation
    assert got[-1] == ""
    # The same as the library's search, line by line (order kept despite length sorting).
    tr = load_translator(ckpt, DecodeConfig(max_len_b=4))
    for line, text in zip(lines, got, strict=False):
        assert tr.translate([line])[0][0][0] == text


def test_kernels_plain_translates_the_same(tmp_path, ckpt) -> None:
    inp = tmp_path / "in.txt"
    inp.write_text("a dog runs .\ntwo men are playing football in the park .\n", encoding="utf-8")
    outs = []
    for kernels in ("fast", "plain"):
        out = tmp_path / f"{kernels}.txt"
        argv = ["--checkpoint", str(ckpt), "--input", str(inp), "--output", str(out), *FAST]
        assert main(["translate", *argv, "--kernels", kernels]) == 0
        outs.append(out.read_text(encoding="utf-8"))
    assert outs[0] == outs[1]  # which kernels each runs: tests/test_translator.py


def test_nbest_format(tmp_path, ckpt, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", FakeStdin("a dog\nzwei Männer\n", tty=False))
    assert main(["translate", "--checkpoint", str(ckpt), "--beam", "3", "--nbest", "3", *FAST]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 6
    pattern = re.compile(
        r"^(\d+) \|\|\| (.*) \|\|\| logprob=(-?\d+\.\d{4}) length=(\d+) \|\|\| (-\S+)$"
    )
    fields = [pattern.match(x) for x in out]
    assert all(fields), out
    assert [int(m.group(1)) for m in fields] == [0, 0, 0, 1, 1, 1]
    for block in (fields[:3], fields[3:]):
        scores = [float(m.group(5)) for m in block]
        assert scores == sorted(scores, reverse=True)


def test_interactive_stdin_streams(ckpt, capsys, monkeypatch) -> None:
    # A terminal: one line in, one translation out at once (a batch of one each time).
    import aiayn.translator

    calls = []
    original = aiayn.translator.Translator.translate

    def spy(self, lines, first_line=1, **kw):
        calls.append(list(lines))
        return original(self, lines, first_line, **kw)

    monkeypatch.setattr(aiayn.translator.Translator, "translate", spy)
    monkeypatch.setattr("sys.stdin", FakeStdin("a dog\n\nein Hund\n", tty=True))
    assert main(["translate", "--checkpoint", str(ckpt), *FAST]) == 0
    assert calls == [["a dog"], [""], ["ein Hund"]]
    assert len(capsys.readouterr().out.split("\n")) == 4
    calls.clear()
    monkeypatch.setattr("sys.stdin", FakeStdin("a dog\n\nein Hund\n", tty=False))
    assert main(["translate", "--checkpoint", str(ckpt), *FAST]) == 0
    assert calls == [["a dog", "", "ein Hund"]]  # a pipe: batched


def test_attention_heatmaps(tmp_path, ckpt, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", FakeStdin("a dog runs\n猫 😺\n", tty=False))
    out = tmp_path / "att"
    assert main(["translate", "--checkpoint", str(ckpt), "--attention", str(out), *FAST]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert files == ["sent_00000.png", "sent_00001.png"]
    assert (out / "sent_00000.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cross_attention_weights_are_the_trace(ckpt, tokenizer) -> None:
    from aiayn.plots import cross_attention

    tr = load_translator(ckpt, DecodeConfig(max_len_b=4))
    src = [*tokenizer.encode("a dog runs"), EOS]
    hyp = tr.translate_ids([src[:-1]])[0][0].tokens
    w = cross_attention(tr.model, src, hyp)  # (L, H, T, S)
    assert w.shape == (2, 4, len(hyp), len(src))
    assert torch.allclose(w.sum(-1), torch.ones(2, 4, len(hyp)), atol=1e-5)  # rows sum to 1


# Bad input ---------------------------------------------------------------------------------


def test_the_long_line_warning_of_translate_names_file_and_line_and_counts_as_the_limit(
    tmp_path, tokenizer, capsys
) -> None:
    path = tmp_path / "m.safetensors"
    make_checkpoint(path, tokenizer, **{TRAINED_LENGTH_KEY: "6"})
    long = "two men are playing football in the park . " * 3
    n = len(tokenizer.encode(long))
    inp = tmp_path / "in.txt"
    inp.write_text(f"a dog\n{long}\n{long}\n", encoding="utf-8")
    argv = ["translate", "--checkpoint", str(path), "--input", str(inp), *FAST]
    assert main([*argv, "--max-input-tokens", str(n + 5)]) == 0
    warning = capsys.readouterr().err.strip().splitlines()[0]
    assert warning.startswith(f"aiayn translate: {inp}: line 2: {n} tokens, longer than any")
    # The limit's message counts the same line the same way.
    assert main([*argv, "--max-input-tokens", str(n - 1)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(f"aiayn translate: {inp}: line 2: {n} tokens, over the limit of")


@pytest.mark.parametrize("blank", [" ", "\t", "  \t  ", "\u3000"])
def test_a_whitespace_only_line_is_an_empty_line(tmp_path, ckpt, blank) -> None:
    tr = load_translator(ckpt, DecodeConfig(beam=3, nbest=3, max_len_b=4))
    assert tr.translate([blank]) == tr.translate([""])
    inp = tmp_path / "in.txt"
    inp.write_text(f"a dog\n{blank}\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    argv = ["translate", "--checkpoint", str(ckpt), "--input", str(inp), "--output", str(out)]
    assert main([*argv, *FAST, "--beam", "3", "--nbest", "3"]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6
    assert lines[3].startswith("1 |||  ||| logprob=")  # the empty sentence, nothing invented
    assert lines[4:] == ["1 |||  ||| logprob=-inf length=0 ||| -inf"] * 2


def test_an_output_in_a_missing_directory_is_refused_not_created(tmp_path, ckpt, capsys) -> None:
    inp = tmp_path / "in.txt"
    inp.write_text("a dog\n", encoding="utf-8")
    out = tmp_path / "no" / "such" / "dir" / "o.txt"
    argv = ["translate", "--checkpoint", str(ckpt), "--input", str(inp), "--output", str(out)]
    err = run_error(argv, capsys)
    assert err == (
        f"aiayn translate: error: --output {out}: the directory {out.parent} does not exist; "
        "create it first"
    )
    assert not (tmp_path / "no").exists()


def run_error(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1  # one clear line, no traceback
    return err[0]


def test_vocabulary_mismatch_is_one_clear_error(tmp_path, ckpt, tokenizer, capsys) -> None:
    other = Tokenizer.train(TEXTS, vocab_size=320)
    assert other.vocab_size != tokenizer.vocab_size
    tok_file = tmp_path / "tok.json"
    other.save(tok_file)
    err = run_error(["translate", "--checkpoint", str(ckpt), "--tokenizer", str(tok_file)], capsys)
    assert "tokenizer has" in err
    assert "vocabulary" in err


def test_architecture_mismatch_is_one_clear_error(tmp_path, tokenizer, capsys) -> None:
    from safetensors.torch import save_file

    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=32, n_heads=4, d_ff=64, n_layers=2)
    state = Transformer(cfg).state_dict()
    wrong = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=32, n_heads=4, d_ff=48, n_layers=2)
    path = tmp_path / "bad.safetensors"
    save_model(path, state, wrong, metadata={"tokenizer": tokenizer.to_str()})
    err = run_error(["translate", "--checkpoint", str(path)], capsys)
    assert str(path) in err
    assert "do not match" in err
    assert "(32, 64), the config needs (32, 48)" in err
    # Weights of another vocabulary than the stored config says.
    save_file({"embedding": torch.zeros(3, 2)}, str(tmp_path / "raw.safetensors"))
    err = run_error(["translate", "--checkpoint", str(tmp_path / "raw.safetensors")], capsys)
    assert "model_config" in err


def test_missing_things_are_clear_errors(tmp_path, ckpt, tokenizer, capsys) -> None:
    err = run_error(["translate", "--checkpoint", str(tmp_path / "nope")], capsys)
    assert "not found" in err
    no_tok = tmp_path / "notok.safetensors"
    model = make_checkpoint(tmp_path / "x.safetensors", tokenizer)
    save_model(no_tok, model)
    err = run_error(["translate", "--checkpoint", str(no_tok)], capsys)
    assert "--tokenizer" in err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe broken\n")
    err = run_error(["translate", "--checkpoint", str(ckpt), "--input", str(bad)], capsys)
    assert "line 2" in err
    err = run_error(["translate", "--checkpoint", str(ckpt), "--beam", "2", "--nbest", "3"], capsys)
    assert "nbest" in err
