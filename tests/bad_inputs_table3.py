"""Bad inputs of table3's results directory and of the mirror URLs (issue 53, findings 7 and 8).

A results directory is checked once, before anything is run or written
(``aiayn.table3.results.check_directory``): protocol.json against ``Protocol``'s fields and
every line of results.jsonl against ``RECORD``; a bad line is named by its number. An OUT/data
that an earlier invocation left is reused only when it is this table's corpus. A mirror URL has
one check and one join (``aiayn.data.corpora.download``), used by ``prepare --mirror`` and by
``table3`` / ``demo --multi30k-url``. The cases run through tests/bad_inputs.py (``CASES`` is
imported by ``all_cases``).

Every case fails fast: a table3 run names ``--source multi30k`` and an empty ``--multi30k-dir``
(a directory accepted by mistake would end on the missing files, with another line: the case
fails), and a bad URL is refused before anything is downloaded. What the setups write goes
into the case's own directory ({tmp}/t3).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bad_inputs import Case

OUT = "{tmp}/t3"
RUN = ("table3", "--rows", "E", "--steps", "3", "--seeds", "1", "--base-seeds", "1")
RUN += ("--out", OUT, "--source", "multi30k", "--multi30k-dir", "{dir}")
REPORT = ("table3", "--report-only", "--out", OUT)
Setup = Callable[[Path, dict[str, str]], None]


def protocol(**changes: Any) -> dict[str, Any]:
    """protocol.json as `aiayn table3 --steps 3` writes it (a check: the first 100 dev pairs),
    with changes."""
    from aiayn.table3.results import Protocol
    from aiayn.table3.run import default_dev_limit

    return {**dataclasses.asdict(Protocol(steps=3, dev_limit=default_dev_limit(3))), **changes}


def record(name: str = "base", seed: int = 1, **changes: Any) -> dict[str, Any]:
    """A record of results.jsonl as the runner writes it (tests/test_table3.py's shape)."""
    from aiayn.table3.rows import SMALL_BASE, quantities

    base = {
        "run": f"{name}-s{seed}",
        "name": name,
        "row": name,
        "seed": seed,
        "steps": 3,
        "corpus": "multi30k",
        "model": {**dataclasses.asdict(SMALL_BASE), "vocab_size": 300},
        "train_overrides": {},
        "protocol": protocol(),
        "values": quantities(SMALL_BASE, {}),
        "params": 1000,
        "train_flops": 1.0e9,
        "dev_ppl": 12.5,
        "dev_bleu": 3.25,
        "bleu_signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
        "hyps": f"hyps/{name}-s{seed}.txt",
        "refs": "hyps/refs.txt",
        "commit": "0" * 40,
        "threads": 1,
        "matmul_peak_gflops": 40.0,
        "train_minutes": 0.1,
    }
    return {**base, **changes}


def without(key: str, **changes: Any) -> dict[str, Any]:
    r = record(**changes)
    del r[key]
    return r


def write_dir(
    root: Path, lines: list[bytes] | None = None, prot: dict | bytes | None = None
) -> None:
    """A results directory under root: results.jsonl of lines, protocol.json, the hyps."""
    root.mkdir(parents=True, exist_ok=True)
    hyps = root / "hyps"
    hyps.mkdir(exist_ok=True)
    for name in ("refs", "base-s1", "base-s2", "E-learned-s1"):
        (hyps / f"{name}.txt").write_text("ein hund .\n", encoding="utf-8")
    if lines is not None:
        (root / "results.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    if prot is not None:
        raw = prot if isinstance(prot, bytes) else json.dumps(prot).encode()
        (root / "protocol.json").write_bytes(raw)


def line(value: Any) -> bytes:
    return json.dumps(value).encode()


def results(*lines: bytes, prot: dict | bytes | None = None, tail: bytes = b"") -> Setup:
    """A results directory in {tmp}/t3: results.jsonl holds lines, then tail without a newline
    (a line being appended when a run was killed), and protocol.json prot."""

    def setup(tmp: Path, world: dict[str, str]) -> None:
        write_dir(tmp / "t3", list(lines), prot)
        with (tmp / "t3" / "results.jsonl").open("ab") as fh:
            fh.write(tail)

    return setup


def protocol_file(raw: bytes | None = None, directory: bool = False) -> Setup:
    def setup(tmp: Path, world: dict[str, str]) -> None:
        write_dir(tmp / "t3", [line(record())], raw)
        if directory:
            (tmp / "t3" / "protocol.json").mkdir()

    return setup


def _prepare(argv: list[str]) -> None:
    from aiayn.cli import main

    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        assert main(["prepare", *argv, "--no-progress"]) == 0, quiet.getvalue()


def data_of(source: str, prot: dict | None) -> Setup:
    """OUT/data prepared from another corpus of the table's vocabulary size (8000)."""

    def setup(tmp: Path, world: dict[str, str]) -> None:
        out = tmp / "t3"
        write_dir(out, [], prot)
        if source == "copy300":  # the world's corpus, of another vocabulary size
            shutil.copytree(world["data"], out / "data")
            return
        argv = ["--out", str(out / "data"), "--vocab-size", "8000"]
        if source == "copy":
            argv += ["--source", "copy", "--num-pairs", "200"]
        else:
            from tests.multi30k_support import write_raw

            pairs = [
                (f"a dog number {i} runs .", f"ein hund nummer {i} rennt .") for i in range(40)
            ]
            splits = {"train": pairs[:30], "val": pairs[30:35], "test_2016_flickr": pairs[35:]}
            write_raw(tmp / "raw", splits)
            argv += ["--source", "multi30k", "--multi30k-dir", str(tmp / "raw")]
        _prepare(argv)

    return setup


# A line of results.jsonl that is no record of the runner's: (id, line, what the error says).
BAD_LINES: list[tuple[str, bytes, str]] = [
    ("int", b"42", "not a record (a JSON object), got 42"),
    ("list", b"[1, 2]", "not a record (a JSON object), got [1, 2]"),
    ("string", b'"base-s2"', "not a record (a JSON object), got 'base-s2'"),
    ("null", b"null", "not a record (a JSON object), got None"),
    ("empty-object", b"{}", "a record without run, name, seed"),
    ("no-dev-ppl", line(without("dev_ppl", seed=2)), "a record without dev_ppl"),
    ("no-hyps", line(without("hyps", seed=2)), "a record without hyps"),
    ("not-json", b'{"run": "base-s2", "dev_ppl": }', "not a JSON record"),
    ("latin1", '{"run": "Größe"}'.encode("latin-1"), "not UTF-8 text"),
    ("seed-string", line(record(seed="2")), "seed: must be an integer >= 1, got '2'"),
    ("seed-bool", line(record(seed=True)), "seed: must be an integer >= 1, got True"),
    ("seed-0", line(record(seed=0)), "seed: must be an integer >= 1, got 0"),
    ("steps-float", line(record(seed=2, steps=2.5)), "steps: must be an integer"),
    ("params-string", line(record(seed=2, params="1M")), "params: must be an integer"),
    ("ppl-string", line(record(seed=2, dev_ppl="x")), "dev_ppl: must be a finite number"),
    (
        "ppl-nan",
        b'{"dev_ppl": NaN, ' + line(without("dev_ppl", seed=2))[1:],
        "dev_ppl: must be a finite number >= 1, got nan",
    ),
    ("ppl-below-1", line(record(seed=2, dev_ppl=0.5)), "dev_ppl: must be a finite number >= 1"),
    ("bleu-list", line(record(seed=2, dev_bleu=[1])), "dev_bleu: must be a finite number"),
    (
        "bleu-over-100",
        line(record(seed=2, dev_bleu=101)),
        "dev_bleu: must be a finite number from 0 to 100",
    ),
    ("flops-0", line(record(seed=2, train_flops=0)), "train_flops: must be a finite number > 0"),
    (
        "threads-null",
        line(record(seed=2, threads=None)),
        "threads: must be an integer >= 1, got None",
    ),
    ("commit-int", line(record(seed=2, commit=7)), "commit: must be a string, got 7"),
    (
        "minutes-string",
        line(record(seed=2, train_minutes="1")),
        "train_minutes: must be a finite number",
    ),
    ("peak-string", line(record(seed=2, matmul_peak_gflops="40")), "matmul_peak_gflops: must be"),
    (
        "name-unknown",
        line(record("Z-h3")),
        "name: must be a string naming a row of Table 3, got 'Z-h3'",
    ),
    ("name-int", line(record(name=3)), "name: must be a string naming a row of Table 3, got 3"),
    (
        "corpus-other",
        line(record(seed=2, corpus="wmt14")),
        "corpus: must be a string naming a corpus, multi30k or packaged",
    ),
    ("run-mismatch", line(record(seed=2, run="base-s9")), "run: 'base-s9' is not 'base-s2'"),
    ("run-twice", line(record()), "run 'base-s1' is recorded twice (line 1 too)"),
    ("model-list", line(record(seed=2, model=[1])), "model: must be an object, got [1]"),
    ("model-no-heads", line(record(seed=2, model={"d_model": 128})), "model: no n_layers"),
    (
        "model-d-model-string",
        line(record(seed=2, model={**record()["model"], "d_model": "128"})),
        "model.d_model: must be an integer, got '128'",
    ),
    (
        "model-unknown-field",
        line(record(seed=2, model={**record()["model"], "wings": 2})),
        "model: ModelConfig: unknown field(s) wings",
    ),
    ("model-bad-heads", line(record(seed=2, model={**record()["model"], "n_heads": 7})), "model: "),
    (
        "overrides-list",
        line(record(seed=2, train_overrides=[])),
        "train_overrides: must be an object",
    ),
    (
        "smoothing-string",
        line(record(seed=2, train_overrides={"label_smoothing": "0.1"})),
        "train_overrides.label_smoothing: must be a finite number, got '0.1'",
    ),
    ("values-missing", line(record(seed=2, values={"h": 8})), "values: no d_k"),
    (
        "values-list",
        line(record(seed=2, values={**record()["values"], "h": [8]})),
        "values.h: must be a number or a string, got [8]",
    ),
    (
        "hyps-missing",
        line(record(seed=2, hyps="hyps/nowhere.txt")),
        "hyps: 'hyps/nowhere.txt' is not a file",
    ),
    ("refs-dir", line(record(seed=2, refs="hyps")), "refs: 'hyps' is not a file"),
]

# protocol.json that is no protocol of the runner's: (id, content, what the error says).
BAD_PROTOCOLS: list[tuple[str, bytes, str]] = [
    ("list", b"[1, 2]", "not a protocol (a JSON object), got [1, 2]"),
    ("int", b"8000", "not a protocol (a JSON object), got 8000"),
    ("not-json", b'{"steps": 3,', "not JSON"),
    ("empty", b"", "not JSON"),
    ("latin1", '{"corpus": "Größe"}'.encode("latin-1"), "not UTF-8 text"),
    ("missing-keys", line({"steps": 3}), "a protocol without max_tokens, warmup"),
    ("unknown-key", line(protocol(wings=2)), "unknown key(s) wings"),
    ("steps-string", line(protocol(steps="3")), "steps: must be an integer, got '3'"),
    ("steps-bool", line(protocol(steps=True)), "steps: must be an integer, got True"),
    ("steps-0", line(protocol(steps=0)), "steps: must be >= 1, got 0"),
    ("alpha-string", line(protocol(alpha="0.6")), "alpha: must be a finite number"),
    (
        "alpha-nan",
        json.dumps(protocol(alpha=float("nan"))).encode(),
        "alpha: must be a finite number, got nan",
    ),
    ("corpus-int", line(protocol(corpus=1)), "corpus: must be a string, got 1"),
    ("corpus-other", line(protocol(corpus="wmt14")), "corpus: must be multi30k or packaged"),
    ("sha-null", line(protocol(tokenizer_sha256=None)), "tokenizer_sha256: must be a string"),
    (
        "dev-limit-negative",
        line(protocol(dev_limit=-1)),
        "dev_limit: must be >= 0 (0: all), got -1",
    ),
    (
        "dev-limit-string",
        line(protocol(dev_limit="100")),
        "dev_limit: must be an integer, got '100'",
    ),
]

# A mirror URL that is none: (id, value, what the error says after the flag and the value).
BAD_URLS: list[tuple[str, str, str]] = [
    ("no-scheme", "127.0.0.1:9", "(no scheme: it must start with http://, https:// or file://)"),
    ("no-scheme-host", "www.example.org/multi30k/", "(no scheme"),
    ("ftp", "ftp://127.0.0.1/multi30k/", "(the scheme must be http, https or file, not 'ftp')"),
    ("empty", "", "'' is not a URL to download from (it is empty)"),
    ("space", "http://127.0.0.1 :9/", "(it holds a space or a control character)"),
    ("port-over", "http://127.0.0.1:99999/", "(the port must be a number from 1 to 65535)"),
    ("port-0", "http://127.0.0.1:0/", "(the port must be a number from 1 to 65535)"),
    ("port-word", "http://127.0.0.1:nine/", "(the port must be a number from 1 to 65535)"),
    ("no-host", "http:///multi30k/", "(no host)"),
    ("ipv6-open", "http://[::1/", "(Invalid IPv6 URL)"),
    ("file-no-path", "file:", "(a file: URL needs a path"),
]

PREPARE = ("prepare", "--out", "{tmp}/p", "--no-progress", "--cache-dir", "{tmp}/cache")
DEMO = ("demo", "--run", "{tmp}/demo", "--source", "multi30k", "--no-progress")
TABLE3_URL = (*RUN[: RUN.index("--multi30k-dir")],)  # a download, if the URL were accepted


def _cases() -> list[Case]:
    cases = []
    good = line(record())
    for id_, bad, message in BAD_LINES:
        for mode, argv in (("run", RUN), ("report", REPORT)):
            cases.append(Case(f"table3-{mode}-results-{id_}", argv, message, results(good, bad)))
    for id_, raw, message in BAD_PROTOCOLS:
        for mode, argv in (("run", RUN), ("report", REPORT)):
            cases.append(
                Case(
                    f"table3-{mode}-protocol-{id_}",
                    argv,
                    f"t3/protocol.json: {message}",
                    protocol_file(raw),
                )
            )
    for mode, argv in (("run", RUN), ("report", REPORT)):
        cases += [
            Case(
                f"table3-{mode}-protocol-dir",
                argv,
                "protocol.json: is a directory, not a file",
                protocol_file(directory=True),
            ),
            Case(
                f"table3-{mode}-results-dir",
                argv,
                "results.jsonl: is a directory, not a file",
                lambda tmp, world: (tmp / "t3" / "results.jsonl").mkdir(parents=True),
            ),
            Case(  # a bad line after a good one and before a half-written last line
                f"table3-{mode}-results-middle",
                argv,
                "line 2: not a JSON record",
                results(line(record()), b"}{", tail=b'{"run": "ba'),
            ),
        ]
    cases += [
        Case(  # the budget of protocol.json differs: refused before the corpus is prepared
            "table3-run-protocol-other-steps",
            RUN,
            "t3/protocol.json: this results directory was run with other settings "
            "(steps 5 there, 3 now)",
            results(good, prot=protocol(steps=5)),
        ),
        Case(  # a check (the first 100 dev pairs) never joins a directory scored on all of them
            "table3-run-protocol-other-dev-limit",
            RUN,
            "t3/protocol.json: this results directory was run with other settings "
            "(dev_limit 0 there, 100 now)",
            results(good, prot=protocol(dev_limit=0)),
        ),
        # OUT/data left by an earlier invocation: reused only when it is this table's corpus
        Case(
            "table3-run-data-copy-same-vocab",
            RUN,
            "t3/data: not this table's corpus (it holds 'copy', --source multi30k takes multi30k)",
            data_of("copy", None),
        ),
        Case(
            "table3-run-data-copy-other-vocab",
            (*RUN[:-4], "--source", "auto", "--multi30k-dir", "{dir}"),
            "t3/data: not this table's corpus (it holds 'copy', --source auto takes multi30k or "
            "packaged)",
            data_of("copy300", None),
        ),
        Case(  # the case: the same source and vocabulary size, another tokenizer
            "table3-run-data-other-tokenizer",
            RUN,
            "t3/data: not this table's corpus (its tokenizer is not the one protocol.json "
            "records: another corpus)",
            data_of("multi30k", protocol(tokenizer_sha256="0" * 64)),
        ),
        Case(
            "table3-run-data-other-corpus",
            (*RUN[:-4], "--source", "auto", "--multi30k-dir", "{dir}"),
            "t3/data: not this table's corpus (it holds 'multi30k', protocol.json records "
            "'packaged')",
            data_of("multi30k", protocol(corpus="packaged")),
        ),
        Case(
            "table3-run-data-packaged-wanted",
            (*RUN[:-4], "--source", "packaged"),
            "t3/data: not this table's corpus (it holds 'multi30k', --source packaged takes "
            "packaged)",
            data_of("multi30k", None),
        ),
    ]
    for id_, url, message in BAD_URLS:
        said = f"{url!r} is not a URL to download from {message}"
        if id_ == "empty":
            said = message
        for source in ("multi30k", "wmt14"):
            cases.append(
                Case(
                    f"prepare-mirror-{source}-{id_}",
                    (*PREPARE, "--source", source, "--mirror", url),
                    f"--mirror: {said}",
                )
            )
        cases.append(
            Case(
                f"table3-multi30k-url-{id_}",
                (*TABLE3_URL, "--multi30k-url", url),
                f"--multi30k-url: {said}",
            )
        )
        cases.append(
            Case(
                f"demo-multi30k-url-{id_}",
                (*DEMO, "--multi30k-url", url),
                f"--multi30k-url: {said}",
            )
        )
    cases += [
        Case(
            "table3-report-multi30k-url-ftp",
            (*REPORT, "--multi30k-url", "ftp://127.0.0.1/"),
            "--multi30k-url: 'ftp://127.0.0.1/' is not a URL",
        ),
        Case(  # --mirror with a source that downloads nothing: refused, not ignored
            "prepare-mirror-packaged",
            (*PREPARE, "--source", "packaged", "--mirror", "http://127.0.0.1:9/"),
            "--mirror applies to --source multi30k or wmt14",
        ),
    ]
    return cases


CASES: list[Case] = _cases()
