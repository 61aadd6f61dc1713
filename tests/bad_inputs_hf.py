"""The bad-input table's cases of the Hugging Face and engine doors (issue 53).

``aiayn import-hf`` on a damaged Marian directory (config.json, the weights, the tokenizer
files: ``aiayn.export.marian_dir``), ``aiayn export``, and ``aiayn translate/evaluate --engine
ctranslate2|onnx`` on a damaged export directory (``aiayn.export.read_manifest``). Each is
refused in one line naming the file and field; see tests/bad_inputs.py for ``Case``.

The valid directories the cases damage are built once per world, lazily, beside the world's
files: a small Marian directory (2 encoder layers, 1 decoder layer, d_model 8, a SentencePiece
model trained on a few phrases), an aiayn model imported from it, and the world's model exported
to CTranslate2 and ONNX. A case copies one into its own directory and breaks one thing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bad_inputs import Case, _evil_zip, _pickled, _truncate

Setup = Callable[[Path, dict[str, str]], None]
DROP = object()  # a config value that removes the key
HAS_HF = all(importlib.util.find_spec(m) for m in ("transformers", "sentencepiece"))
HAS_CT2 = importlib.util.find_spec("ctranslate2") is not None
HAS_ORT = importlib.util.find_spec("onnxruntime") is not None
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()  # noqa: SIM905


# The valid directories, built once per world --------------------------------------------------


def _root(world: dict[str, str]) -> Path:
    return Path(world["empty"]).parent


def _built(path: Path, build: Callable[[Path], None]) -> Path:
    """path, built by build(tmp) beside it and renamed, the first time it is asked for."""
    if not path.exists():
        tmp = path.with_name(path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        quiet = io.StringIO()
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            build(tmp)
        tmp.rename(path)
    return path


def _spm_model(lines: list[str], size: int) -> bytes:
    import sentencepiece as spm

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=out, vocab_size=size, minloglevel=2
    )
    return out.getvalue()


def _build_marian(d: Path) -> None:
    """An OPUS-MT-like directory: vocab.json (EOS 0, UNK 1, PAD last), source.spm, target.spm,
    config.json and model.safetensors of a random MarianMTModel."""
    import sentencepiece as spm
    import torch
    import transformers as tf

    d.mkdir(parents=True)
    lines = [f"one two three {w}" for w in WORDS] * 5
    (d / "source.spm").write_bytes(_spm_model(lines, 26))
    (d / "target.spm").write_bytes(_spm_model(lines[::-1], 26))
    sp = spm.SentencePieceProcessor(model_proto=(d / "source.spm").read_bytes())
    pieces = ["</s>", "<unk>", *(sp.id_to_piece(i) for i in range(sp.get_piece_size()))]
    pieces = [p for p in dict.fromkeys(pieces) if p != "<s>"] + ["<pad>"]
    (d / "vocab.json").write_text(json.dumps({p: i for i, p in enumerate(pieces)}))
    pad = len(pieces) - 1
    kw = {
        "vocab_size": len(pieces), "d_model": 8, "encoder_layers": 2, "decoder_layers": 1,
        "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 12,
        "decoder_ffn_dim": 12, "activation_function": "swish", "scale_embedding": True,
        "pad_token_id": pad, "eos_token_id": 0, "decoder_start_token_id": pad,
        "forced_eos_token_id": 0, "max_position_embeddings": 64,
    }  # fmt: skip
    torch.manual_seed(0)
    tf.logging.set_verbosity_error()
    tf.utils.logging.disable_progress_bar()
    tf.MarianMTModel(tf.MarianConfig(**kw)).save_pretrained(str(d))


def marian_dir(world: dict[str, str]) -> Path:
    """The world's valid Marian directory (import-hf accepts it)."""
    return _built(_root(world) / "hf-marian", _build_marian)


def imported_model(world: dict[str, str]) -> Path:
    """The world's Marian directory imported by aiayn import-hf (a SentencePiece pair, swish)."""

    def build(d: Path) -> None:
        from aiayn.cli import main

        d.mkdir()
        assert main(["import-hf", "--model", str(marian_dir(world)), "--out", str(d / "m.st")]) == 0

    return _built(_root(world) / "hf-imported", build) / "m.st"


def export_dir(world: dict[str, str], fmt: str) -> Path:
    """The world's model exported by aiayn export to fmt (a 64-row position table)."""

    def build(d: Path) -> None:
        from aiayn.cli import main

        argv = ["export", "--checkpoint", world["model"], "--format", fmt, "--out", str(d)]
        assert main([*argv, "--max-positions", "64"]) == 0

    return _built(_root(world) / f"export-{fmt}", build)


# Setups: a copy of a valid directory with one thing broken -------------------------------------


def _json_edit(f: Path, changes: dict[str, Any]) -> None:
    data = json.loads(f.read_text(encoding="utf-8"))
    for key, value in changes.items():
        *path, last = key.split(".")
        node = data
        for part in path:
            node = node[part]
        if value is DROP:
            node.pop(last, None)
        else:
            node[last] = value
    f.write_text(json.dumps(data), encoding="utf-8")


def _marian(*changes: Callable[[Path], None]) -> Setup:
    def setup(tmp: Path, world: dict[str, str]) -> None:
        d = tmp / "marian"
        shutil.copytree(marian_dir(world), d)
        for change in changes:
            change(d)

    return setup


def _export(fmt: str, *changes: Callable[[Path], None]) -> Setup:
    def setup(tmp: Path, world: dict[str, str]) -> None:
        d = tmp / "exp"
        shutil.copytree(export_dir(world, fmt), d)
        for change in changes:
            change(d)

    return setup


def config(**changes: Any) -> Callable[[Path], None]:
    return lambda d: _json_edit(d / "config.json", changes)


def manifest(changes: dict[str, Any]) -> Callable[[Path], None]:
    return lambda d: _json_edit(d / "aiayn_export.json", changes)


def write(name: str, data: bytes | str) -> Callable[[Path], None]:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return lambda d: (d / name).write_bytes(raw)


def remove(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).unlink()


def as_dir(name: str) -> Callable[[Path], None]:
    def change(d: Path) -> None:
        (d / name).unlink()
        (d / name).mkdir()

    return change


def truncate(name: str) -> Callable[[Path], None]:
    return lambda d: _truncate(d / name)


def weights_as(write_bin: Callable[[Path], None]) -> Callable[[Path], None]:
    """pytorch_model.bin written by write_bin in place of model.safetensors."""

    def change(d: Path) -> None:
        (d / "model.safetensors").unlink()
        write_bin(d / "pytorch_model.bin")

    return change


def tensors(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    """model.safetensors rewritten with edit(state) applied."""

    def change(d: Path) -> None:
        from safetensors.torch import load_file, save_file

        state = load_file(str(d / "model.safetensors"))
        edit(state)
        save_file(state, str(d / "model.safetensors"), metadata={"format": "pt"})

    return change


def _int_embedding(state: dict[str, Any]) -> None:
    state["model.shared.weight"] = state["model.shared.weight"].long()


def _bin_of_the_weights(d: Path) -> None:
    """pytorch_model.bin as torch.save writes it, cut in half."""
    import torch
    from safetensors.torch import load_file

    state = load_file(str(d / "model.safetensors"))
    (d / "model.safetensors").unlink()
    torch.save(state, d / "pytorch_model.bin")
    _truncate(d / "pytorch_model.bin")


def _sharded(index: str) -> Callable[[Path], None]:
    def change(d: Path) -> None:
        (d / "model.safetensors").unlink()
        (d / "model.safetensors.index.json").write_text(index, encoding="utf-8")

    return change


def _checkpoint(**cfg_kw: Any) -> Setup:
    """{tmp}/c.safetensors: a random model with the world's tokenizer and cfg_kw."""

    def setup(tmp: Path, world: dict[str, str]) -> None:
        from aiayn.config import ModelConfig
        from aiayn.data import Tokenizer
        from aiayn.model import Transformer
        from aiayn.weights import save_model

        tok = Tokenizer.load(world["tok"])
        kw = {"d_model": 16, "n_heads": 2, "d_ff": 16, "n_layers": 1, **cfg_kw}
        cfg = ModelConfig(vocab_size=tok.vocab_size, **kw)
        save_model(tmp / "c.safetensors", Transformer(cfg), metadata={"tokenizer": tok.to_str()})

    return setup


def _imported(tmp: Path, world: dict[str, str]) -> None:
    shutil.copy(imported_model(world), tmp / "imp.safetensors")


def _other_tokenizer(tmp: Path, world: dict[str, str]) -> None:
    from aiayn.data import Tokenizer

    Tokenizer.train(["a b c d e f"], vocab_size=260).save(tmp / "t.json")  # 260 tokens


# The cases ------------------------------------------------------------------------------------

IMPORT = ("import-hf", "--model", "{tmp}/marian", "--out", "{tmp}/m.safetensors")
IMPORT_DIR = ("import-hf", "--model", "{tmp}/marian", "--out", "{tmp}/new")  # a directory made
CFG = "{tmp}/marian/config.json"
ST = "{tmp}/marian/model.safetensors"


def _import_cases() -> list[Case]:
    def c(name: str, expect: str, *changes: Callable[[Path], None], argv=IMPORT) -> Case:
        return Case(f"import-hf-{name}", argv, expect, setup=_marian(*changes))

    sizes = [
        (field, value, f"{CFG}: {field}: must be an integer >= 1, got {value!r}")
        for field, value in (
            ("d_model", "sixteen"),
            ("encoder_layers", "two"),
            ("d_model", 0),
            ("d_model", -8),
            ("d_model", True),
            ("d_model", None),
            ("d_model", 8.5),
            ("encoder_attention_heads", 0),
            ("encoder_ffn_dim", -12),
            ("decoder_layers", []),
            ("vocab_size", "many"),
        )
    ]
    return [
        # config.json: the file itself
        c("config-list", f"{CFG}: must be a JSON object, got list", write("config.json", "[1]")),
        c("config-string", f"{CFG}: must be a JSON object, got str", write("config.json", '"x"')),
        c("config-not-json", f"{CFG}: not valid JSON", write("config.json", "{oops")),
        c("config-empty", f"{CFG}: not valid JSON", write("config.json", b"")),
        c("config-binary", f"{CFG}: not UTF-8 text", write("config.json", bytes(range(256)))),
        c("config-dir", f"{CFG}: is a directory", as_dir("config.json")),
        c("config-missing", "marian: no config.json", remove("config.json")),
        # config.json: each field aiayn reads, of the wrong type or out of range
        *(
            c(f"config-{field}={value}", expect, config(**{field: value}))
            for field, value, expect in sizes
        ),
        c(
            "config-decoder_layers-missing",
            f"{CFG}: decoder_layers: missing",
            config(decoder_layers=DROP),
        ),
        c(
            "config-pad_token_id-missing",
            f"{CFG}: pad_token_id: missing",
            config(pad_token_id=DROP),
        ),
        c(
            "config-pad_token_id=-1",
            f"{CFG}: pad_token_id: must be an integer >= 0",
            config(pad_token_id=-1),
        ),
        c(
            "config-pad_token_id-beyond",
            "pad_token_id=99 is not an id of the 26-token",
            config(pad_token_id=99),
        ),
        c("config-eos_token_id=x", f"{CFG}: eos_token_id: must be an id", config(eos_token_id="x")),
        c(
            "config-decoder_start_token_id-beyond",
            "decoder_start_token_id=500 is not an id",
            config(decoder_start_token_id=500),
        ),
        c(
            "config-dropout=1.5",
            f"{CFG}: dropout: must be a dropout rate in [0, 1)",
            config(dropout=1.5),
        ),
        c(
            "config-attention_dropout=x",
            f"{CFG}: attention_dropout: must be a finite number",
            config(attention_dropout="x"),
        ),
        c(
            "config-scale_embedding=yes",
            f"{CFG}: scale_embedding: must be true or false",
            config(scale_embedding="yes"),
        ),
        c(
            "config-max_position_embeddings=many",
            f"{CFG}: max_position_embeddings: must be an integer",
            config(max_position_embeddings="many"),
        ),
        c(
            "config-activation=gelu",
            "activation_function='gelu'",
            config(activation_function="gelu"),
        ),
        c("config-model_type=bert", "model_type='bert'", config(model_type="bert")),
        c(
            "config-d_model-heads",
            "d_model=10: must be even and divisible by the 4 heads",
            config(d_model=10, encoder_attention_heads=4, decoder_attention_heads=4),
        ),
        c("config-decoder_vocab_size", "decoder_vocab_size=30", config(decoder_vocab_size=30)),
        # config.json against the weights (their headers only)
        c(
            "config-vocab_size-vs-weights",
            f"{ST}: model.shared.weight is 26 x 8, but config.json's "
            "vocab_size x d_model is 30 x 8",
            config(vocab_size=30, decoder_vocab_size=30),
        ),
        c(
            "config-d_model-vs-weights",
            "but config.json's d_model x d_model is 16 x 16",
            config(d_model=16),
        ),
        c(
            "config-ffn-vs-weights",
            "fc1.weight is 12 x 8, but config.json's encoder_ffn_dim x d_model is 16 x 8",
            config(encoder_ffn_dim=16, decoder_ffn_dim=16),
        ),
        c(
            "config-more-layers",
            f"{ST}: no tensor encoder.layers.2.self_attn.q_proj.weight, though "
            "config.json's encoder_layers is 3",
            config(encoder_layers=3),
        ),
        c(
            "config-fewer-layers",
            f"{ST}: model.encoder.layers.1.fc1.bias is beyond config.json's encoder_layers=1",
            config(encoder_layers=1),
        ),
        # the weights
        c(
            "weights-truncated",
            f"{ST}: not a readable safetensors file",
            truncate("model.safetensors"),
        ),
        c(
            "weights-empty",
            f"{ST}: not a readable safetensors file",
            write("model.safetensors", b""),
        ),
        c(
            "weights-garbage",
            f"{ST}: not a readable safetensors file",
            write("model.safetensors", bytes(range(256)) * 4),
        ),
        c("weights-dir", f"{ST}: is a directory", as_dir("model.safetensors")),
        c(
            "weights-missing",
            "marian: no weights (model.safetensors or pytorch_model.bin)",
            remove("model.safetensors"),
        ),
        c(
            "weights-int",
            f"{ST}: model.shared.weight is of type I64, not floating point",
            tensors(_int_embedding),
        ),
        c(
            "weights-no-layer",
            f"{ST}: no tensor decoder.layers.0.fc2.bias",
            tensors(lambda s: s.pop("model.decoder.layers.0.fc2.bias")),
        ),
        c(
            "weights-no-embedding",
            f"{ST}: no embedding",
            tensors(lambda s: s.pop("model.shared.weight")),
        ),
        c(
            "weights-bin-pickled",
            "pytorch_model.bin: not a torch.save archive",
            weights_as(_pickled),
        ),
        c(
            "weights-bin-evil-zip",
            "pytorch_model.bin: not a weights file aiayn can read safely",
            weights_as(_evil_zip),
        ),
        c(
            "weights-bin-truncated",
            "pytorch_model.bin: not a torch.save archive",
            _bin_of_the_weights,
        ),
        c(
            "weights-index-list",
            "model.safetensors.index.json: weight_map must map",
            _sharded("[1, 2]"),
        ),
        c(
            "weights-index-shard-missing",
            "model-00001.safetensors: missing (a shard",
            _sharded('{"weight_map": {"final_logits_bias": "model-00001.safetensors"}}'),
        ),
        c(
            "weights-index-escapes",
            "weight_map must map names to shard files",
            _sharded('{"weight_map": {"final_logits_bias": "../../../etc/passwd"}}'),
        ),
        # the tokenizer files
        c("spm-corrupt", "source.spm: not a SentencePiece model", write("source.spm", b"garbage")),
        c("spm-truncated", "source.spm: not a SentencePiece model", truncate("source.spm")),
        c(
            "spm-empty",
            "source.spm: empty file, not a SentencePiece model",
            write("source.spm", b""),
        ),
        c("spm-empty-to-dir", "source.spm: empty file", write("source.spm", b""), argv=IMPORT_DIR),
        c("spm-dir", "source.spm: is a directory", as_dir("source.spm")),
        c("spm-missing", "source.spm: missing", remove("source.spm")),
        c("target-spm-empty", "target.spm: empty file", write("target.spm", b"")),
        c("vocab-not-json", "vocab.json: not valid JSON", write("vocab.json", "{oops")),
        c(
            "vocab-list",
            "vocab.json: must be a JSON object of piece: id, got list",
            write("vocab.json", "[1, 2]"),
        ),
        c(
            "vocab-latin1",
            "vocab.json: not UTF-8",
            write("vocab.json", '{"\xe9": 0}'.encode("latin-1")),
        ),
        c(
            "vocab-id-string",
            "vocab.json: '</s>': id '0' is not an id",
            write("vocab.json", '{"</s>": "0"}'),
        ),
        c(
            "vocab-id-beyond",
            "vocab.json: 'x': id 26 is not an id of the 26-token vocabulary",
            write("vocab.json", '{"</s>": 0, "x": 26}'),
        ),
        c(
            "vocab-id-twice",
            "vocab.json: '</s>' and 'x' have the same id 0",
            write("vocab.json", '{"</s>": 0, "x": 0}'),
        ),
        c("vocab-missing", "vocab.json: missing", remove("vocab.json")),
        c("vocab-two", "separate source and target vocabularies", write("target_vocab.json", "{}")),
        c("no-tokenizer", "marian: no tokenizer", remove("vocab.json"), remove("source.spm")),
        c(
            "tokenizer-json-list",
            "tokenizer.json: not a tokenizer JSON with a vocabulary",
            remove("vocab.json"),
            remove("source.spm"),
            write("tokenizer.json", "[]"),
        ),
        # the flags
        Case(
            "import-hf-model-missing",
            ("import-hf", "--model", "{tmp}/none", "--out", "{tmp}/m.safetensors"),
            "none: no such directory",
        ),
        Case(
            "import-hf-model-file",
            ("import-hf", "--model", "{text}", "--out", "{tmp}/m.safetensors"),
            "{text}: not a directory",
        ),
        Case(
            "import-hf-model-empty-dir",
            ("import-hf", "--model", "{dir}", "--out", "{tmp}/m.safetensors"),
            "{dir}: no config.json",
        ),
        Case(
            "import-hf-no-model",
            ("import-hf", "--out", "{tmp}/m.safetensors"),
            "the following arguments are required: --model",
        ),
        Case(
            "import-hf-out-exists",
            ("import-hf", "--model", "{dir}", "--out", "{text}"),
            "{text}: exists; pass --force",
        ),
    ]


EXPORT = ("export", "--checkpoint", "{model}", "--out", "{tmp}/a/b/exp")


def _export_cases() -> list[Case]:
    ct2, onnx = (*EXPORT, "--format", "ctranslate2"), (*EXPORT, "--format", "onnx")
    hf = ("export", "--format", "hf", "--out", "{tmp}/a/b/exp")
    cases = [
        Case("export-format-bogus", (*EXPORT, "--format", "tflite"), "--format: invalid choice"),
        Case("export-no-format", EXPORT, "the following arguments are required: --format"),
        Case("export-max-positions=1", (*ct2, "--max-positions", "1"), "--max-positions: must"),
        Case("export-max-positions=-5", (*onnx, "--max-positions=-5"), "--max-positions: must"),
        Case("export-max-positions=x", (*ct2, "--max-positions", "x"), "--max-positions"),
        Case("export-quantization-bogus", (*ct2, "--quantization", "int3"), "--quantization"),
        Case(
            "export-quantization-onnx",
            (*onnx, "--quantization", "int8"),
            "--quantization applies to --format ctranslate2 only",
        ),
        Case(
            "export-out-file",
            (*ct2[:-4], "--out", "{text}", "--format", "onnx"),
            "{text}: exists and is not a directory",
        ),
        Case(
            "export-out-not-empty",
            (*ct2[:-4], "--out", "{run}", "--format", "onnx"),
            "{run}: directory is not empty",
        ),
        Case(
            "export-checkpoint-missing",
            ("export", "--checkpoint", "{tmp}/none", "--format", "onnx", "--out", "{tmp}/a/b/exp"),
            "none: checkpoint not found",
        ),
        Case(
            "export-checkpoint-text",
            ("export", "--checkpoint", "{text}", "--format", "onnx", "--out", "{tmp}/a/b/exp"),
            "{text}: not a safetensors checkpoint",
        ),
        Case(
            "export-checkpoint-binary",
            (
                "export",
                "--checkpoint",
                "{binary}",
                "--format",
                "ctranslate2",
                "--out",
                "{tmp}/a/b/exp",
            ),
            "{binary}: not a safetensors",
        ),
        Case(
            "export-checkpoint-mismatch",
            ("export", "--checkpoint", "{mismatch}", "--format", "onnx", "--out", "{tmp}/a/b/exp"),
            "{mismatch}: weights do not match",
        ),
        Case(
            "export-checkpoint-dir",
            ("export", "--checkpoint", "{dir}", "--format", "onnx", "--out", "{tmp}/a/b/exp"),
            "{dir}: no model.safetensors",
        ),
        Case("export-tokenizer-text", (*ct2, "--tokenizer", "{text}"), "{text}"),
        Case(
            "export-tokenizer-other",
            (*ct2, "--tokenizer", "{tmp}/t.json"),
            "tokens",
            setup=_other_tokenizer,
        ),
        Case(
            "export-ct2-dv",
            (
                "export",
                "--checkpoint",
                "{tmp}/c.safetensors",
                "--format",
                "ctranslate2",
                "--out",
                "{tmp}/a/b/exp",
            ),
            "d_v=8 != d_k=4",
            setup=_checkpoint(d_k_override=4, d_v_override=8),
        ),
        Case(
            "export-hf-max-positions",
            (
                "export",
                "--checkpoint",
                "{model}",
                "--format",
                "hf",
                "--out",
                "{tmp}/a/b/exp",
                "--max-positions",
                "8",
            ),
            "--quantization and --max-positions apply to ctranslate2 and onnx only",
        ),
    ]
    if HAS_HF:
        imported = "{tmp}/imp.safetensors"
        cases += [
            Case(
                "export-hf-of-import",
                (*hf, "--checkpoint", imported),
                "the checkpoint's tokenizer is a SentencePiece pair",
                setup=_imported,
            ),
            Case(
                "export-ct2-of-import",
                (*hf[:2], "ctranslate2", *hf[3:], "--checkpoint", imported),
                "activation='silu'",
                setup=_imported,
            ),
        ]
    return cases


def _engine_cases(fmt: str) -> list[Case]:
    flags = ("--engine", fmt, "--checkpoint", "{tmp}/exp", "--max-len-b", "2")
    flags += ("--length-penalty", "fairseq")  # CTranslate2 has no GNMT penalty
    run = ("translate", *flags)
    score = ("evaluate", *flags, "--src", "{text}", "--ref", "{text}")
    m = "{tmp}/exp/aiayn_export.json"

    def c(name: str, expect: str, *changes: Callable[[Path], None], argv=run) -> Case:
        return Case(f"{argv[0]}-{fmt}-{name}", argv, expect, setup=_export(fmt, *changes))

    other = "onnx" if fmt == "ctranslate2" else "ctranslate2"
    cases = [
        # the manifest: the file
        c(
            "manifest-list",
            f"{m}: must be a JSON object, got list",
            write("aiayn_export.json", "[1]"),
        ),
        c(
            "manifest-list-evaluate",
            f"{m}: must be a JSON object, got list",
            write("aiayn_export.json", "[]"),
            argv=score,
        ),
        c("manifest-not-json", f"{m}: not valid JSON", write("aiayn_export.json", "{")),
        c("manifest-empty", f"{m}: not valid JSON", write("aiayn_export.json", b"")),
        c("manifest-binary", f"{m}: not UTF-8", write("aiayn_export.json", bytes(range(256)))),
        c("manifest-dir", f"{m}: is a directory", as_dir("aiayn_export.json")),
        c("manifest-missing", "exp: not an aiayn export directory", remove("aiayn_export.json")),
        # the manifest: each field the engines read
        c("format-missing", f"{m}: format: unknown export format None", manifest({"format": DROP})),
        c(
            "format-bogus",
            f"{m}: format: unknown export format 'tflite'",
            manifest({"format": "tflite"}),
        ),
        c("format-hf", f"{m}: a Hugging Face export", manifest({"format": "hf"})),
        c("format-other", f"a {other} export, not {fmt}", manifest({"format": other})),
        c("model-config-missing", f"{m}: model_config: missing", manifest({"model_config": DROP})),
        c(
            "model-config-missing-evaluate",
            f"{m}: model_config: missing",
            manifest({"model_config": DROP}),
            argv=score,
        ),
        c(
            "model-config-list",
            f"{m}: model_config must be an object",
            manifest({"model_config": [1]}),
        ),
        c(
            "model-config-d_model=x",
            f"{m}: model_config: d_model: must be an integer",
            manifest({"model_config.d_model": "x"}),
        ),
        c(
            "model-config-vocab_size=true",
            f"{m}: model_config: vocab_size: must be an integer",
            manifest({"model_config.vocab_size": True}),
        ),
        c(
            "model-config-vocab_size=0",
            f"{m}: model_config: vocab_size: must be >= 1",
            manifest({"model_config.vocab_size": 0}),
        ),
        c(
            "model-config-dropout=null",
            f"{m}: model_config: dropout: must be a finite number",
            manifest({"model_config.dropout": None}),
        ),
        c(
            "model-config-positions=bogus",
            f"{m}: model_config: positions: must be one of",
            manifest({"model_config.positions": "bogus"}),
        ),
        c(
            "model-config-unknown",
            f"{m}: model_config: ModelConfig: unknown field(s) colour",
            manifest({"model_config.colour": "red"}),
        ),
        c(
            "model-config-vocab-vs-tokenizer",
            "tokens but the exported model's vocabulary has 299",
            manifest({"model_config.vocab_size": 299}),
        ),
        c(
            "max-positions-missing",
            f"{m}: max_positions: missing",
            manifest({"max_positions": DROP}),
        ),
        c(
            "max-positions-missing-evaluate",
            f"{m}: max_positions: missing",
            manifest({"max_positions": DROP}),
            argv=score,
        ),
        c(
            "max-positions=many",
            f"{m}: max_positions: must be an integer >= 2, got 'many'",
            manifest({"max_positions": "many"}),
        ),
        c(
            "max-positions=1",
            f"{m}: max_positions: must be an integer >= 2, got 1",
            manifest({"max_positions": 1}),
        ),
        c(
            "max-positions=true",
            f"{m}: max_positions: must be an integer >= 2, got True",
            manifest({"max_positions": True}),
        ),
        c(
            "max-positions=64.5",
            f"{m}: max_positions: must be an integer >= 2, got 64.5",
            manifest({"max_positions": 64.5}),
        ),
        c(
            "max-positions-over-learned",
            f"{m}: max_positions: 64 rows, more than the 32",
            manifest({"model_config.positions": "learned", "model_config.max_positions": 32}),
        ),
        # the other files of the export
        c(
            "tokenizer-missing",
            "exp/tokenizer.json: tokenizer file not found",
            remove("tokenizer.json"),
        ),
        c("tokenizer-garbage", "exp/tokenizer.json", write("tokenizer.json", "{oops")),
        c(
            "tokenizer-other",
            "the tokenizer has 260 tokens but the exported model's vocabulary has",
            lambda d: _other_tokenizer(d, {}),
            argv=(*run, "--tokenizer", "{tmp}/exp/t.json"),
        ),
        Case(
            f"translate-{fmt}-checkpoint-file",
            ("translate", "--engine", fmt, "--checkpoint", "{text}"),
            "not an aiayn export directory",
        ),
        Case(
            f"translate-{fmt}-checkpoint-dir",
            ("translate", "--engine", fmt, "--checkpoint", "{dir}"),
            "{dir}: not an aiayn export directory",
        ),
    ]
    if fmt == "ctranslate2":
        cases += [
            c(
                "model-bin-garbage",
                "exp: CTranslate2 cannot load this model",
                write("model.bin", bytes(range(256)) * 4),
            ),
            c(
                "model-bin-truncated",
                "exp: CTranslate2 cannot load this model",
                truncate("model.bin"),
            ),
            c("model-bin-missing", "exp: CTranslate2 cannot load this model", remove("model.bin")),
            c(
                "config-json-garbage",
                "exp: CTranslate2 cannot load this model",
                write("config.json", "{oops"),
            ),
            c(
                "vocabulary-other",
                "shared_vocabulary.json: the vocabulary is not the tokenizer's",
                write("shared_vocabulary.json", '["<blank>", "<s>", "</s>", "<unk>", "x"]'),
            ),
        ]
    else:
        cases += [
            c(
                "encoder-garbage",
                "exp: ONNX Runtime cannot load this export",
                write("encoder.onnx", bytes(range(256)) * 4),
            ),
            c(
                "encoder-truncated",
                "exp: ONNX Runtime cannot load this export",
                truncate("encoder.onnx"),
            ),
            c(
                "decoder-missing",
                "exp: ONNX Runtime cannot load this export",
                remove("decoder_step.onnx"),
            ),
            c(
                "graphs-swapped",
                "decoder_step.onnx: its inputs are not",
                lambda d: shutil.copy(d / "encoder.onnx", d / "decoder_step.onnx"),
            ),
            c(
                "model-config-layers-vs-graph",
                "decoder_step.onnx: its inputs are not",
                manifest({"model_config.n_layers": 2}),
            ),
            c(
                "model-config-heads-vs-graph",
                "decoder_step.onnx: its inputs are not",
                manifest({"model_config.n_heads": 4}),
            ),
        ]
    return cases


CASES: list[Case] = [
    *(_import_cases() if HAS_HF else []),
    *(_export_cases() if HAS_CT2 and HAS_ORT else []),
    *(_engine_cases("ctranslate2") if HAS_CT2 else []),
    *(_engine_cases("onnx") if HAS_ORT else []),
]
