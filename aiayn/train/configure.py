"""Before a run trains: its settings merged, its saved config read, and what must agree.

``resolve_configs`` merges what a run asks for (``Settings``), in increasing precedence: the
preset (a row of Table 3, ``base``, ``big`` or ``tiny``), the schedule preset, a TOML file
(``[model]``, ``[train]``) and single values; the vocabulary size is the data's tokenizer's. A
resumed run starts from its RUN/config.json instead of the presets. ``check_run`` holds what
``train`` refuses before it builds anything: a run directory that is a file, a vocabulary
other than the tokenizer's and, when resuming, a missing run or config.json, another
architecture than the run's, another tokenizer than its checkpoints' and a trainer.pt that is
missing or not aiayn's. ``load_train_data`` opens a prepared data directory (resuming without
one: the directory the run's config.json names).

``aiayn train`` is argument parsing around these functions and ``train``, so a Python caller of
``train`` meets the same refusals: each is one line (a UserError) naming the file or value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiayn.config import (
    ModelConfig,
    TrainConfig,
    from_dict,
    load_toml,
    merge_config,
    model_preset,
    train_preset,
)
from aiayn.errors import UserError
from aiayn.run_dir import CONFIG_FILE, MODEL_FILE, latest_checkpoint
from aiayn.train.batches import TrainData
from aiayn.train.checkpoints import check_trainer_state
from aiayn.train.schedule import schedule_preset


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """RUN/config.json: the configs a run was started (or last resumed) with, and its data."""

    model: ModelConfig
    train: TrainConfig
    data: str | None = None  # the prepared data directory, when the data came from one


def read_run_config(run_dir: str | Path) -> RunConfig:
    """RUN/config.json; a missing, unreadable or foreign one is a UserError naming it."""
    run = Path(run_dir)
    path = run / CONFIG_FILE
    if not path.is_file():
        raise UserError(f"{run}: no config.json; is this a run directory of aiayn train?")
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:  # UnicodeDecodeError included
        raise UserError(f"{path}: not valid JSON ({e})") from None
    try:
        data = saved.get("data")
        if data is not None and not isinstance(data, str):
            raise ValueError(f"data: must be a directory name, got {data!r}")
        model = from_dict(ModelConfig, saved["model"])
        train = from_dict(TrainConfig, saved["train"])
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise UserError(f"{path}: not the config of a run ({e})") from None
    return RunConfig(model=model, train=train, data=data)


@dataclass(frozen=True, kw_only=True)
class Settings:
    """What a run asks for, before ``resolve_configs`` merges it (None or empty: not asked)."""

    preset: str | None = None  # a key of aiayn.config.PRESETS (default "base")
    schedule: str | None = None  # a key of aiayn.train.SCHEDULES (default "paper")
    config_file: str | Path | None = None  # TOML with [model] and [train] tables
    model: Mapping[str, Any] = field(default_factory=dict)  # ModelConfig fields to set
    train: Mapping[str, Any] = field(default_factory=dict)  # TrainConfig fields to set


def resolve_configs(
    settings: Settings, vocab_size: int, run_dir: str | Path | None = None, resume: bool = False
) -> tuple[ModelConfig, TrainConfig]:
    """The run's configs: preset < schedule < TOML < values, or RUN/config.json when resuming.

    Resuming keeps the run's config: a preset or a schedule is refused, and single values (a
    TOML file's or ``settings``'s) replace the stored ones; ``check_run`` (which ``train``
    calls) then refuses another architecture. ``vocab_size`` is the data's tokenizer's, and a
    TOML file that says otherwise is refused.
    """
    toml = load_toml(settings.config_file)
    if resume:
        if settings.preset is not None or settings.schedule is not None:
            raise UserError("--resume keeps the run's config; change single settings with flags")
        if run_dir is None:
            raise ValueError("resolve_configs: resuming needs the run directory")
        saved = read_run_config(run_dir)
        base_model, base_train = saved.model, saved.train
    else:
        preset = settings.preset or "base"
        try:
            base_model = model_preset(preset, vocab_size=vocab_size)
            base_train = schedule_preset(settings.schedule or "paper", train_preset(preset))
        except ValueError as e:
            raise UserError(str(e)) from None
    given = toml.get("model", {}).get("vocab_size", vocab_size)
    if given != vocab_size:
        raise UserError(
            f"{settings.config_file}: vocab_size {given} differs from the data's "
            f"tokenizer ({vocab_size})"
        )
    model_cfg = merge_config(ModelConfig, base_model, toml, settings.model)
    train_cfg = merge_config(TrainConfig, base_train, toml, settings.train)
    return model_cfg, train_cfg


def load_train_data(
    data_dir: str | Path | None, run_dir: str | Path | None = None, resume: bool = False
) -> TrainData:
    """A prepared data directory (``aiayn prepare``) as TrainData, its tokenizer included.

    Resuming without one, the directory that RUN/config.json names. The validation split and
    its texts (for ``--valid-bleu``, with their language for the BLEU tokenizer) come along
    when it has pairs; an empty training split is refused.
    """
    from aiayn.data.store import load_prepared

    if data_dir is None:
        if not resume or run_dir is None:
            raise UserError("--data DIR is required (a directory written by aiayn prepare)")
        data_dir = read_run_config(run_dir).data
        if not data_dir:
            raise UserError(f"{run_dir}: config.json names no data directory; pass --data")
    prepared = load_prepared(data_dir)
    splits = prepared.manifest.get("splits", {})
    valid = prepared.split("valid") if splits.get("valid", {}).get("pairs") else None
    if not splits.get("train", {}).get("pairs"):
        raise UserError(f"{data_dir}: the train split is empty")
    texts = prepared.texts("valid") if valid is not None else None
    source = str(Path(data_dir).resolve())  # config.json names it for a resume without data
    return TrainData(
        prepared.split("train"),
        valid,
        prepared.tokenizer,
        source,
        valid_texts=texts,
        tgt_lang=prepared.tgt_lang,
    )


def check_run_dir(run_dir: str | Path, resume: bool) -> None:
    """The run directory: not a file; when resuming, there."""
    run = Path(run_dir)
    if resume and not run.is_dir():
        raise UserError(f"{run}: --resume given but there is no such run directory")
    if run.exists() and not run.is_dir():
        raise UserError(f"--run {run}: exists and is not a directory")


def check_run(run_dir: str | Path, model_cfg: ModelConfig, tokenizer: Any, resume: bool) -> None:
    """What ``train`` refuses before it builds anything (each a UserError naming file or value).

    The run directory (``check_run_dir``); the vocabulary, which must be the tokenizer's when
    the tokenizer says its size; and, when resuming, RUN/config.json (readable, with the
    architecture of ``model_cfg``), the latest checkpoint's tokenizer (the data's) and its
    trainer.pt (``check_trainer_state``). A run without a complete checkpoint is refused when
    it is locked (``Session.start``), and so is a new run into one that has checkpoints.
    """
    from aiayn.weights import check_same_architecture

    run = Path(run_dir)
    check_run_dir(run, resume)
    if resume:
        saved = read_run_config(run)
        check_same_architecture(
            model_cfg, saved.model, f"{run / CONFIG_FILE} vs the settings given"
        )
    size = getattr(tokenizer, "vocab_size", None)  # a tokenizer of aiayn.data says its size
    if size is not None and model_cfg.vocab_size != size:
        if resume:
            raise UserError(
                f"{run}: the run's vocabulary has {model_cfg.vocab_size} tokens, the data's "
                f"tokenizer {size}: use the data the run was trained on"
            )
        raise UserError(
            f"vocab_size: {model_cfg.vocab_size}, but the data's tokenizer has {size} tokens "
            "(the vocabulary size is the tokenizer's)"
        )
    latest = latest_checkpoint(run) if resume else None
    if latest is not None:
        check_tokenizer(latest, tokenizer)
        check_trainer_state(latest)


def check_tokenizer(ckpt_dir: str | Path, tokenizer: Any) -> None:
    """The data's tokenizer must be the one a checkpoint was trained with (when it names one)."""
    from aiayn import storage
    from aiayn.weights import read_metadata

    ckpt_dir = Path(ckpt_dir)
    stored = read_metadata(ckpt_dir / MODEL_FILE).get("tokenizer")
    if stored is None or (tokenizer is not None and stored == tokenizer.to_str()):
        return
    if (ckpt_dir / storage.MANIFEST).is_file():  # a damaged file is named as such, not as this
        storage.check_file(ckpt_dir, MODEL_FILE, storage.read_manifest(ckpt_dir))
    if tokenizer is None:
        raise UserError(f"{ckpt_dir}: trained with a tokenizer, and the data given has none")
    raise UserError(f"{ckpt_dir}: trained with another tokenizer than that of the --data given")
