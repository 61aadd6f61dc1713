"""What every verb shares: flags generated from the config dataclasses, TOML configs, errors.

Precedence of settings: preset < ``--config file.toml`` < flags. A TOML file has one table per
config: ``[model]``, ``[train]``, ``[decode]``. Every value is checked before it is used: a
flag by its argparse type (``integer``, ``real``: the range in the message), a TOML value
against its dataclass field's type, then the config's own ``__post_init__``; the message names
the setting, and the file when the value came from one. The TOML reading and the precedence
are the library's (``aiayn.config.load_toml``, ``merge_config``); here are the flags.

The runtime flags that several verbs share have one converter each, so that a value one verb
refuses no other accepts: ``threads`` (``--threads``), ``device`` with ``check_device``
(``--device``) and ``seed`` (``--seed``; a config's seed field checks the same range,
``aiayn.config.SEED_LIMIT``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from aiayn.config import SECTIONS, SEED_LIMIT, merge_config
from aiayn.config import load_toml as load_toml  # the verbs read their TOML config with it
from aiayn.errors import UserError


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (argparse prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """argparse's, but a flag the verb does not take is refused in the verb's name."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            verb = getattr(parsed, "verb", None)
            prog = f"{self.prog} {verb}" if verb else self.prog
            message = f"unrecognized arguments: {' '.join(extras)}"
            self.exit(2, f"{prog}: error: {message} (see {prog} --help)\n")
        return parsed


def _bounds(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    def show(x: float) -> str:
        return str(x) if isinstance(x, int) else f"{x:g}"

    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {show(lo)}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {show(hi)}")
    return " and ".join(parts)


def integer(lo: int | None = None, hi: int | None = None, why: str = "") -> Callable[[str], int]:
    """An argparse type: an integer in [lo, hi]; the message names the range (and why)."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            reason = f" ({why})" if why else ""
            raise argparse.ArgumentTypeError(
                f"must be an integer {_bounds(lo, hi, False, False)}{reason}, got {text!r}"
            )
        return value

    convert.__name__ = "integer"
    return convert


def real(
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> Callable[[str], float]:
    """An argparse type: a finite number in the range (NaN and infinities refused)."""

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if (
            (lo is not None and (value < lo or (lo_open and value == lo)))
            or (hi is not None and (value > hi or (hi_open and value == hi)))
        ):  # fmt: skip
            raise argparse.ArgumentTypeError(
                f"must be a number {_bounds(lo, hi, lo_open, hi_open)}, got {text!r}"
            )
        return value

    convert.__name__ = "real"
    return convert


MAX_THREADS = 1024  # more than the cores of any machine aiayn runs on: a larger count is a typo
# --threads of every verb that takes it (train, translate, evaluate, demo, table3, explore):
# 0 keeps the engine's default (torch: all cores).
threads = integer(0, MAX_THREADS, why="0: the default, all cores")
# --seed of every verb whose seed is a flag of its own (prepare); a config's seed field
# (train, walkthrough) checks the same range in its __post_init__.
seed = integer(0, SEED_LIMIT - 1)
DEVICES = "auto, cpu, cuda or cuda:N"


def device(text: str) -> str:
    """An argparse type for ``--device``: auto, cpu, cuda or cuda:N (is it there: check_device)."""
    found = re.fullmatch(r"auto|cpu|cuda(?::(\d{1,4}))?", text)
    if found is None:
        raise argparse.ArgumentTypeError(f"unknown device {text!r} (use {DEVICES})")
    return text if found.group(1) is None else f"cuda:{int(found.group(1))}"


def check_device(name: str | None, flag: str = "--device") -> str:
    """The device to run on for a ``device`` value: auto (or None) is cuda when present, else cpu.

    A CUDA device the machine lacks is a UserError naming the flag (CUDA not available, or no
    device of that index), before anything is loaded. Imports torch.
    """
    import torch

    if name is None or name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        name = device(name)
    except argparse.ArgumentTypeError as e:
        raise UserError(f"{flag}: {e}") from None
    if not name.startswith("cuda"):
        return name
    if not torch.cuda.is_available():
        raise UserError(f"{flag} {name}: CUDA is not available on this machine (use cpu)")
    index, count = int(name.partition(":")[2] or 0), torch.cuda.device_count()
    if index >= count:
        raise UserError(
            f"{flag} {name}: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}"
        )
    return name


def _flag_type(hint: Any) -> tuple[Any, list[Any] | None, bool]:
    """(converter, choices, is_bool) for a dataclass field's type hint."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = next(a for a in args if a is not type(None))
        conv, choices, is_bool = _flag_type(inner)

        def optional(s: str) -> Any:
            return None if s.lower() == "none" else conv(s)

        optional.__name__ = getattr(conv, "__name__", "value")
        return optional, choices, is_bool
    if origin is typing.Literal:
        return str, list(args), False
    if hint is bool:
        return bool, None, True
    if hint is float:
        return real(), None, False
    if hint is int:
        return integer(), None, False
    return hint, None, False


def field_comments(cls: type) -> dict[str, str]:
    """The comment beside each field in the dataclass's source (its help), where there is one."""
    import inspect
    import re

    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):  # no source (a frozen build): the help is the default only
        return {}
    found = (re.match(r"\s+(\w+): [^#]*#\s*(.+)$", line) for line in lines)
    return {m.group(1): m.group(2).strip() for m in found if m}


def add_config_args(
    parser: argparse.ArgumentParser,
    cls: type,
    skip: tuple[str, ...] = (),
    title: str | None = None,
    description: str | None = None,
    groups: dict[str, Any] | None = None,
) -> None:
    """One ``--flag`` per field of the config dataclass ``cls`` (the CLI cannot drift from it).

    The flags go into an argument group ``title`` (default: "CLS settings"), a field named in
    ``groups`` into that group instead (e.g. the data or output settings of a TrainConfig).
    Each flag's help is the field's comment in the source and its default; a ``Literal``
    field lists its choices.
    """
    name = SECTIONS.get(cls.__name__, cls.__name__)
    group = parser.add_argument_group(title or f"{name} settings", description)
    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        conv, choices, is_bool = _flag_type(hints[f.name])
        flag = "--" + f.name.replace("_", "-")
        dest = f"{cls.__name__}.{f.name}"
        default = f"default {f.default}" if choices else f"default {f.default!r}"
        help_text = f"{comments[f.name]} ({default})" if f.name in comments else default
        into = (groups or {}).get(f.name, group)
        if is_bool:
            into.add_argument(
                flag,
                dest=dest,
                action=argparse.BooleanOptionalAction,
                default=argparse.SUPPRESS,
                help=help_text,
            )
        else:
            into.add_argument(
                flag,
                dest=dest,
                type=conv,
                choices=choices,
                default=argparse.SUPPRESS,
                metavar=None if choices else f.name.upper(),
                help=help_text.replace("%", "%%"),
            )


def flag_values(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """The fields of ``cls`` given as flags (those not given are absent)."""
    values = {}
    for f in dataclasses.fields(cls):
        key = f"{cls.__name__}.{f.name}"
        if hasattr(args, key):
            values[f.name] = getattr(args, key)
    return values


def config_from_args(
    cls: type, args: argparse.Namespace, base: Any = None, toml: dict[str, Any] | None = None
) -> Any:
    """Build ``cls`` from base (a preset) < the TOML table < the flags that were given.

    ``aiayn.config.merge_config`` with the flags: a value the config refuses is a UserError
    naming the field, and the TOML file when the TOML table alone is refused.
    """
    return merge_config(cls, base, toml, flag_values(cls, args))


def output_file(path: str | Path | None, flag: str) -> None:
    """An output file the user names: not a directory, and in a directory that exists.

    The one rule of every verb: a missing parent directory is refused, not created, so that a
    typo in a path cannot write a file somewhere unexpected. (A directory the user names as
    an output, ``--run``, ``--out DIR``, ``--attention DIR``, is created, with its parents.)
    """
    if path is None:
        return
    if Path(path).is_dir():
        raise UserError(f"{flag} {path}: is a directory; give a file name")
    parent = Path(path).parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise UserError(f"{flag} {path}: the directory {parent} {what}; create it first")


def output_dir(path: str | Path | None, flag: str) -> None:
    """An output directory path must not name an existing file."""
    if path is not None and Path(path).exists() and not Path(path).is_dir():
        raise UserError(f"{flag} {path}: exists and is not a directory")


def stderr(verb: str, message: str) -> None:
    """One line for the user on stderr, prefixed like the CLI's errors."""
    print(f"aiayn {verb}: {message}", file=sys.stderr, flush=True)


def say_checkpoint(verb: str, checkpoint: str | Path) -> None:
    """For a --checkpoint that is a shipped model's name, one line on stderr saying which model
    it means: the shipped one, or the file or directory of that name here, which wins
    (``aiayn.pretrained.resolve``; a damaged shipped file is a UserError). Nothing otherwise."""
    from aiayn.pretrained import resolve

    _, how = resolve(checkpoint)
    if how is not None:
        stderr(verb, how)
