"""Frozen configurations and the paper's presets.  Sections 3, 5 and 6; Tables 3 and 2.

One config system: ``@dataclass(frozen=True, kw_only=True)`` whose defaults are the paper's
values, validated in ``__post_init__`` with a message naming the field. Presets are built with
``dataclasses.replace``; the CLI generates its flags from the fields (``aiayn.cli.common``).
Settings merge in increasing precedence: preset < TOML file (``load_toml``) < single values
(``merge_config``; the CLI's flags); a refused value is a UserError naming it and its file.

>>> cfg = model_preset("base")
>>> cfg.d_model, cfg.n_heads, cfg.d_k, cfg.d_ff, cfg.n_layers
(512, 8, 64, 2048, 6)
>>> cfg.d_k_override is None, model_preset("table3-A-h1").d_k
(True, 512)
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aiayn.errors import UserError

Positions = Literal["sinusoidal", "sinusoidal-concat", "learned"]
LengthPenalty = Literal["gnmt", "fairseq", "none"]
Activation = Literal["relu", "silu"]
DecoderStart = Literal["bos", "pad"]
LrDecay = Literal["rsqrt", "linear"]
# Every seed aiayn takes is in [0, 2^32) (NumPy's legacy seeds): TrainConfig, the walkthrough's
# config and the CLI's --seed flags check this one range.
SEED_LIMIT = 2**32


def _check(cond: bool, name: str, message: str) -> None:
    if not cond:
        raise ValueError(f"{name}: {message}")


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """The Transformer's architecture.  Section 3; base model of Table 3.

    Defaults are the paper's base model. Options that depart from the paper are off by default
    and listed in docs/deviations.md.
    """

    vocab_size: int = 37000  # 5.1: shared source-target BPE vocabulary of about 37000 tokens
    d_model: int = 512  # 3.1: every sub-layer and embedding output
    n_heads: int = 8  # 3.2.2: h
    d_k_override: int | None = None  # 3.2.2: None: d_k = d_model / h (Table 3 rows A-C set it)
    d_v_override: int | None = None  # 3.2.2: None: d_v = d_model / h (Table 3 row B keeps 64)
    d_ff: int = 2048  # 3.3: inner layer of the FFN
    n_layers: int = 6  # 3.1: N, the same for encoder and decoder
    n_dec_layers: int | None = None  # decoder layers when different from n_layers (None: same)
    dropout: float = 0.1  # 5.4: P_drop, residual and embedding dropout
    attn_dropout: float = 0.0  # EXTENSION: dropout on attention probabilities (paper: none)
    ffn_dropout: float = 0.0  # EXTENSION: dropout after the ReLU (paper: none)
    norm_first: bool = False  # DEVIATION(3.1): pre-LN with a final LayerNorm when True
    positions: Positions = "sinusoidal"  # 3.5; "learned" is Table 3 row E
    max_positions: int = 1024  # only for learned positions: the table's size
    attn_bias: bool = False  # EXTENSION: biases in W^Q, W^K, W^V, W^O (Eq. of 3.2.2 has none)
    layer_norm_eps: float = 1e-5  # not given in the paper; PyTorch's default
    pad_id: int = 0  # the padding token of the shared vocabulary
    # Marian / OPUS-MT (docs/huggingface.md); each an EXTENSION, off by default:
    activation: Activation = "relu"  # EXTENSION: "silu" (swish) in the FFN; Eq. (2) is ReLU
    logits_bias: bool = False  # EXTENSION: logits Z_D E^T + b, b (V,) (Marian's final_logits_bias)
    decoder_start: DecoderStart = "bos"  # EXTENSION: "pad": position 0 reads PAD's row (Marian)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_positions"):
            _check(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        if self.d_k_override is None or self.d_v_override is None:
            _check(
                self.d_model % self.n_heads == 0,
                "d_model",
                f"{self.d_model} is not divisible by n_heads={self.n_heads} "
                "(set d_k_override and d_v_override for another head size)",
            )
        for name in ("d_k_override", "d_v_override"):
            v = getattr(self, name)
            if v is not None:
                _check(v >= 1, name, f"must be >= 1, got {v}")
        if self.n_dec_layers is not None:
            _check(self.n_dec_layers >= 1, "n_dec_layers", f"must be >= 1, got {self.n_dec_layers}")
        for name in ("dropout", "attn_dropout", "ffn_dropout"):
            p = getattr(self, name)
            _check(0.0 <= p < 1.0, name, f"must be in [0, 1), got {p}")
        _check(
            self.positions in ("sinusoidal", "sinusoidal-concat", "learned"),
            "positions",
            f"must be sinusoidal, sinusoidal-concat or learned, got {self.positions!r}",
        )
        _check(
            self.positions == "learned" or self.d_model % 2 == 0,
            "d_model",
            f"sinusoidal positions need an even d_model, got {self.d_model}",
        )
        _check(
            self.activation in ("relu", "silu"),
            "activation",
            f"must be relu or silu, got {self.activation!r}",
        )
        _check(
            self.decoder_start in ("bos", "pad"),
            "decoder_start",
            f"must be bos or pad, got {self.decoder_start!r}",
        )
        _check(self.layer_norm_eps > 0, "layer_norm_eps", f"must be > 0, got {self.layer_norm_eps}")
        _check(
            0 <= self.pad_id < self.vocab_size,
            "pad_id",
            f"must be a token id below vocab_size={self.vocab_size}, got {self.pad_id}",
        )

    @property
    def d_k(self) -> int:
        """d_k = d_v's partner, the size of a head's queries and keys (3.2.2): d_model / h, or
        ``d_k_override`` when set."""
        return self.d_k_override if self.d_k_override is not None else self.d_model // self.n_heads

    @property
    def d_v(self) -> int:
        """d_v, the size of a head's values (3.2.2): d_model / h, or ``d_v_override`` when set."""
        return self.d_v_override if self.d_v_override is not None else self.d_model // self.n_heads

    @property
    def decoder_layers(self) -> int:
        return self.n_dec_layers if self.n_dec_layers is not None else self.n_layers


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """The training recipe.  Sections 5.1-5.4.

    lr = lr_scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), Eq. (3).
    """

    label_smoothing: float = 0.1  # 5.4: eps_ls
    adam_beta1: float = 0.9  # 5.3
    adam_beta2: float = 0.98  # 5.3
    adam_eps: float = 1e-9  # 5.3 (PyTorch's default is 1e-8)
    warmup: int = 4000  # 5.3: warmup_steps
    lr_scale: float = 1.0  # EXTENSION: multiplies Eq. (3); 1.0 is the paper
    lr_decay: LrDecay = "rsqrt"  # 5.3: step^-0.5 after warm-up; DEVIATION "linear": to 0 at the end
    decay_steps: int = 0  # lr_decay linear: the rate reaches 0 at this step (or decay_minutes)
    decay_minutes: float = 0.0  # lr_decay linear: ... or after this much training time in all
    max_tokens: int = 25000  # 5.1: about 25000 source and 25000 target tokens a batch
    update_freq: int = 1  # batches accumulated into one step (1: the batch is the step)
    max_steps: int = 100_000  # 5.2: base model, 100K steps
    max_epochs: int = 0  # 0: no limit
    max_minutes: float = 0.0  # 0: no limit
    seed: int = 1
    save_every_steps: int = 0  # 0: only by time
    save_every_minutes: float = 10.0  # 6.1: checkpoints written at 10-minute intervals
    keep_last: int = 5  # 6.1: base averages the last 5 (big: 20)
    log_every: int = 100
    valid_every: int = 1000
    max_bad_steps: int = 5  # consecutive non-finite steps that stop the run
    clip_norm: float = 0.0  # EXTENSION: clip the gradient's L2 norm (0: none, as the paper)
    valid_bleu: bool = False  # also decode the validation set greedily and report BLEU

    def __post_init__(self) -> None:
        _check(
            0.0 <= self.label_smoothing < 1.0,
            "label_smoothing",
            f"must be in [0, 1), got {self.label_smoothing}",
        )
        for name in ("adam_beta1", "adam_beta2"):
            b = getattr(self, name)
            _check(0.0 <= b < 1.0, name, f"must be in [0, 1), got {b}")
        _check(self.adam_eps > 0, "adam_eps", f"must be > 0, got {self.adam_eps}")
        for name in ("warmup", "max_tokens", "update_freq", "keep_last", "log_every"):
            v = getattr(self, name)
            _check(v >= 1, name, f"must be >= 1, got {v}")
        _check(self.lr_scale > 0, "lr_scale", f"must be > 0, got {self.lr_scale}")
        _check(
            self.lr_decay in ("rsqrt", "linear"),
            "lr_decay",
            f"must be rsqrt or linear, got {self.lr_decay!r}",
        )
        _check(
            self.decay_minutes >= 0 and math.isfinite(self.decay_minutes),
            "decay_minutes",
            f"must be >= 0, got {self.decay_minutes}",
        )
        budgets = (self.decay_steps > 0) + (self.decay_minutes > 0)
        if self.lr_decay == "linear":
            _check(
                budgets == 1,
                "lr_decay",
                "linear decays to zero at the end of a budget: set exactly one of decay_steps "
                f"and decay_minutes, got {self.decay_steps} and {self.decay_minutes}",
            )
            _check(
                self.decay_steps == 0 or self.decay_steps > self.warmup,
                "decay_steps",
                f"must be above warmup={self.warmup}, got {self.decay_steps}",
            )
        else:
            _check(
                budgets == 0,
                "lr_decay",
                "decay_steps and decay_minutes are for lr_decay linear; Eq. (3) has no end",
            )
        for name in ("max_steps", "max_epochs", "save_every_steps", "valid_every", "decay_steps"):
            v = getattr(self, name)
            _check(v >= 0, name, f"must be >= 0, got {v}")
        for name in ("max_minutes", "save_every_minutes"):
            v = getattr(self, name)
            _check(v >= 0 and math.isfinite(v), name, f"must be >= 0, got {v}")
        _check(self.max_bad_steps >= 1, "max_bad_steps", f"must be >= 1, got {self.max_bad_steps}")
        _check(0 <= self.seed < SEED_LIMIT, "seed", f"must be in [0, 2^32), got {self.seed}")
        _check(
            self.clip_norm >= 0 and math.isfinite(self.clip_norm),
            "clip_norm",
            f"must be >= 0, got {self.clip_norm}",
        )


@dataclass(frozen=True, kw_only=True)
class DecodeConfig:
    """Inference settings.  Section 6.1.

    Hypotheses are ranked by log P(Y|X) / lp(Y), lp(Y) = ((5 + |Y|) / 6)^alpha (GNMT).
    """

    beam: int = 4  # 6.1: beam size 4
    alpha: float = 0.6  # 6.1: length penalty alpha = 0.6
    length_penalty: LengthPenalty = "gnmt"  # "fairseq": |Y|^alpha (an EXTENSION)
    max_len_a: float = 1.0  # 6.1: maximum output length = a * input length + b
    max_len_b: int = 50  # 6.1: input length + 50
    nbest: int = 1

    def __post_init__(self) -> None:
        _check(self.beam >= 1, "beam", f"must be >= 1, got {self.beam}")
        _check(self.alpha >= 0, "alpha", f"must be >= 0, got {self.alpha}")
        _check(
            self.length_penalty in ("gnmt", "fairseq", "none"),
            "length_penalty",
            f"must be gnmt, fairseq or none, got {self.length_penalty!r}",
        )
        _check(self.max_len_a >= 0, "max_len_a", f"must be >= 0, got {self.max_len_a}")
        _check(self.max_len_b >= 0, "max_len_b", f"must be >= 0, got {self.max_len_b}")
        _check(
            1 <= self.nbest <= self.beam,
            "nbest",
            f"must be between 1 and beam={self.beam}, got {self.nbest}",
        )


@dataclass(frozen=True)
class Preset:
    """A named row: model overrides and training overrides on top of the base defaults."""

    description: str
    model: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)


# Table 3 of the paper; unlisted values are the base model's.
PRESETS: dict[str, Preset] = {
    # The paper rounds base to 65M parameters; at V = 37000 with three-way tying this builds
    # 63,045,632 (tests/test_model.py::test_parameter_counts_at_vocabulary_37000): the paper
    # states neither its exact vocabulary nor how it counted (docs/model.md).
    "base": Preset("Transformer base (Table 3, first row)"),
    "big": Preset(
        "Transformer big (Table 3, last row; EN-DE P_drop 0.3, 300K steps)",
        model={"d_model": 1024, "d_ff": 4096, "n_heads": 16, "dropout": 0.3},
        train={"max_steps": 300_000, "keep_last": 20},
    ),
    "tiny": Preset(
        "A small model for CPU work (not in the paper)",
        model={"d_model": 256, "n_heads": 4, "d_ff": 1024, "n_layers": 3},
    ),
    "table3-A-h1": Preset(
        "Table 3 row A: h 1, d_k = d_v 512",
        model={"n_heads": 1, "d_k_override": 512, "d_v_override": 512},
    ),
    "table3-A-h4": Preset(
        "Table 3 row A: h 4, d_k = d_v 128",
        model={"n_heads": 4, "d_k_override": 128, "d_v_override": 128},
    ),
    "table3-A-h16": Preset(
        "Table 3 row A: h 16, d_k = d_v 32",
        model={"n_heads": 16, "d_k_override": 32, "d_v_override": 32},
    ),
    "table3-A-h32": Preset(
        "Table 3 row A: h 32, d_k = d_v 16",
        model={"n_heads": 32, "d_k_override": 16, "d_v_override": 16},
    ),
    "table3-B-dk16": Preset("Table 3 row B: d_k 16", model={"d_k_override": 16}),
    "table3-B-dk32": Preset("Table 3 row B: d_k 32", model={"d_k_override": 32}),
    "table3-C-n2": Preset("Table 3 row C: N 2", model={"n_layers": 2}),
    "table3-C-n4": Preset("Table 3 row C: N 4", model={"n_layers": 4}),
    "table3-C-n8": Preset("Table 3 row C: N 8", model={"n_layers": 8}),
    "table3-C-d256": Preset(
        "Table 3 row C: d_model 256, d_k = d_v 32",
        model={"d_model": 256, "d_k_override": 32, "d_v_override": 32},
    ),
    "table3-C-d1024": Preset(
        "Table 3 row C: d_model 1024, d_k = d_v 128",
        model={"d_model": 1024, "d_k_override": 128, "d_v_override": 128},
    ),
    "table3-C-dff1024": Preset("Table 3 row C: d_ff 1024", model={"d_ff": 1024}),
    "table3-C-dff4096": Preset("Table 3 row C: d_ff 4096", model={"d_ff": 4096}),
    "table3-D-drop0.0": Preset("Table 3 row D: P_drop 0.0", model={"dropout": 0.0}),
    "table3-D-drop0.2": Preset("Table 3 row D: P_drop 0.2", model={"dropout": 0.2}),
    "table3-D-ls0.0": Preset("Table 3 row D: eps_ls 0.0", train={"label_smoothing": 0.0}),
    "table3-D-ls0.2": Preset("Table 3 row D: eps_ls 0.2", train={"label_smoothing": 0.2}),
    "table3-E-learned": Preset(
        "Table 3 row E: learned positional embedding instead of sinusoids",
        model={"positions": "learned"},
    ),
}


def _preset(name: str) -> Preset:
    if name not in PRESETS:
        known = ", ".join(PRESETS)
        raise ValueError(f"preset: unknown name {name!r}; known presets: {known}")
    return PRESETS[name]


def model_preset(name: str, **overrides: Any) -> ModelConfig:
    """The ModelConfig of a named preset (Table 3 rows, base, big, tiny), with overrides."""
    return dataclasses.replace(ModelConfig(), **{**_preset(name).model, **overrides})


def train_preset(name: str, **overrides: Any) -> TrainConfig:
    """The TrainConfig of a named preset, with overrides."""
    return dataclasses.replace(TrainConfig(), **{**_preset(name).train, **overrides})


def to_dict(cfg: Any) -> dict[str, Any]:
    """A config as a plain dict (for checkpoints and logs)."""
    return dataclasses.asdict(cfg)


# Fields that older checkpoints stored in their ModelConfig and that are now chosen when a model
# is run (``--kernels``, ``aiayn.kernels``): how to run is not what to compute. Ignored on load.
RUN_TIME_FIELDS = ("kernels", "fused_attention")
RUN_FLAGS = ("threads", "device", "bf16", "compile")  # flags of the verbs, never in a config
# Fields of ModelConfig under their old names (checkpoints, config.json and TOML files of an
# older aiayn): "d_k" and "d_v" held the override, while cfg.d_k is now always the head size.
RENAMED_FIELDS = {"d_k": "d_k_override", "d_v": "d_v_override"}


def _renamed(data: Mapping[str, Any]) -> dict[str, Any]:
    """A ModelConfig dict with old field names renamed (the new name wins when both are given)."""
    out = dict(data)
    for old, new in RENAMED_FIELDS.items():
        if old in out:
            value = out.pop(old)
            out.setdefault(new, value)
    return out


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Rebuild a config from ``to_dict`` output, naming any unknown field."""
    names = {f.name for f in dataclasses.fields(cls)}
    if cls is ModelConfig:
        data = {k: v for k, v in _renamed(data).items() if k not in RUN_TIME_FIELDS}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown field(s) {', '.join(unknown)}")
    return cls(**data)


# Config files and precedence ---------------------------------------------------------------

SECTIONS = {"ModelConfig": "model", "TrainConfig": "train", "DecodeConfig": "decode"}
# Tables a config file may hold for another reader, passed over here: a recipe's [recipe] (its
# data, budget and averaging, read by recipes/run.py), so `aiayn train --config RECIPE` trains it.
OTHER_TABLES = ("recipe",)


def _toml_value(hint: Any, value: Any) -> Any:
    """value converted to a field of type hint, or ValueError with what was expected."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if isinstance(value, str) and value.lower() == "none":  # TOML has no null
            return None
        inner = next(a for a in args if a is not type(None))
        try:
            return _toml_value(inner, value)
        except ValueError as e:
            raise ValueError(f'{e} (or "none")') from None
    if origin is typing.Literal:
        if value not in args:
            raise ValueError(f"must be one of {', '.join(map(str, args))}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("must be an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number")
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ValueError("must be a string")
        return value
    return value


class TomlTables(dict):
    """The tables of a TOML config, remembering the file they came from (for messages)."""

    path: Path | None = None


def load_toml(path: str | Path | None) -> dict[str, Any]:
    """The tables of a TOML config file, or {} for None; a bad file is a UserError naming it.

    Tables: ``[model]``, ``[train]``, ``[decode]``; a recipe's ``[recipe]`` is passed over
    (recipes/run.py reads it). Every value is checked against its config
    field's type (and converted: 1 -> 1.0 for a float field), so ``warmup = "ten"`` is
    "FILE: [train] warmup: must be an integer".
    """
    if path is None:
        return {}
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise UserError(f"{p}: config file not found") from None
    except IsADirectoryError:
        raise UserError(f"{p}: is a directory, not a TOML config file") from None
    except UnicodeDecodeError:
        raise UserError(f"{p}: not UTF-8 text, so not a TOML config file") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{p}: not valid TOML: {e}") from None
    except OSError as e:
        raise UserError(f"{p}: cannot read ({e.strerror or e})") from None
    unknown = sorted(set(data) - set(SECTIONS.values()) - set(OTHER_TABLES))
    if unknown:
        raise UserError(
            f"{p}: unknown table(s) {', '.join(unknown)}; use [model], [train], [decode]"
            " (and [recipe] for a recipe)"
        )
    tables = TomlTables()
    tables.path = p
    for cls_name, table in SECTIONS.items():
        if table not in data:
            continue
        if not isinstance(data[table], dict):
            raise UserError(f"{p}: {table} must be a table ([{table}]), got {data[table]!r}")
        cls = globals()[cls_name]
        if cls is ModelConfig:  # a file of an older aiayn: d_k = 32 is d_k_override = 32
            data[table] = _renamed(data[table])
        names = {f.name for f in dataclasses.fields(cls)}
        bad = sorted(set(data[table]) - names)
        if bad:
            moved = " (kernels are chosen when a model runs: --kernels)" * bool(
                set(bad) & set(RUN_TIME_FIELDS)
            )
            flags = [f"--{b}" for b in bad if b in RUN_FLAGS]
            if flags:  # how to run, not what to compute: a flag of the command, never a setting
                moved += f" ({', '.join(flags)}: how to run, a flag of the command)"
            raise UserError(f"{p}: unknown setting(s) in [{table}]: {', '.join(bad)}{moved}")
        hints = typing.get_type_hints(cls)
        checked = {}
        for name, value in data[table].items():
            try:
                checked[name] = _toml_value(hints[name], value)
            except ValueError as e:
                raise UserError(f"{p}: [{table}] {name}: {e}, got {value!r}") from None
        tables[table] = checked
    return tables


def merge_config(
    cls: type,
    base: Any = None,
    toml: Mapping[str, Any] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Any:
    """``cls`` from base (a preset; default ``cls()``) < its table of ``toml`` < ``values``.

    ``toml`` is what ``load_toml`` returned; ``values`` are single settings (the CLI's flags).
    A value the config refuses is a UserError naming the field, and the TOML file when the
    TOML table alone (on top of the base) is refused.
    """
    base = base if base is not None else cls()
    from_toml: dict[str, Any] = dict((toml or {}).get(SECTIONS.get(cls.__name__, ""), {}))
    names = {f.name for f in dataclasses.fields(cls)}
    for what, given in (("", from_toml), (" given", values or {})):
        bad = sorted(set(given) - names)
        if bad:
            section = SECTIONS.get(cls.__name__)
            raise UserError(f"unknown {section} setting(s){what}: {', '.join(bad)}")
    where = getattr(toml, "path", None)
    try:
        base = dataclasses.replace(base, **from_toml)
    except (ValueError, TypeError) as e:
        raise UserError(f"{where}: {e}" if where else str(e)) from None
    try:
        return dataclasses.replace(base, **dict(values or {}))
    except (ValueError, TypeError) as e:
        raise UserError(str(e)) from None
