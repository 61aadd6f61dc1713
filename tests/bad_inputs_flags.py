"""Bad runtime flags (issue 53): --threads, --device and --seed of every verb that takes them.

Each of these flags has one converter in aiayn/cli/common.py (``threads``, ``device`` with
``check_device``, ``seed``; a config's seed field checks ``aiayn.config.SEED_LIMIT``), so every
verb answers the same value with the same line. A verb that does not take a flag refuses it
pointing to its own ``--help``. The cases run through tests/bad_inputs.py (``CASES`` is imported
by ``all_cases``).

The engines' cases (--engine ctranslate2 and onnx) name an empty directory as the export: the
flag is refused before the export is read, and a flag accepted by mistake would fail on the
directory with another line, so the case would still fail. explore's cases fail before
serving: the checkpoint is an empty directory (nothing to load, so no server even if a flag
were accepted) and --no-browser is given.
"""

from __future__ import annotations

from tests.bad_inputs import EVALUATE, HAND, QUICK, SMALL, TRANSLATE, Case

TRAIN = ("train", "--data", "{data}", "--run", "{tmp}/r", "--preset", "tiny", *SMALL, *QUICK)
EXPLORE = ("explore", "--checkpoint", "{dir}", "--no-browser", "--port", "0")


def _engine(base: tuple[str, ...], engine: str) -> tuple[str, ...]:
    """base with --engine and the empty directory as the export."""
    argv = list(base)
    argv[argv.index("{model}")] = "{dir}"
    return (*argv, "--engine", engine)


# The verbs that take --threads, each as a command line that would run if the value passed.
THREADS_VERBS = {
    "translate": TRANSLATE,
    "translate-ct2": _engine(TRANSLATE, "ctranslate2"),
    "translate-onnx": _engine(TRANSLATE, "onnx"),
    "evaluate": EVALUATE,
    "evaluate-ct2": _engine(EVALUATE, "ctranslate2"),
    "evaluate-onnx": _engine(EVALUATE, "onnx"),
    "train": TRAIN,
    "demo": ("demo", "--run", "{tmp}/demo"),
    "table3": ("table3", "--out", "{tmp}/t3", "--rows", "A"),
    "explore": EXPLORE,
}
# After --threads, a value argparse refuses too, so that a --threads accepted by mistake ends
# at once (with another line: the case fails) instead of a demo or a table of training runs.
GUARD = {"demo": ("--steps", "-1"), "table3": ("--steps", "0")}
THREADS_VALUES = {  # value: what the line says
    "-1": "--threads: must be an integer >= 0 and <= 1024",
    "1025": "--threads: must be an integer >= 0 and <= 1024",
    "huge": "--threads: must be an integer >= 0 and <= 1024",
    "abc": "--threads: must be an integer, got 'abc'",
    "1.5": "--threads: must be an integer, got '1.5'",
}
# The verbs that take --device (the engines run on the CPU: their own line, below).
DEVICE_VERBS = {"translate": TRANSLATE, "evaluate": EVALUATE, "train": TRAIN, "explore": EXPLORE}
DEVICE_VALUES = {
    "bogus": "--device: unknown device 'bogus' (use auto, cpu, cuda or cuda:N)",
    "cuda:x": "--device: unknown device 'cuda:x'",
    "cuda:-1": "--device: unknown device 'cuda:-1'",
    "CPU": "--device: unknown device 'CPU'",
    "cuda:99": "--device cuda:99: ",  # no CUDA here; with CUDA, no 100th device
}
HUGE = str(10**23)  # the value of the issue: past a C long


def _value(v: str) -> str:
    return HUGE if v == "huge" else v


def _no_cuda() -> bool:
    import torch

    return not torch.cuda.is_available()


def _cases() -> list[Case]:
    cases = [
        Case(f"{verb}-threads={v}", (*argv, "--threads", _value(v), *GUARD.get(verb, ())), expect)
        for verb, argv in THREADS_VERBS.items()
        for v, expect in THREADS_VALUES.items()
    ]
    devices = dict(DEVICE_VALUES)
    if _no_cuda():  # on a machine with CUDA, cuda is a device that exists
        devices["cuda"] = "--device cuda: CUDA is not available on this machine"
    cases += [
        Case(f"{verb}-device={v}", (*argv, "--device", v), expect)
        for verb, argv in DEVICE_VERBS.items()
        for v, expect in devices.items()
    ]
    cases += [
        Case(
            f"{verb}-{engine}-device=cuda",
            (*_engine(base, engine), "--device", "cuda"),
            f"--device cuda: --engine {engine} runs on the CPU here",
        )
        for verb, base in (("translate", TRANSLATE), ("evaluate", EVALUATE))
        for engine in ("ctranslate2", "onnx")
    ]
    # --seed: train's and walkthrough's are config fields, prepare's a flag of its own.
    seed_range = "seed: must be in [0, 2^32)"
    for v in ("huge", "-1", "4294967296"):
        cases.append(Case(f"train-seed={v}", (*TRAIN, "--seed", _value(v)), seed_range))
        cases.append(
            Case(f"walkthrough-seed={v}", ("walkthrough", "--seed", _value(v)), seed_range)
        )
    cases.append(
        Case(
            "prepare-seed=4294967296",
            ("prepare", "--out", "{tmp}/d", "--source", "copy", "--seed", "4294967296"),
            "--seed: must be an integer >= 0 and <= 4294967295",
        )
    )
    cases.append(Case("walkthrough-seed=abc", ("walkthrough", "--seed", "abc"), "--seed: must be"))
    # A verb that does not take the flag refuses it, pointing to its own --help.
    cases += [
        Case(
            f"{argv[0]}-refuses-{flag[2:]}",
            (*argv, flag, value),
            f"unrecognized arguments: {flag} {value} (see aiayn {argv[0]} --help)",
        )
        for argv, flag, value in (
            (("walkthrough",), "--threads", "2"),
            (("walkthrough",), "--device", "cpu"),
            (("average", "{run}", "--out", "{tmp}/a.safetensors"), "--threads", "2"),
            (
                ("export", "--checkpoint", "{model}", "--format", "onnx", "--out", "{tmp}/e"),
                "--device",
                "cpu",
            ),
            (("translate", "--checkpoint", "{model}"), "--seed", "1"),
        )
    ]
    first = {c.id for c in HAND}  # the first table's case of the same id stays
    return [c for c in cases if c.id not in first]


CASES = _cases()
