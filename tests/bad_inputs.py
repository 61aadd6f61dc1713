"""The table of bad CLI inputs: every verb, every numeric flag, TOML configs, odd files.

Each case is a command line that must be refused with one line on stderr naming the setting or
file (``expect``, a substring), a non-zero exit status and no traceback. ``run_case`` runs a
case in-process through ``aiayn.cli.main``; tests/test_bad_inputs.py runs the table and
tests/count_bad_inputs.py counts it for docs/reliability-inputs.md.

Placeholders in argv and expect: {data} a prepared copy corpus, {run} a trained run, {model}
its model file, {tok} its tokenizer, {empty} an empty file, {binary} random bytes, {latin1}
a non-UTF-8 text, {dir} an empty directory, {text} a plain text file, {json} a JSON file that
is not aiayn's, {mismatch} a model file whose config does not fit its weights, {tmp} the
case's own directory, {toml} the case's TOML file (from ``toml``), {myrun} the case's copy of
{run} (made by ``setup``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import pickle
import shutil
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SMALL = ("--d-model", "16", "--n-heads", "2", "--d-ff", "32", "--n-layers", "1")
QUICK = ("--max-tokens", "400", "--warmup", "10", "--max-steps", "1", "--no-progress")
TRAIN = ("train", "--data", "{data}", "--run", "{tmp}/r", "--preset", "tiny", *SMALL, *QUICK)
TRANSLATE = ("translate", "--checkpoint", "{model}", "--max-len-b", "2")
EVALUATE = ("evaluate", "--checkpoint", "{model}", "--data", "{data}", "--max-len-b", "2")
# A TOML config that trains a small model for one step, if a bad value were accepted.
TOML_BASE = {
    "model": {"d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "1"},
    "train": {"max_tokens": "400", "warmup": "10", "max_steps": "1"},
    "decode": {"max_len_b": "2"},
}


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    expect: str
    setup: Callable[[Path, dict[str, str]], None] | None = None
    toml: str | bytes | None = None
    stdin: bytes = b""


@dataclass
class Outcome:
    rc: int
    err: str
    traceback: bool
    out: str = ""


# Fixtures -----------------------------------------------------------------------------------


def build_world(root: Path) -> dict[str, str]:
    """Write the files the cases refer to under root; return the placeholders."""
    import torch
    from safetensors.torch import save_file

    from aiayn.cli import main
    from aiayn.config import ModelConfig
    from aiayn.model import Transformer
    from aiayn.weights import save_model

    root.mkdir(parents=True, exist_ok=True)
    data, run = root / "data", root / "run"
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        rc = main(
            [
                "prepare",
                "--source",
                "copy",
                "--out",
                str(data),
                "--num-pairs",
                "300",
                "--vocab-size",
                "300",
                "--no-progress",
            ]
        )
        assert rc == 0, quiet.getvalue()
        rc = main(
            [
                "train",
                "--data",
                str(data),
                "--run",
                str(run),
                "--preset",
                "tiny",
                *SMALL,
                "--max-tokens",
                "400",
                "--warmup",
                "10",
                "--max-steps",
                "2",
                "--save-every-steps",
                "1",
                "--no-progress",
            ]
        )
        assert rc == 0, quiet.getvalue()
    model = sorted((run / "checkpoints").glob("step_*"))[-1] / "model.safetensors"
    (root / "empty").write_bytes(b"")
    (root / "binary").write_bytes(bytes(range(256)) * 8)
    (root / "latin1.txt").write_bytes("Größe über alles\n".encode("latin-1"))
    (root / "dir").mkdir()
    (root / "text.txt").write_text("just some text\nover two lines\n", encoding="utf-8")
    (root / "other.json").write_text('{"hello": [1, 2, 3]}\n', encoding="utf-8")
    cfg = ModelConfig(vocab_size=300, d_model=16, n_heads=2, d_ff=32, n_layers=1)
    state = Transformer(cfg).state_dict()
    wrong = dataclasses.replace(cfg, d_ff=24)
    save_model(root / "mismatch.safetensors", state, wrong, metadata={})
    save_file({"x": torch.zeros(2)}, str(root / "noconfig.safetensors"))
    save_model(root / "other.safetensors", Transformer(wrong), metadata={})
    return {
        "data": str(data),
        "run": str(run),
        "model": str(model),
        "tok": str(data / "tokenizer.json"),
        "empty": str(root / "empty"),
        "binary": str(root / "binary"),
        "latin1": str(root / "latin1.txt"),
        "dir": str(root / "dir"),
        "text": str(root / "text.txt"),
        "json": str(root / "other.json"),
        "mismatch": str(root / "mismatch.safetensors"),
        "noconfig": str(root / "noconfig.safetensors"),
        "other": str(root / "other.safetensors"),
    }


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)

    def isatty(self) -> bool:
        return False


def fill(text: str, world: dict[str, str], tmp: Path) -> str:
    return text.format(**world, tmp=str(tmp), toml=str(tmp / "c.toml"), myrun=str(tmp / "run"))


def run_case(case: Case, world: dict[str, str], tmp: Path) -> Outcome:
    """Run one case in-process; a traceback is any exception that escapes main."""
    from aiayn.cli import main

    tmp.mkdir(parents=True, exist_ok=True)
    if case.toml is not None:
        raw = case.toml if isinstance(case.toml, bytes) else case.toml.encode("utf-8")
        (tmp / "c.toml").write_bytes(raw)
    if case.setup is not None:
        case.setup(tmp, world)
    argv = [fill(a, world, tmp) for a in case.argv]
    out, err = io.StringIO(), io.StringIO()
    stdin, sys.stdin = sys.stdin, _Stdin(case.stdin)  # type: ignore[assignment]
    traceback = False
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 1
            except Exception as e:
                traceback = True
                rc = 1
                print(f"Traceback: {type(e).__name__}: {e}", file=sys.stderr)
    finally:
        sys.stdin = stdin
    return Outcome(rc, err.getvalue(), traceback, out.getvalue())


def problems(case: Case, outcome: Outcome, world: dict[str, str], tmp: Path) -> list[str]:
    """What is wrong with an outcome ([] when the case was refused as it should be)."""
    found = []
    lines = outcome.err.strip().splitlines()
    if outcome.traceback or "Traceback" in outcome.err:
        found.append("traceback")
    if outcome.rc == 0:
        found.append("silent: exit 0")
    if "this must never run" in outcome.out + outcome.err:
        found.append("a pickle ran code")
    expect = fill(case.expect, world, tmp)
    errors = [line for line in lines if ": error: " in line]
    if len(errors) != 1:
        found.append(f"{len(errors)} error lines")
    elif expect not in errors[0]:
        found.append(f"message lacks {expect!r}")
    return found


# Setups --------------------------------------------------------------------------------------


def _copy_run(tmp: Path, world: dict[str, str]) -> Path:
    run = tmp / "run"
    if not run.exists():
        shutil.copytree(world["run"], run)
    return run


def _latest(tmp: Path, world: dict[str, str]) -> Path:
    run = _copy_run(tmp, world)
    return sorted((run / "checkpoints").glob("step_*"))[-1]


def _trainer(write: Callable[[Path], None]) -> Callable[[Path, dict[str, str]], None]:
    def setup(tmp: Path, world: dict[str, str]) -> None:
        write(_latest(tmp, world) / "trainer.pt")

    return setup


class _Evil:
    def __reduce__(self):  # what a hostile pickle does: call a function when loaded
        return (print, ("this must never run",))


def _truncate(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def _pickled(p: Path) -> None:
    p.write_bytes(pickle.dumps({"optimizer": _Evil(), "progress": {}, "rng": []}))


def _evil_zip(p: Path) -> None:
    import torch

    torch.save({"optimizer": _Evil(), "progress": {}, "rng": []}, p)


def _saved_list(p: Path) -> None:
    import torch

    torch.save([1, 2, 3], p)


def _as_dir(p: Path) -> None:
    p.unlink()
    p.mkdir()


def _config_json(text: bytes) -> Callable[[Path, dict[str, str]], None]:
    def setup(tmp: Path, world: dict[str, str]) -> None:
        (_copy_run(tmp, world) / "config.json").write_bytes(text)

    return setup


def _model_file(write: Callable[[Path], None]) -> Callable[[Path, dict[str, str]], None]:
    def setup(tmp: Path, world: dict[str, str]) -> None:
        write(_latest(tmp, world) / "model.safetensors")

    return setup


def _metrics(text: bytes) -> Callable[[Path, dict[str, str]], None]:
    def setup(tmp: Path, world: dict[str, str]) -> None:
        (tmp / "p").mkdir(exist_ok=True)
        (tmp / "p" / "metrics.jsonl").write_bytes(text)

    return setup


def _file(name: str, data: bytes) -> Callable[[Path, dict[str, str]], None]:
    def setup(tmp: Path, world: dict[str, str]) -> None:
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_bytes(data)

    return setup


def _mkdir(name: str) -> Callable[[Path, dict[str, str]], None]:
    def setup(tmp: Path, world: dict[str, str]) -> None:
        (tmp / name).mkdir(parents=True, exist_ok=True)

    return setup


# Generated cases: every field of every config, as a flag and in TOML --------------------------


def _fields(cls: type, skip: tuple[str, ...] = ()) -> list[tuple[str, typing.Any]]:
    hints = typing.get_type_hints(cls)
    return [(f.name, hints[f.name]) for f in dataclasses.fields(cls) if f.name not in skip]


def _kind(hint: typing.Any) -> str:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return "literal"
    if typing.get_args(hint) and type(None) in typing.get_args(hint):
        inner = next(a for a in typing.get_args(hint) if a is not type(None))
        return _kind(inner)
    return {int: "int", float: "float", bool: "bool", str: "str"}[hint]


def _toml_text(table: str, key: str, raw: str) -> str:
    tables = {t: dict(v) for t, v in TOML_BASE.items()}
    tables[table][key] = raw
    return "".join(
        f"[{t}]\n" + "".join(f"{k} = {v}\n" for k, v in kv.items()) + "\n"
        for t, kv in tables.items()
    )


def _type_cases(verb: str, base: tuple[str, ...], cls: type, table: str | None, skip=()):
    """Values of the wrong type for each field: as a flag, and (table given) in TOML."""
    cases = []
    for name, hint in _fields(cls, skip):
        flag = "--" + name.replace("_", "-")
        kind = _kind(hint)
        flag_values = {
            "int": [("ten", "must be an integer, got 'ten'"), ("1.5", "must be an integer")],
            "float": [
                ("nan", "must be a finite number"),
                ("-inf", "must be a finite number"),
                ("x", "must be a number, got 'x'"),
            ],
            "literal": [("bogus", "invalid choice: 'bogus'")],
            "bool": [],
            "str": [],
        }[kind]
        for value, message in flag_values:
            cases.append(
                Case(
                    f"{verb}-flag-{name}-{value}", (*base, f"{flag}={value}"), f"{flag}: {message}"
                )
            )
        if kind == "bool" and table is None:
            cases.append(Case(f"{verb}-flag-{name}=x", (*base, f"{flag}=x"), f"{flag}"))
        if table is None:
            continue
        toml_values = {
            "int": [('"ten"', "must be an integer"), ("2.5", "must be an integer")],
            "float": [('"x"', "must be a number, got 'x'"), ("nan", "must be a finite number")],
            "literal": [('"bogus"', "must be one of")],
            "bool": [('"yes"', "must be true or false, got 'yes'")],
            "str": [],
        }[kind]
        for raw, message in toml_values:
            cases.append(
                Case(
                    f"{verb}-toml-{name}-{raw.strip(chr(34))}",
                    (*base, "--config", "{toml}"),
                    f"c.toml: [{table}] {name}: {message}",
                    toml=_toml_text(table, name, raw),
                )
            )
    return cases


# Values of the right type that the config refuses (field, value, extra flags).
MODEL_RANGE = [
    ("d_model", "0"),
    ("n_heads", "0"),
    ("d_k_override", "0"),
    ("d_v_override", "-1"),
    ("d_ff", "0"),
    ("n_layers", "0"),
    ("n_dec_layers", "0"),
    ("max_positions", "0"),
    ("dropout", "1.0"),
    ("dropout", "-0.1"),
    ("attn_dropout", "1.5"),
    ("ffn_dropout", "-1"),
    ("layer_norm_eps", "0"),
    ("layer_norm_eps", "-1e-5"),
]
TRAIN_RANGE = [
    ("label_smoothing", "1.0"),
    ("label_smoothing", "-0.1"),
    ("adam_beta1", "1.0"),
    ("adam_beta2", "-0.5"),
    ("adam_eps", "0"),
    ("warmup", "0"),
    ("warmup", "-4000"),
    ("lr_scale", "0"),
    ("lr_scale", "-1"),
    ("max_tokens", "0"),
    ("update_freq", "0"),
    ("max_steps", "-1"),
    ("max_epochs", "-1"),
    ("max_minutes", "-1"),
    ("seed", "-1"),
    ("seed", "4294967296"),
    ("save_every_steps", "-1"),
    ("save_every_minutes", "-1"),
    ("keep_last", "0"),
    ("log_every", "0"),
    ("valid_every", "-1"),
    ("max_bad_steps", "0"),
    ("clip_norm", "-1"),
]
DECODE_RANGE = [
    ("beam", "0"),
    ("beam", "-4"),
    ("alpha", "-0.6"),
    ("max_len_a", "-1"),
    ("max_len_b", "-1"),
    ("nbest", "0"),
    ("nbest", "5"),
]


def _range_cases(verb: str, base: tuple[str, ...], table: str, rows) -> list[Case]:
    cases = []
    for name, value in rows:
        flag = "--" + name.replace("_", "-")
        cases.append(
            Case(f"{verb}-range-{name}={value}", (*base, f"{flag}={value}"), f"{name}: must")
        )
        cases.append(
            Case(
                f"{verb}-toml-range-{name}={value}",
                (*base, "--config", "{toml}"),
                f"c.toml: {name}: ",
                toml=_toml_text(table, name, value),
            )
        )
    return cases


def _generated() -> list[Case]:
    from aiayn.config import DecodeConfig, ModelConfig, TrainConfig
    from aiayn.walkthrough.example import WalkthroughConfig

    cases = _type_cases("train", TRAIN, ModelConfig, "model", skip=("vocab_size", "pad_id"))
    cases += _type_cases("train", TRAIN, TrainConfig, "train")
    cases += _type_cases("translate", TRANSLATE, DecodeConfig, "decode")
    cases += _type_cases("walkthrough", ("walkthrough",), WalkthroughConfig, None)
    cases += _range_cases("train", TRAIN, "model", MODEL_RANGE)
    cases += _range_cases("train", TRAIN, "train", TRAIN_RANGE)
    cases += _range_cases("translate", TRANSLATE, "decode", DECODE_RANGE)
    return cases


# Hand-written cases -------------------------------------------------------------------------

P = ("prepare", "--out", "{tmp}/d", "--no-progress")
COPY = (*P, "--source", "copy", "--num-pairs", "50")

HAND = [
    # The command itself.
    Case("no-verb", (), "required: VERB"),
    Case("unknown-verb", ("fly",), "invalid choice: 'fly'"),
    *(
        Case(
            f"{argv[0]}-unknown-flag",
            (*argv, "--no-such-flag"),
            "unrecognized arguments: --no-such-flag",
        )
        for argv in (
            P,
            TRAIN,
            ("average", "{run}", "--out", "{tmp}/a"),
            TRANSLATE,
            EVALUATE,
            ("walkthrough",),
            ("plot", "{run}"),
            ("demo",),
            ("import-hf", "--model", "{dir}", "--out", "{tmp}/m.safetensors"),
        )
    ),
    # prepare: every numeric flag, the sources' flags, files.
    Case(
        "prepare-num-pairs=-1", (*COPY, "--num-pairs", "-1"), "--num-pairs: must be an integer >= 1"
    ),
    Case(
        "prepare-num-pairs=0", (*COPY, "--num-pairs", "0"), "--num-pairs: must be an integer >= 1"
    ),
    Case("prepare-num-pairs=x", (*COPY, "--num-pairs", "x"), "--num-pairs: must be an integer"),
    Case("prepare-min-frequency=-1", (*COPY, "--min-frequency", "-1"), "--min-frequency: must be"),
    Case("prepare-min-frequency=0", (*COPY, "--min-frequency", "0"), "--min-frequency: must be"),
    Case("prepare-max-ratio=nan", (*COPY, "--max-ratio", "nan"), "--max-ratio: must be a finite"),
    Case("prepare-max-ratio=inf", (*COPY, "--max-ratio", "inf"), "--max-ratio: must be a finite"),
    Case(
        "prepare-max-ratio=0.5", (*COPY, "--max-ratio", "0.5"), "--max-ratio: must be a number >= 1"
    ),
    Case(
        "prepare-max-ratio=-3", (*COPY, "--max-ratio", "-3"), "--max-ratio: must be a number >= 1"
    ),
    Case(
        "prepare-vocab-size=0",
        (*COPY, "--vocab-size", "0"),
        "--vocab-size: must be an integer >= 260 (the 256 bytes and 4 special tokens",
    ),
    Case(
        "prepare-vocab-size=5",
        (*COPY, "--vocab-size", "5"),
        "--vocab-size: must be an integer >= 260",
    ),
    Case(
        "prepare-vocab-size=259",
        (*COPY, "--vocab-size", "259"),
        "--vocab-size: must be an integer >= 260",
    ),
    Case(
        "prepare-vocab-size=-8000",
        (*COPY, "--vocab-size", "-8000"),
        "--vocab-size: must be an integer >= 260",
    ),
    Case(
        "prepare-vocab-size=8k",
        (*COPY, "--vocab-size", "8k"),
        "--vocab-size: must be an integer, got '8k'",
    ),
    Case("prepare-max-len=0", (*COPY, "--max-len", "0"), "--max-len: must be an integer >= 1"),
    Case("prepare-max-len=-5", (*COPY, "--max-len", "-5"), "--max-len: must be an integer >= 1"),
    Case(
        "prepare-max-words=-1", (*COPY, "--max-words", "-1"), "--max-words: must be an integer >= 0"
    ),
    Case(
        "prepare-min-words=-1", (*COPY, "--min-words", "-1"), "--min-words: must be an integer >= 0"
    ),
    Case(
        "prepare-min-above-max",
        (*COPY, "--min-words", "5", "--max-words", "3"),
        "--min-words 5 is above --max-words 3",
    ),
    Case(
        "prepare-valid-share=0.5",
        (*COPY, "--valid-share", "0.5"),
        "--valid-share: must be a number >= 0 and < 0.5",
    ),
    Case("prepare-valid-share=-0.1", (*COPY, "--valid-share", "-0.1"), "--valid-share: must be"),
    Case(
        "prepare-valid-share=nan",
        (*COPY, "--valid-share", "nan"),
        "--valid-share: must be a finite",
    ),
    Case("prepare-test-share=1", (*COPY, "--test-share", "1"), "--test-share: must be"),
    Case("prepare-test-share=x", (*COPY, "--test-share", "x"), "--test-share: must be a number"),
    Case(
        "prepare-bpe-max-pairs=-1",
        (*COPY, "--bpe-max-pairs", "-1"),
        "--bpe-max-pairs: must be an integer >= 0",
    ),
    Case("prepare-seed=-1", (*COPY, "--seed", "-1"), "--seed: must be an integer >= 0"),
    Case("prepare-seed=huge", (*COPY, "--seed", str(2**70)), "--seed: must be an integer"),
    Case("prepare-lang-pair=en", (*COPY, "--lang-pair", "en"), "--lang-pair must look like en-de"),
    Case(
        "prepare-lang-pair=en-en",
        (*COPY, "--lang-pair", "en-en"),
        "--lang-pair must look like en-de",
    ),
    Case(
        "prepare-lang-pair=e n-de",
        (*COPY, "--lang-pair", "e n-de"),
        "--lang-pair must look like en-de",
    ),
    Case("prepare-source=bogus", (*P, "--source", "bogus"), "--source: invalid choice"),
    Case("prepare-errors=bogus", (*COPY, "--errors", "ignore"), "--errors: invalid choice"),
    Case(
        "prepare-no-out",
        ("prepare", "--source", "copy"),
        "the following arguments are required: --out",
    ),
    Case(
        "prepare-num-pairs-files",
        (*P, "--source", "files", "--num-pairs", "5", "--tsv", "{text}"),
        "--num-pairs applies to --source numbers or copy or reverse, not files",
    ),
    Case(
        "prepare-src-copy", (*COPY, "--src", "{text}"), "--src applies to --source files, not copy"
    ),
    Case(
        "prepare-tsv-numbers",
        (*P, "--source", "numbers", "--tsv", "{text}"),
        "--tsv applies to --source files",
    ),
    Case(
        "prepare-multi30k-dir-copy",
        (*COPY, "--multi30k-dir", "{dir}"),
        "--multi30k-dir applies to --source multi30k",
    ),
    Case(
        "prepare-mirror-copy",
        (*COPY, "--mirror", "http://127.0.0.1:9/"),
        "--mirror applies to --source multi30k or wmt14",
    ),
    Case(
        "prepare-origins-copy",
        (*COPY, "--origins", "help"),
        "--origins applies to --source packaged",
    ),
    Case(
        "prepare-packaged-de-fr",
        (*P, "--source", "packaged", "--lang-pair", "de-fr"),
        "--source packaged: --lang-pair",
    ),
    Case(
        "prepare-numbers-de-fr",
        (*P, "--source", "numbers", "--lang-pair", "de-fr"),
        "--source numbers: --lang-pair",
    ),
    Case("prepare-files-nothing", (*P, "--source", "files"), "--src"),
    Case("prepare-files-src-only", (*P, "--source", "files", "--src", "{text}"), "--tgt"),
    Case(
        "prepare-files-tsv-and-src",
        (*P, "--source", "files", "--tsv", "{text}", "--src", "{text}"),
        "either --src and --tgt, or --tsv",
    ),
    Case(
        "prepare-files-missing",
        (*P, "--source", "files", "--src", "{tmp}/no.en", "--tgt", "{text}"),
        "no.en: file not found",
    ),
    Case(
        "prepare-files-dir", (*P, "--source", "files", "--src", "{dir}", "--tgt", "{dir}"), "{dir}"
    ),
    Case(
        "prepare-files-binary",
        (*P, "--source", "files", "--src", "{binary}", "--tgt", "{binary}"),
        "{binary}",
    ),
    Case(
        "prepare-files-latin1",
        (*P, "--source", "files", "--src", "{latin1}", "--tgt", "{latin1}"),
        "{latin1}",
    ),
    Case("prepare-tsv-latin1", (*P, "--source", "files", "--tsv", "{latin1}"), "{latin1}"),
    Case(
        "prepare-tsv-dir",
        (*P, "--source", "files", "--tsv", "{dir}"),
        "--tsv {dir}: is a directory",
    ),
    Case(
        "prepare-tsv-empty",
        (*P, "--source", "files", "--tsv", "{empty}"),
        "--tsv {empty}: is empty",
    ),
    Case("prepare-tsv-no-tab", (*P, "--source", "files", "--tsv", "{text}"), "{text}"),
    Case(
        "prepare-files-misaligned",
        (*P, "--source", "files", "--src", "{text}", "--tgt", "{tmp}/one.txt"),
        "one.txt",
        setup=_file("one.txt", b"a single line\n"),
    ),
    Case(
        "prepare-out-exists",
        ("prepare", "--out", "{data}", "--source", "copy", "--no-progress"),
        "{data}",
    ),
    Case(
        "prepare-out-is-file",
        ("prepare", "--out", "{text}", "--source", "copy", "--no-progress"),
        "{text}",
    ),
    # train: data, run, config files, devices, resume.
    Case(
        "train-no-run", ("train", "--data", "{data}"), "the following arguments are required: --run"
    ),
    Case("train-no-data", ("train", "--run", "{tmp}/r"), "--data DIR is required"),
    Case(
        "train-data-missing",
        ("train", "--data", "{tmp}/nothing", "--run", "{tmp}/r"),
        "nothing: no prepared data directory",
    ),
    Case("train-data-file", ("train", "--data", "{text}", "--run", "{tmp}/r"), "{text}"),
    Case(
        "train-data-empty-dir",
        ("train", "--data", "{dir}", "--run", "{tmp}/r"),
        "{dir}: incomplete prepared data directory",
    ),
    Case(
        "train-data-binary-manifest",
        ("train", "--data", "{tmp}/d", "--run", "{tmp}/r"),
        "manifest.json",
        setup=_file("d/manifest.json", bytes(range(256))),
    ),
    Case(
        "train-data-json-manifest",
        ("train", "--data", "{tmp}/d", "--run", "{tmp}/r"),
        "manifest.json",
        setup=_file("d/manifest.json", b'{"format": 3}'),
    ),
    Case(
        "train-run-is-file",
        ("train", "--data", "{data}", "--run", "{text}", "--preset", "tiny", *SMALL, *QUICK),
        "--run {text}: exists and is not a directory",
    ),
    Case(
        "train-run-has-checkpoints",
        ("train", "--data", "{data}", "--run", "{run}", "--preset", "tiny", *SMALL, *QUICK),
        "already holds checkpoints",
    ),
    Case("train-preset-bogus", (*TRAIN, "--preset", "huge"), "--preset: invalid choice"),
    Case("train-schedule-bogus", (*TRAIN, "--schedule", "fast"), "--schedule: invalid choice"),
    Case("train-device-bogus", (*TRAIN, "--device", "tpu9"), "--device: unknown device"),
    Case(
        "train-config-missing",
        (*TRAIN, "--config", "{tmp}/none.toml"),
        "none.toml: config file not found",
    ),
    Case("train-config-dir", (*TRAIN, "--config", "{dir}"), "{dir}: is a directory"),
    Case("train-config-latin1", (*TRAIN, "--config", "{latin1}"), "{latin1}: not UTF-8 text"),
    Case("train-config-binary", (*TRAIN, "--config", "{binary}"), "{binary}: not UTF-8 text"),
    Case("train-config-text", (*TRAIN, "--config", "{text}"), "{text}: not valid TOML"),
    Case("train-config-json", (*TRAIN, "--config", "{json}"), "{json}: not valid TOML"),
    Case("train-config-model", (*TRAIN, "--config", "{model}"), "{model}: not"),
    Case(
        "train-toml-syntax",
        (*TRAIN, "--config", "{toml}"),
        "c.toml: not valid TOML",
        toml="[model\nd_model = 16\n",
    ),
    Case(
        "train-toml-unknown-table",
        (*TRAIN, "--config", "{toml}"),
        "c.toml: unknown table(s) modle",
        toml="[modle]\nd_model = 16\n",
    ),
    Case(
        "train-toml-unknown-key",
        (*TRAIN, "--config", "{toml}"),
        "c.toml: unknown setting(s) in [train]: warmpu",
        toml="[train]\nwarmpu = 10\n",
    ),
    Case(
        "train-toml-not-a-table",
        (*TRAIN, "--config", "{toml}"),
        "c.toml: model must be a table",
        toml="model = 3\n",
    ),
    Case(
        "train-toml-array",
        (*TRAIN, "--config", "{toml}"),
        "c.toml: [train] warmup: must be an integer, got [10]",
        toml="[train]\nwarmup = [10]\n",
    ),
    Case(
        "train-toml-nul",
        (*TRAIN, "--config", "{toml}"),
        "c.toml: not valid TOML",
        toml=b"[train]\nwarmup = 1\x00\n",
    ),
    Case(
        "train-toml-bom-latin1",
        (*TRAIN, "--config", "{toml}"),
        "c.toml: not UTF-8",
        toml=b"[train]\n# \xe9t\xe9\nwarmup = 10\n",
    ),
    Case(
        "train-toml-vocab",
        (*TRAIN, "--config", "{toml}"),
        "vocab_size 5 differs from the data's tokenizer",
        toml="[model]\nvocab_size = 5\n",
    ),
    Case(
        "train-toml-heads",
        (*TRAIN, "--config", "{toml}"),
        "c.toml: d_model: 16 is not divisible by n_heads=3",
        toml=_toml_text("model", "n_heads", "3"),
    ),
    Case(
        "train-heads-flag", (*TRAIN, "--n-heads", "3"), "d_model: 16 is not divisible by n_heads=3"
    ),
    Case(
        "train-odd-d-model",
        (*TRAIN, "--d-model", "15", "--n-heads", "3"),
        "sinusoidal positions need an even d_model",
    ),
    Case(
        "train-d-ff-beyond-memory",
        (*TRAIN, "--d-ff", str(10**13)),
        "out of memory; try smaller settings",
    ),
    Case(
        "train-resume-no-run", ("train", "--run", "{tmp}/none", "--resume"), "no such run directory"
    ),
    Case(
        "train-resume-empty-run", ("train", "--run", "{dir}", "--resume"), "{dir}: no config.json"
    ),
    Case(
        "train-resume-preset",
        ("train", "--run", "{run}", "--resume", "--preset", "tiny"),
        "--resume keeps the run's config",
    ),
    Case(
        "train-resume-architecture",
        ("train", "--run", "{myrun}", "--resume", "--d-model", "32"),
        "architecture differs: d_model 32 != 16",
        setup=_copy_run,
    ),
    Case(
        "train-resume-config-binary",
        ("train", "--run", "{myrun}", "--resume", "--data", "{data}"),
        "config.json: not valid JSON",
        setup=_config_json(bytes(range(256))),
    ),
    Case(
        "train-resume-config-garbage",
        ("train", "--run", "{myrun}", "--resume", "--data", "{data}"),
        "config.json: not valid JSON",
        setup=_config_json(b"{not json"),
    ),
    Case(
        "train-resume-config-fields",
        ("train", "--run", "{myrun}", "--resume", "--data", "{data}"),
        "config.json: not the config of a run",
        setup=_config_json(b'{"model": {"d_mdl": 3}, "train": {}}'),
    ),
    Case(
        "plot-metrics-not-events",
        ("plot", "{tmp}/p"),
        "metrics.jsonl:1: not an event",
        setup=_metrics(b"[1, 2]\n"),
    ),
    Case(
        "train-resume-trainer-missing",
        ("train", "--run", "{myrun}", "--resume"),
        "trainer.pt: missing",
        setup=_trainer(lambda p: p.unlink()),
    ),
    Case(
        "train-resume-trainer-truncated",
        ("train", "--run", "{myrun}", "--resume"),
        "its manifest says",
        setup=_trainer(_truncate),
    ),
    Case(
        "train-resume-trainer-pickled",
        ("train", "--run", "{myrun}", "--resume"),
        "its manifest says",
        setup=_trainer(_pickled),
    ),
    Case(
        "train-resume-trainer-evil-zip",
        ("train", "--run", "{myrun}", "--resume"),
        "its manifest says",
        setup=_trainer(_evil_zip),
    ),
    Case(
        "train-resume-trainer-empty",
        ("train", "--run", "{myrun}", "--resume"),
        "its manifest says",
        setup=_trainer(lambda p: p.write_bytes(b"")),
    ),
    Case(
        "train-resume-trainer-zeros",
        ("train", "--run", "{myrun}", "--resume"),
        "its manifest says",
        setup=_trainer(lambda p: p.write_bytes(bytes(4096))),
    ),
    Case(
        "train-resume-trainer-dir",
        ("train", "--run", "{myrun}", "--resume"),
        "its manifest says",
        setup=_trainer(_as_dir),
    ),
    Case(
        "train-resume-trainer-list",
        ("train", "--run", "{myrun}", "--resume"),
        "its manifest says",
        setup=_trainer(_saved_list),
    ),
    Case(
        "train-resume-model-truncated",
        ("train", "--run", "{myrun}", "--resume"),
        "model.safetensors",
        setup=_model_file(_truncate),
    ),
    Case(
        "train-resume-model-text",
        ("train", "--run", "{myrun}", "--resume"),
        "model.safetensors",
        setup=_model_file(lambda p: p.write_text("hello")),
    ),
    Case(
        "train-resume-other-data",
        ("train", "--run", "{myrun}", "--resume", "--data", "{dir}"),
        "{dir}",
        setup=_copy_run,
    ),
    # average.
    Case(
        "average-last=0",
        ("average", "{run}", "--last", "0", "--out", "{tmp}/a.safetensors"),
        "--last: must be an integer >= 1",
    ),
    Case(
        "average-last=-2",
        ("average", "{run}", "--last", "-2", "--out", "{tmp}/a.safetensors"),
        "--last: must be an integer >= 1",
    ),
    Case(
        "average-last=x",
        ("average", "{run}", "--last", "x", "--out", "{tmp}/a.safetensors"),
        "--last: must be an integer",
    ),
    Case(
        "average-too-few",
        ("average", "{run}", "--last", "9", "--out", "{tmp}/a.safetensors"),
        "--last 9: only 2 checkpoint(s)",
    ),
    Case("average-no-out", ("average", "{run}"), "the following arguments are required: --out"),
    Case(
        "import-hf-out-no-parent",
        ("import-hf", "--model", "{dir}", "--out", "{tmp}/nodir/m.safetensors"),
        "--out {tmp}/nodir/m.safetensors: the directory {tmp}/nodir does not exist",
    ),
    Case(
        "average-out-no-parent",
        ("average", "{run}", "--last", "1", "--out", "{tmp}/nodir/x.safetensors"),
        "--out {tmp}/nodir/x.safetensors: the directory {tmp}/nodir does not exist",
    ),
    Case(
        "average-out-exists",
        ("average", "{run}", "--last", "1", "--out", "{text}"),
        "{text}: exists; pass --force",
    ),
    Case(
        "average-out-is-input",
        ("average", "{model}", "--last", "1", "--out", "{model}", "--force"),
        "is one of the checkpoints",
    ),
    Case(
        "average-missing",
        ("average", "{tmp}/nothing", "--last", "1", "--out", "{tmp}/a.safetensors"),
        "nothing: neither a run directory",
    ),
    Case(
        "average-empty-dir",
        ("average", "{dir}", "--last", "1", "--out", "{tmp}/a.safetensors"),
        "{dir}: neither a run directory",
    ),
    Case(
        "average-text",
        ("average", "{text}", "--last", "1", "--out", "{tmp}/a.safetensors"),
        "{text}: not a safetensors checkpoint",
    ),
    Case(
        "average-empty",
        ("average", "{empty}", "--last", "1", "--out", "{tmp}/a.safetensors"),
        "{empty}: not a safetensors checkpoint",
    ),
    Case(
        "average-binary",
        ("average", "{binary}", "--last", "1", "--out", "{tmp}/a.safetensors"),
        "{binary}: not a safetensors checkpoint",
    ),
    Case(
        "average-noconfig",
        ("average", "{noconfig}", "--last", "1", "--out", "{tmp}/a.safetensors"),
        "{noconfig}: checkpoint has no model_config",
    ),
    Case(
        "average-mismatch",
        ("average", "{mismatch}", "--last", "1", "--out", "{tmp}/a.safetensors"),
        "{mismatch}: weights do not match the architecture",
    ),
    Case(
        "average-mixed",
        ("average", "{model}", "{other}", "--last", "2", "--out", "{tmp}/a.safetensors"),
        "architecture differs",
    ),
    Case(
        "average-no-checkpoints",
        ("average", "{tmp}/r", "--last", "1", "--out", "{tmp}/a.safetensors"),
        "no complete checkpoint",
        setup=_mkdir("r/checkpoints"),
    ),
    # translate: checkpoints, tokenizers, input, output, batching.
    Case(
        "translate-no-checkpoint",
        ("translate",),
        "the following arguments are required: --checkpoint",
    ),
    Case(
        "translate-checkpoint-missing",
        ("translate", "--checkpoint", "{tmp}/none"),
        "none: checkpoint not found",
    ),
    Case(
        "translate-checkpoint-dir",
        ("translate", "--checkpoint", "{dir}"),
        "{dir}: no model.safetensors",
    ),
    Case(
        "translate-checkpoint-text",
        ("translate", "--checkpoint", "{text}"),
        "{text}: not a safetensors checkpoint",
    ),
    Case(
        "translate-checkpoint-empty",
        ("translate", "--checkpoint", "{empty}"),
        "{empty}: not a safetensors checkpoint",
    ),
    Case(
        "translate-checkpoint-binary",
        ("translate", "--checkpoint", "{binary}"),
        "{binary}: not a safetensors checkpoint",
    ),
    Case(
        "translate-checkpoint-json",
        ("translate", "--checkpoint", "{json}"),
        "{json}: not a safetensors checkpoint",
    ),
    Case(
        "translate-checkpoint-tokenizer",
        ("translate", "--checkpoint", "{tok}"),
        "tokenizer.json: not a safetensors checkpoint",
    ),
    Case(
        "translate-checkpoint-mismatch",
        ("translate", "--checkpoint", "{mismatch}"),
        "{mismatch}: weights do not match",
    ),
    Case(
        "translate-checkpoint-noconfig",
        ("translate", "--checkpoint", "{noconfig}"),
        "{noconfig}: checkpoint has no model_config",
    ),
    Case(
        "translate-tokenizer-missing", (*TRANSLATE, "--tokenizer", "{tmp}/none.json"), "none.json"
    ),
    Case("translate-tokenizer-text", (*TRANSLATE, "--tokenizer", "{text}"), "{text}"),
    Case("translate-tokenizer-binary", (*TRANSLATE, "--tokenizer", "{binary}"), "{binary}"),
    Case("translate-tokenizer-empty", (*TRANSLATE, "--tokenizer", "{empty}"), "{empty}"),
    Case("translate-tokenizer-json", (*TRANSLATE, "--tokenizer", "{json}"), "{json}"),
    Case("translate-tokenizer-dir", (*TRANSLATE, "--tokenizer", "{dir}"), "{dir}"),
    Case("translate-tokenizer-model", (*TRANSLATE, "--tokenizer", "{model}"), "model.safetensors"),
    Case(
        "translate-input-missing",
        (*TRANSLATE, "--input", "{tmp}/none.txt"),
        "none.txt: cannot read",
    ),
    Case("translate-input-dir", (*TRANSLATE, "--input", "{dir}"), "{dir}: cannot read"),
    Case(
        "translate-input-latin1", (*TRANSLATE, "--input", "{latin1}"), "{latin1}: line 1: not UTF-8"
    ),
    Case(
        "translate-input-binary", (*TRANSLATE, "--input", "{binary}"), "{binary}: line 2: not UTF-8"
    ),
    Case("translate-stdin-latin1", TRANSLATE, "stdin: line 2: not UTF-8", stdin=b"ok\n\xe9t\xe9\n"),
    Case(
        "translate-output-dir", (*TRANSLATE, "--output", "{dir}"), "--output {dir}: is a directory"
    ),
    Case(
        "translate-output-no-parent",
        (*TRANSLATE, "--output", "{tmp}/no/such/o.txt"),
        "--output {tmp}/no/such/o.txt: the directory {tmp}/no/such does not exist",
    ),
    Case(
        "translate-attention-file",
        (*TRANSLATE, "--attention", "{text}"),
        "--attention {text}: exists and is not a directory",
    ),
    Case(
        "translate-max-tokens=0",
        (*TRANSLATE, "--max-tokens", "0"),
        "--max-tokens: must be an integer >= 1",
    ),
    Case(
        "translate-max-tokens=-1",
        (*TRANSLATE, "--max-tokens", "-1"),
        "--max-tokens: must be an integer >= 1",
    ),
    Case(
        "translate-max-sentences=0",
        (*TRANSLATE, "--max-sentences", "0"),
        "--max-sentences: must be an integer >= 1",
    ),
    Case(
        "translate-max-sentences=x",
        (*TRANSLATE, "--max-sentences", "x"),
        "--max-sentences: must be an integer",
    ),
    Case(
        "translate-max-input-tokens=0",
        (*TRANSLATE, "--max-input-tokens", "0"),
        "--max-input-tokens: must be an integer >= 1",
    ),
    Case(
        "translate-max-input-tokens=x",
        (*TRANSLATE, "--max-input-tokens", "1e3"),
        "--max-input-tokens: must be an integer",
    ),
    Case("translate-device-bogus", (*TRANSLATE, "--device", "tpu9"), "--device: unknown device"),
    Case("translate-config-dir", (*TRANSLATE, "--config", "{dir}"), "{dir}: is a directory"),
    Case("translate-config-latin1", (*TRANSLATE, "--config", "{latin1}"), "{latin1}: not UTF-8"),
    Case("translate-config-binary", (*TRANSLATE, "--config", "{binary}"), "{binary}: not UTF-8"),
    Case(
        "translate-nbest-over-beam",
        (*TRANSLATE, "--beam", "2", "--nbest", "3"),
        "nbest: must be between 1 and beam=2",
    ),
    Case(
        "translate-toml-nbest-over-beam",
        (*TRANSLATE, "--config", "{toml}"),
        "c.toml: nbest: must be between 1 and beam=2",
        toml="[decode]\nbeam = 2\nnbest = 3\n",
    ),
    # evaluate.
    Case("evaluate-limit=-1", (*EVALUATE, "--limit", "-1"), "--limit: must be an integer >= 1"),
    Case("evaluate-limit=0", (*EVALUATE, "--limit", "0"), "--limit: must be an integer >= 1"),
    Case("evaluate-limit=x", (*EVALUATE, "--limit", "ten"), "--limit: must be an integer"),
    Case(
        "evaluate-tgt-lang=German",
        (*EVALUATE, "--tgt-lang", "German"),
        "--tgt-lang: must be a language code such as de, got 'German'",
    ),
    Case("evaluate-no-test-set", ("evaluate", "--checkpoint", "{model}"), "give a test set"),
    Case(
        "evaluate-data-and-src",
        (*EVALUATE, "--src", "{text}", "--ref", "{text}"),
        "give either --data or --src and --ref",
    ),
    Case(
        "evaluate-src-only",
        ("evaluate", "--checkpoint", "{model}", "--src", "{text}"),
        "give a test set",
    ),
    Case(
        "evaluate-src-missing",
        ("evaluate", "--checkpoint", "{model}", "--src", "{tmp}/no.txt", "--ref", "{text}"),
        "no.txt: cannot read",
    ),
    Case(
        "evaluate-src-dir",
        ("evaluate", "--checkpoint", "{model}", "--src", "{dir}", "--ref", "{text}"),
        "{dir}: cannot read",
    ),
    Case(
        "evaluate-src-latin1",
        ("evaluate", "--checkpoint", "{model}", "--src", "{latin1}", "--ref", "{text}"),
        "{latin1}: line 1: not UTF-8",
    ),
    Case(
        "evaluate-ref-binary",
        ("evaluate", "--checkpoint", "{model}", "--src", "{text}", "--ref", "{binary}"),
        "{binary}: line 2: not UTF-8",
    ),
    Case(
        "evaluate-misaligned",
        ("evaluate", "--checkpoint", "{model}", "--src", "{text}", "--ref", "{tmp}/one.txt"),
        "has 2 lines but",
        setup=_file("one.txt", b"one\n"),
    ),
    Case(
        "evaluate-empty",
        ("evaluate", "--checkpoint", "{model}", "--src", "{empty}", "--ref", "{empty}"),
        "the test set is empty",
    ),
    Case(
        "evaluate-data-missing",
        ("evaluate", "--checkpoint", "{model}", "--data", "{tmp}/none"),
        "none: no prepared data directory",
    ),
    Case(
        "evaluate-data-file", ("evaluate", "--checkpoint", "{model}", "--data", "{text}"), "{text}"
    ),
    Case("evaluate-split-bogus", (*EVALUATE, "--split", "dev"), "dev"),
    Case(
        "evaluate-checkpoint-text",
        ("evaluate", "--checkpoint", "{text}", "--data", "{data}"),
        "{text}: not a safetensors checkpoint",
    ),
    Case(
        "evaluate-checkpoint-mismatch",
        ("evaluate", "--checkpoint", "{mismatch}", "--data", "{data}"),
        "{mismatch}: weights do not match",
    ),
    Case(
        "evaluate-json-dir",
        (*EVALUATE, "--limit", "1", "--json", "{dir}"),
        "--json {dir}: is a directory",
    ),
    Case(
        "evaluate-hyps-dir",
        (*EVALUATE, "--limit", "1", "--hyps", "{dir}"),
        "--hyps {dir}: is a directory",
    ),
    Case(
        "evaluate-json-no-parent",
        (*EVALUATE, "--limit", "1", "--json", "{tmp}/nodir/r.json"),
        "--json {tmp}/nodir/r.json: the directory {tmp}/nodir does not exist",
    ),
    Case(
        "evaluate-hyps-parent-is-a-file",
        (*EVALUATE, "--limit", "1", "--hyps", "{text}/h.txt"),
        "--hyps {text}/h.txt: the directory {text} is not a directory",
    ),
    Case(
        "evaluate-max-tokens=0",
        (*EVALUATE, "--max-tokens", "0"),
        "--max-tokens: must be an integer >= 1",
    ),
    Case("evaluate-beam=0", (*EVALUATE, "--beam", "0"), "beam: must be >= 1"),
    Case("evaluate-alpha=nan", (*EVALUATE, "--alpha", "nan"), "--alpha: must be a finite number"),
    Case("evaluate-config-binary", (*EVALUATE, "--config", "{binary}"), "{binary}: not UTF-8"),
    # plot.
    Case("plot-missing", ("plot", "{tmp}/none"), "none"),
    Case("plot-file", ("plot", "{text}"), "{text}"),
    Case("plot-empty-dir", ("plot", "{dir}"), "{dir}"),
    Case(
        "plot-metrics-binary",
        ("plot", "{tmp}/p"),
        "metrics.jsonl:1: not",
        setup=_metrics(bytes(range(256))),
    ),
    Case(
        "plot-metrics-garbage",
        ("plot", "{tmp}/p"),
        "metrics.jsonl",
        setup=_metrics(b'{"event": "train", "step": 1}\n{oops\n'),
    ),
    Case(
        "plot-out-file",
        ("plot", "{run}", "--out", "{text}"),
        "--out {text}: exists and is not a directory",
    ),
    # walkthrough: values of the right type that it refuses.
    Case("walkthrough-d-model-odd", ("walkthrough", "--d-model", "5"), "d_model: must be even"),
    Case("walkthrough-d-model-0", ("walkthrough", "--d-model", "0"), "d_model: must be even"),
    Case("walkthrough-heads-0", ("walkthrough", "--n-heads", "0"), "n_heads: must be >= 1"),
    Case("walkthrough-heads-4", ("walkthrough", "--n-heads", "4"), "n_heads: must divide d_model"),
    Case(
        "walkthrough-layers-13",
        ("walkthrough", "--n-layers", "13"),
        "n_layers: must be between 1 and 12",
    ),
    Case(
        "walkthrough-decimals-9",
        ("walkthrough", "--decimals", "9"),
        "decimals: must be between 0 and 8",
    ),
    Case("walkthrough-lr-0", ("walkthrough", "--lr", "0"), "lr: must be > 0"),
    Case("walkthrough-lr-step-0", ("walkthrough", "--lr-step", "0"), "lr_step: must be >= 1"),
    Case("walkthrough-warmup-0", ("walkthrough", "--warmup", "0"), "warmup: must be >= 1"),
    Case(
        "walkthrough-ls-1",
        ("walkthrough", "--label-smoothing", "1"),
        "label_smoothing: must be in [0, 1)",
    ),
    Case("walkthrough-d-ff-0", ("walkthrough", "--d-ff", "0"), "d_ff: must be >= 1"),
    Case("walkthrough-empty-source", ("walkthrough", "--source", ""), "source"),
    Case(
        "walkthrough-html-dir", ("walkthrough", "--html", "{dir}"), "--html {dir}: is a directory"
    ),
    Case(
        "walkthrough-html-no-parent",
        ("walkthrough", "--html", "{tmp}/nodir/w.html"),
        "--html {tmp}/nodir/w.html: the directory {tmp}/nodir does not exist",
    ),
    # demo: its own flags (refused before anything is prepared).
    Case("demo-minutes=0", ("demo", "--minutes", "0"), "--minutes: must be a number > 0"),
    Case("demo-minutes=-1", ("demo", "--minutes", "-1"), "--minutes: must be a number > 0"),
    Case("demo-minutes=nan", ("demo", "--minutes", "nan"), "--minutes: must be a finite number"),
    Case("demo-steps=-1", ("demo", "--steps", "-1"), "--steps: must be an integer >= 0"),
    Case("demo-steps=x", ("demo", "--steps", "1k"), "--steps: must be an integer"),
    Case("demo-average=0", ("demo", "--average", "0"), "--average: must be an integer >= 1"),
    Case(
        "demo-vocab-size=5",
        ("demo", "--vocab-size", "5"),
        "--vocab-size: must be an integer >= 260",
    ),
    Case("demo-threads=-1", ("demo", "--threads", "-1"), "--threads: must be an integer >= 0"),
    Case(
        "demo-test-limit=-1",
        ("demo", "--test-limit", "-1"),
        "--test-limit: must be an integer >= 0",
    ),
    Case(
        "demo-max-words=-1", ("demo", "--max-words", "-1"), "--max-words: must be an integer >= 0"
    ),
    Case(
        "demo-min-words=-1", ("demo", "--min-words", "-1"), "--min-words: must be an integer >= 0"
    ),
    Case("demo-source=bogus", ("demo", "--source", "wmt14"), "--source: invalid choice"),
]


# The doors added after the first table (issue 53) keep their cases in modules of their own,
# one a door, each with a CASES list of Case; they are imported here, not by each other.
DOOR_MODULES = ("bad_inputs_hf", "bad_inputs_flags", "bad_inputs_table3", "bad_inputs_walkthrough")


def _door_cases() -> list[Case]:
    import importlib

    doors = [importlib.import_module(f"tests.{name}") for name in DOOR_MODULES]  # one way
    return [case for door in doors for case in door.CASES]


def all_cases() -> list[Case]:
    """The whole table: the generated cases, the hand-written ones and those of each door."""
    cases = _generated() + HAND + _door_cases()
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, duplicates
    return cases
