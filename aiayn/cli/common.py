"""What every verb shares: flags generated from the config dataclasses, TOML configs, errors.

Precedence of settings: preset < ``--config file.toml`` < flags. A TOML file has one table per
config: ``[model]``, ``[train]``, ``[decode]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

from aiayn.errors import UserError

SECTIONS = {"ModelConfig": "model", "TrainConfig": "train", "DecodeConfig": "decode"}


def _flag_type(hint: Any) -> tuple[Any, list[Any] | None, bool]:
    """(converter, choices, is_bool) for a dataclass field's type hint."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = next(a for a in args if a is not type(None))
        conv, choices, is_bool = _flag_type(inner)
        return (lambda s: None if s.lower() == "none" else conv(s)), choices, is_bool
    if origin is typing.Literal:
        return str, list(args), False
    if hint is bool:
        return bool, None, True
    return hint, None, False


def add_config_args(parser: argparse.ArgumentParser, cls: type, skip: tuple[str, ...] = ()) -> None:
    """One ``--flag`` per field of the config dataclass ``cls`` (the CLI cannot drift from it)."""
    group = parser.add_argument_group(f"{SECTIONS.get(cls.__name__, cls.__name__)} settings")
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        conv, choices, is_bool = _flag_type(hints[f.name])
        flag = "--" + f.name.replace("_", "-")
        dest = f"{cls.__name__}.{f.name}"
        help_text = f"default {f.default!r}"
        if is_bool:
            group.add_argument(
                flag,
                dest=dest,
                action=argparse.BooleanOptionalAction,
                default=argparse.SUPPRESS,
                help=help_text,
            )
        else:
            group.add_argument(
                flag,
                dest=dest,
                type=conv,
                choices=choices,
                default=argparse.SUPPRESS,
                metavar=f.name.upper(),
                help=help_text,
            )


def load_toml(path: str | Path | None) -> dict[str, Any]:
    """The tables of a TOML config file, or {} for None; a bad file is a UserError naming it."""
    if path is None:
        return {}
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise UserError(f"{p}: config file not found") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{p}: not valid TOML: {e}") from None
    unknown = sorted(set(data) - set(SECTIONS.values()))
    if unknown:
        raise UserError(
            f"{p}: unknown table(s) {', '.join(unknown)}; use [model], [train], [decode]"
        )
    from aiayn import config

    for cls_name, table in SECTIONS.items():
        names = {f.name for f in dataclasses.fields(getattr(config, cls_name))}
        bad = sorted(set(data.get(table, {})) - names)
        if bad:
            raise UserError(f"{p}: unknown setting(s) in [{table}]: {', '.join(bad)}")
    return data


def config_from_args(
    cls: type, args: argparse.Namespace, base: Any = None, toml: dict[str, Any] | None = None
) -> Any:
    """Build ``cls`` from base (a preset) < the TOML table < the flags that were given."""
    base = base if base is not None else cls()
    overrides: dict[str, Any] = dict((toml or {}).get(SECTIONS.get(cls.__name__, ""), {}))
    names = {f.name for f in dataclasses.fields(cls)}
    bad = sorted(set(overrides) - names)
    if bad:
        raise UserError(f"unknown {SECTIONS.get(cls.__name__)} setting(s): {', '.join(bad)}")
    for name in names:
        key = f"{cls.__name__}.{name}"
        if hasattr(args, key):
            overrides[name] = getattr(args, key)
    try:
        return dataclasses.replace(base, **overrides)
    except (ValueError, TypeError) as e:
        raise UserError(str(e)) from None
