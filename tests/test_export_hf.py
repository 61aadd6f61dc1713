"""Hugging Face Transformers both ways: aiayn -> MarianMT and Marian -> aiayn are equal networks.

No download: the Marian models are built here from small random configs, with a SentencePiece
pair trained on a few hundred number phrases (num2words). Both directions: logits within 1e-5
on padded batches, greedy outputs token-identical over 100+ sentences, beam outputs identical
wherever the two searches take the same steps (aiayn's beam shrinks as hypotheses finish,
Transformers' keeps K live ones; where that changes the pick, Transformers' hypothesis scores
the same under aiayn), and the tokenizers agree. An export without the d_model permutation
must fail the same checks.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
import torch

from aiayn import ModelConfig, Transformer
from aiayn.cli import main
from aiayn.data import EOS, PAD, Tokenizer, collate, synthetic_pairs
from aiayn.data.corpora.simple import numbers_corpus
from aiayn.decode import beam_search, greedy_search, model_step_fn
from aiayn.errors import UserError
from aiayn.evaluate import reference_perplexity
from aiayn.export import hf as hfx
from aiayn.model import sinusoidal_positions, trace
from aiayn.weights import save_model

tf = pytest.importorskip("transformers")
spm = pytest.importorskip("sentencepiece")
tf.logging.set_verbosity_error()
pytestmark = pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses")

TOL = 1e-5  # |logit difference|: float32 rounding of two implementations of one network
M = 12  # the most output tokens, EOS included, in the search comparisons
ALPHA = 0.6
TRAIN_STEPS = 150  # of the Marian model: it learns to translate numbers (a few seconds)
TRAIN_LR = 1e-2


def perturb(params, scale=0.2) -> None:
    """Random non-zero values everywhere (LayerNorm gains and biases too)."""
    with torch.no_grad():
        for p in params:
            p.add_(torch.randn_like(p) * scale)


def first_eos(ids: list[int], eos: int) -> list[int]:
    """The output tokens up to and with the first EOS (Transformers pads after it)."""
    return ids[: ids.index(eos) + 1] if eos in ids else ids


def hf_generate(model, src, pad, eos, start, banned, beam=1, **kw) -> tuple[list, list]:
    """Transformers' outputs (tokens after the start token) and sequence scores."""
    out = model.generate(
        input_ids=src,
        attention_mask=src.ne(pad).long(),
        decoder_start_token_id=start,
        eos_token_id=eos,
        pad_token_id=pad,
        forced_eos_token_id=eos,
        bad_words_ids=[[b] for b in banned],
        num_beams=beam,
        do_sample=False,
        max_new_tokens=M,
        min_length=0,
        length_penalty=ALPHA,
        early_stopping="never",
        output_scores=True,
        return_dict_in_generate=True,
        **kw,
    )
    seqs = [first_eos(s[1:].tolist(), eos) for s in out.sequences]
    scores = out.sequences_scores.tolist() if beam > 1 else [None] * len(seqs)
    return seqs, scores


def pad_batch(rows: list[list[int]], pad: int) -> torch.Tensor:
    S = max(len(r) for r in rows)
    return torch.tensor([r + [pad] * (S - len(r)) for r in rows])  # (B, S)


# aiayn -> Marian ---------------------------------------------------------------------------

V_EXPORT = 40


@pytest.fixture(scope="module")
def ours() -> Transformer:
    """A random aiayn model using every EXTENSION the export maps (EOS made likely)."""
    torch.manual_seed(0)
    cfg = ModelConfig(
        vocab_size=V_EXPORT, d_model=16, n_heads=2, d_ff=32, n_layers=2, n_dec_layers=1,
        dropout=0.0, attn_bias=True, logits_bias=True, activation="silu",
    )  # fmt: skip
    model = Transformer(cfg).eval()
    perturb(model.parameters())
    with torch.no_grad():
        model.embedding[EOS] *= 2.5
    return model


@pytest.fixture(scope="module")
def sources() -> list[list[int]]:
    """120 sources of 1-9 tokens, each ending with EOS."""
    pairs = synthetic_pairs("copy", 120, V_EXPORT, 1, 9, seed=3)
    return [[*s, EOS] for s, _ in pairs]


def test_permutation_maps_the_paper_table_to_marians() -> None:
    """PE[:, pi] is Marian's [sin | cos] table, exactly as Transformers computes it."""
    D = 10
    table = tf.models.marian.modeling_marian.MarianSinusoidalPositionalEmbedding(50, D)
    theirs = table.create_weight()  # (50, D)
    ours = sinusoidal_positions(50, D)  # (50, D): interleaved (3.5)
    assert torch.equal(ours[:, hfx.residual_permutation(D)], theirs)
    assert not torch.allclose(ours, theirs, atol=1e-2)


@pytest.mark.parametrize("cfg_kw", [{}, {"attn_bias": True, "activation": "silu"}])
def test_export_logits_equal_on_padded_batches(cfg_kw) -> None:
    torch.manual_seed(1)
    cfg = ModelConfig(vocab_size=30, d_model=12, n_heads=3, d_ff=20, n_layers=2, **cfg_kw)
    model = Transformer(cfg).eval()
    perturb(model.parameters())
    b = collate([([5, 6, 7, 8], [9, 10]), ([11], [12, 13, 14, 15]), ([], [])])
    hf = hfx.hf_model(cfg, model.state_dict())
    theirs = hf(input_ids=b.src, attention_mask=b.src.ne(PAD), decoder_input_ids=b.tgt_in).logits
    assert (model(b.src, b.tgt_in) - theirs).abs().max() < TOL


def test_export_greedy_identical_and_the_unpermuted_export_fails(ours, sources) -> None:
    """Greedy over 120 sources: token-identical; without pi the logits and outputs differ."""
    src = pad_batch(sources, PAD)
    step = model_step_fn(ours, src)
    mine = [h[0].tokens for h in greedy_search(step, [M] * len(sources))]
    assert len({len(t) for t in mine}) >= 3  # outputs of several lengths, not all cut at M
    for permute, same in ((True, True), (False, False)):
        hf = hfx.hf_model(ours.config, ours.state_dict(), permute=permute)
        theirs, _ = hf_generate(hf, src, PAD, EOS, 1, banned=(PAD, 1))
        assert (theirs == mine) is same
        logits = hf(input_ids=src, attention_mask=src.ne(PAD), decoder_input_ids=src).logits
        assert bool((ours(src, src) - logits).abs().max() < TOL * 10) is same  # logits to 6


def beam_agrees(mine, mine_all, theirs, their_scores, logps) -> int:
    """Number of sentences with the same pick; every other one explained.

    ``logps(i, tokens)`` are the model's log-probabilities of each token. Both score
    sum(log p) / |Y|^alpha with |Y| counting EOS, except at the length limit: Transformers'
    forced EOS counts log p = 0 there, aiayn's the model's log P(EOS). A different pick is
    explained when aiayn's beam shrank (a hypothesis finished before M: Transformers keeps K
    live ones) or a pick was cut at the limit (where the two score the EOS differently).
    """
    same = 0
    for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        lp = logps(i, b)
        forced = len(b) == M  # Transformers' forced EOS: log p = 0
        hf_score = float(sum(lp[:-1] if forced else lp)) / len(b) ** ALPHA
        assert abs(hf_score - their_scores[i]) < 1e-4, i
        if a.tokens == b:
            same += 1
            continue
        shrank = any(len(h.tokens) < M for h in mine_all[i])
        assert shrank or M in (len(a.tokens), len(b)), i
    return same


def test_export_beam_identical_under_the_fairseq_penalty(ours, sources) -> None:
    """Beam 4, |Y|^0.6 on both sides (Transformers' length_penalty counts EOS, as aiayn)."""
    src = pad_batch(sources, PAD)
    K = 4
    mine = [h[0] for h in beam_search(model_step_fn(ours, src), [M] * len(sources), K, ALPHA,
                                      "fairseq")]  # fmt: skip
    mine_all = beam_search(model_step_fn(ours, src), [M] * len(sources), K, ALPHA, "fairseq", K)
    hf = hfx.hf_model(ours.config, ours.state_dict())
    theirs, scores = hf_generate(hf, src, PAD, EOS, 1, banned=(PAD, 1), beam=K)

    @torch.no_grad()
    def logps(i: int, toks: list[int]) -> list[float]:
        logp = ours(src[i : i + 1], torch.tensor([[1, *toks[:-1]]])).log_softmax(-1)[0]  # (T, V)
        return logp.gather(1, torch.tensor(toks)[:, None]).squeeze(1).tolist()

    same = beam_agrees(mine, mine_all, theirs, scores, logps)
    assert same >= len(sources) * 0.8, same


def test_export_import_round_trip_is_exact(tmp_path) -> None:
    """export_hf then import_marian gives back aiayn's weights, bit for bit."""
    tok = Tokenizer.train(["a b c d e f g"], vocab_size=260)
    cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=8, n_heads=2, d_ff=12, n_layers=1,
                      attn_bias=True, logits_bias=True, activation="silu")  # fmt: skip
    model = Transformer(cfg).eval()
    perturb(model.parameters())
    hfx.export_hf(model, tok, tmp_path / "hf")
    back, cfg2, tok2, meta = hfx.import_marian(str(tmp_path / "hf"))
    assert (cfg2.decoder_start, cfg2.vocab_size, cfg2.activation) == ("bos", cfg.vocab_size, "silu")
    for k, v in model.state_dict().items():
        assert torch.equal(back[k], v), k
    assert tok2.encode("a b c") == tok.encode("a b c")
    assert "import-hf" in meta[hfx.ORIGIN_KEY]


def test_export_tokenizer_round_trip(tmp_path) -> None:
    """The fast tokenizer written by the export: aiayn's ids + EOS, and the exact text back."""
    en, de = number_texts(120)
    tok = Tokenizer.train(en + de, vocab_size=300)
    hfx.hf_tokenizer(tok).save_pretrained(str(tmp_path))
    theirs = tf.AutoTokenizer.from_pretrained(str(tmp_path))
    lines = [*en[:100], *de[:5], "Zürich, 猫 😺 and  two  spaces", "", "a <s> in text"]
    for text in lines:
        ids = theirs(text).input_ids
        if "<s>" not in text:  # Transformers reads a literal "<s>" as the special token
            assert ids == [*tok.encode(text), EOS], text
        assert theirs.decode(ids, skip_special_tokens=True) == tok.decode(ids), text
        assert tok.decode(tok.encode(text)) == text
    assert (theirs.pad_token_id, theirs.bos_token_id, theirs.eos_token_id) == (PAD, 1, EOS)


@pytest.mark.parametrize(
    ("kw", "setting"),
    [
        ({"norm_first": True}, "norm_first"),
        ({"positions": "learned"}, "positions"),
        ({"positions": "sinusoidal-concat"}, "positions"),
        ({"d_k_override": 4, "d_v_override": 4}, "d_k"),
        ({"layer_norm_eps": 1e-6}, "layer_norm_eps"),
    ],
)
def test_export_refuses_what_marian_cannot_represent(kw, setting) -> None:
    cfg = ModelConfig(vocab_size=30, d_model=16, n_heads=2, d_ff=20, n_layers=1, **kw)
    with pytest.raises(UserError, match=setting):
        hfx.check_exportable_hf(cfg)


# Marian -> aiayn ---------------------------------------------------------------------------


def number_texts(n: int = 300) -> tuple[list[str], list[str]]:
    pairs = list(numbers_corpus("de", n).splits["all"]())
    return [en for en, _ in pairs], [de for _, de in pairs]


def train_spm(lines: list[str], size: int) -> bytes:
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=out, vocab_size=size, minloglevel=2
    )
    return out.getvalue()


def make_marian_dir(
    d: Path, seed: int = 0, keep_bos: bool = False, steps: int | None = None, **cfg_kw
) -> Path:
    """An OPUS-MT-like directory: small MarianMTModel, a SentencePiece pair, vocab.json (EOS 0,
    UNK 1, the pieces of both models, "<s>" among them only with keep_bos, PAD last; decoding
    starts with PAD), trained for ``steps`` (default TRAIN_STEPS)."""
    en, de = number_texts()
    d.mkdir(parents=True, exist_ok=True)
    (d / "source.spm").write_bytes(train_spm(en, 50))
    (d / "target.spm").write_bytes(train_spm(de, 50))
    pieces = ["</s>", "<unk>"]
    for f in ("source.spm", "target.spm"):
        sp = spm.SentencePieceProcessor(model_proto=(d / f).read_bytes())
        pieces += [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    pieces = [p for p in dict.fromkeys(pieces) if keep_bos or p != "<s>"] + ["<pad>"]
    (d / "vocab.json").write_text(json.dumps({p: i for i, p in enumerate(pieces)}))
    pad = len(pieces) - 1
    kw = {
        "vocab_size": len(pieces), "d_model": 16, "encoder_layers": 2, "decoder_layers": 2,
        "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 24,
        "decoder_ffn_dim": 24, "activation_function": "swish", "scale_embedding": True,
        "pad_token_id": pad, "eos_token_id": 0, "decoder_start_token_id": pad,
        "forced_eos_token_id": 0, "max_position_embeddings": 128, **cfg_kw,
    }  # fmt: skip
    torch.manual_seed(seed)
    model = tf.MarianMTModel(tf.MarianConfig(**kw))
    tok = tf.MarianTokenizer(str(d / "source.spm"), str(d / "target.spm"), str(d / "vocab.json"))
    train_briefly(model, tok, en, de, TRAIN_STEPS if steps is None else steps)
    with torch.no_grad():  # a buffer, not trained: random values to test its conversion
        model.final_logits_bias.add_(torch.randn_like(model.final_logits_bias) * 0.1)
    model.save_pretrained(str(d))
    tok.save_pretrained(str(d))
    return d


def train_briefly(model, tok, en: list[str], de: list[str], steps: int) -> None:
    """A few Adam steps on en -> de number phrases, so that outputs end at many lengths."""
    opt = torch.optim.Adam(model.parameters(), lr=TRAIN_LR)
    g = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, len(en), (32,), generator=g).tolist()
        batch = tok([en[i] for i in idx], text_target=[de[i] for i in idx], padding=True,
                    return_tensors="pt")  # fmt: skip
        batch["labels"][batch["labels"] == model.config.pad_token_id] = -100
        loss = model(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    """(directory, Transformers' model, its tokenizer, aiayn's model, tokenizer, order)."""
    d = make_marian_dir(tmp_path_factory.mktemp("marian") / "opus-mt-tiny")
    hf = tf.MarianMTModel.from_pretrained(str(d)).eval()
    tok = tf.AutoTokenizer.from_pretrained(str(d))
    state, cfg, ours, _ = hfx.import_marian(str(d))
    model = Transformer(cfg).eval()
    model.load_state_dict(state)
    order = hfx.vocabulary_order(json.loads((d / "vocab.json").read_text()),
                                 json.loads((d / "config.json").read_text()), "")  # fmt: skip
    return d, hf, tok, model, ours, order


def texts() -> list[str]:
    """110 source sentences: number phrases, and a few with characters the pieces lack."""
    en, _ = number_texts()
    return [*en[:104], "twenty-one, ninety-nine!", "Zürich 42", "snow ☃ one", "", "  one  two"]


def test_import_config_uses_the_extensions(marian) -> None:
    _, _, _, model, _, order = marian
    cfg = model.config
    assert (cfg.activation, cfg.attn_bias, cfg.logits_bias, cfg.decoder_start) == (
        "silu", True, True, "pad")  # fmt: skip
    assert order[1] == -1
    assert cfg.vocab_size == len(order)
    assert float(model.logits_bias.detach()[1]) == hfx.NEVER  # the added BOS row is never predicted


def test_import_tokenizer_round_trip(marian) -> None:
    """aiayn's SentencePiece pair gives Transformers' ids (reordered) and texts."""
    _, _, tok, _, ours, order = marian
    for text in texts():
        ids = ours.encode(text)
        assert [order[i] for i in [*ids, EOS]] == tok(text).input_ids, text
        theirs = tok.decode(tok(text).input_ids, skip_special_tokens=True)
        assert ours.decode(ids) == theirs, text
        target = [order[i] for i in [*ours.encode_target(text), EOS]]
        assert target == tok(text_target=text).input_ids, text
    restored = Tokenizer.from_str(ours.to_str())  # the checkpoint's form
    assert restored.encode("seventy-seven") == ours.encode("seventy-seven")


def test_import_logits_equal_on_padded_batches(marian) -> None:
    _, hf, _tok, model, ours, order = marian
    lines = texts()[:8]
    pairs = [(ours.encode(t), ours.encode(t)[:5]) for t in lines]
    b = collate(pairs)
    to_m = torch.tensor(order).clamp(min=0)  # aiayn id -> Marian id (BOS: unused here)
    src_m = to_m[b.src]  # (B, S)
    tgt_m = to_m[b.tgt_in]  # (B, T): BOS -> Marian's id 0, replaced by PAD below
    tgt_m[:, 0] = hf.config.decoder_start_token_id
    theirs = hf(input_ids=src_m, attention_mask=b.src.ne(PAD), decoder_input_ids=tgt_m).logits
    mine = model(b.src, b.tgt_in)  # (B, T, V + 1)
    real = torch.tensor([i >= 0 for i in order])
    assert (mine[..., real] - theirs[..., to_m[real]]).abs().max() < TOL
    tr = trace(model, b.src, b.tgt_in)  # the explicit path of the study note (docs/trace.md)
    assert (tr.L[..., real] - theirs[..., to_m[real]]).abs().max() < TOL


def test_import_perplexity_is_transformers_loss(marian) -> None:
    """aiayn's perplexity of references (target SentencePiece model) = exp(Transformers' loss)."""
    _, hf, tok, model, ours, _ = marian
    en, de = number_texts()
    src, ref = en[200:216], de[200:216]
    ppl = reference_perplexity(model, [(ours.encode(s), ours.encode_target(r)) for s, r in
                             zip(src, ref, strict=True)])  # fmt: skip
    batch = tok(src, text_target=ref, padding=True, return_tensors="pt")
    batch["labels"][batch["labels"] == hf.config.pad_token_id] = -100
    with torch.no_grad():
        loss = hf(**batch).loss  # the mean NLL over the target tokens, EOS included
    assert ppl.tokens == int((batch["labels"] != -100).sum())
    assert abs(ppl.nll / ppl.tokens - float(loss)) < 1e-5


def test_import_uses_marians_own_bos_row_where_it_has_one(tmp_path) -> None:
    """A vocabulary with "<s>": it becomes aiayn's BOS, no row is added, every logit equal."""
    d = make_marian_dir(tmp_path / "with-bos", keep_bos=True, steps=0)
    vocab = json.loads((d / "vocab.json").read_text())
    state, cfg, ours, _ = hfx.import_marian(str(d))
    assert cfg.vocab_size == len(vocab)
    assert cfg.decoder_start == "pad"
    model = Transformer(cfg).eval()
    model.load_state_dict(state)
    order = hfx.vocabulary_order(vocab, json.loads((d / "config.json").read_text()), "")
    assert order[1] == vocab["<s>"]
    hf = tf.MarianMTModel.from_pretrained(str(d)).eval()
    b = collate([(ours.encode(t), ours.encode(t)[:4]) for t in texts()[:4]])
    to_m = torch.tensor(order)
    tgt_m = to_m[b.tgt_in]
    tgt_m[:, 0] = hf.config.decoder_start_token_id
    theirs = hf(input_ids=to_m[b.src], attention_mask=b.src.ne(PAD), decoder_input_ids=tgt_m)
    assert (model(b.src, b.tgt_in) - theirs.logits[..., to_m]).abs().max() < TOL


@pytest.mark.parametrize("beam", [1, 4])
def test_import_searches_agree(marian, beam) -> None:
    """Greedy: token-identical over 110 sentences; beam 4: see beam_agrees."""
    _, hf, tok, model, ours, order = marian
    lines = texts()
    src = pad_batch([[*ours.encode(t), EOS] for t in lines], PAD)  # (B, S)
    pad_m, start = hf.config.pad_token_id, hf.config.decoder_start_token_id
    enc = tok(lines, padding=True, return_tensors="pt")
    assert torch.equal(torch.tensor(order).clamp(min=0)[src], enc.input_ids)
    theirs, scores = hf_generate(hf, enc.input_ids, pad_m, 0, start, (pad_m,), beam=beam)
    step = model_step_fn(model, src)
    if beam == 1:
        mine = [[order[i] for i in h[0].tokens] for h in greedy_search(step, [M] * len(lines))]
        assert mine == theirs
        assert len({len(t) for t in mine}) >= 3
        decoded = [tok.decode(t, skip_special_tokens=True) for t in theirs]
        inv = {m: a for a, m in enumerate(order)}
        assert [ours.decode([inv[i] for i in t]) for t in theirs] == decoded
        return
    found = beam_search(step, [M] * len(lines), beam, ALPHA, "fairseq")
    found_all = beam_search(model_step_fn(model, src), [M] * len(lines), beam, ALPHA, "fairseq",
                            beam)  # fmt: skip
    inv = {m: a for a, m in enumerate(order)}
    mine = [type(h[0])([order[i] for i in h[0].tokens], h[0].score, h[0].logprob) for h in found]

    @torch.no_grad()
    def logps(i: int, toks: list[int]) -> list[float]:
        y = [inv[t] for t in toks]
        logp = model(src[i : i + 1], torch.tensor([[1, *y[:-1]]])).log_softmax(-1)[0]  # (T, V)
        return logp.gather(1, torch.tensor(y)[:, None]).squeeze(1).tolist()

    same = beam_agrees(mine, found_all, theirs, scores, logps)
    assert same >= len(lines) * 0.8, same


@pytest.mark.parametrize(
    ("change", "setting"),
    [
        ({"model_type": "bart"}, "model_type"),
        ({"normalize_before": True}, "normalize_before"),
        ({"static_position_embeddings": False}, "static_position_embeddings"),
        ({"scale_embedding": False}, "scale_embedding"),
        ({"share_encoder_decoder_embeddings": False}, "share_encoder_decoder_embeddings"),
        ({"activation_function": "gelu"}, "activation_function"),
        ({"decoder_ffn_dim": 12}, "decoder_ffn_dim"),
        ({"add_final_layer_norm": True}, "add_final_layer_norm"),
    ],
)
def test_import_refuses_in_one_line(change, setting) -> None:
    config = {"model_type": "marian", "scale_embedding": True, "activation_function": "swish",
              "d_model": 16, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
              "encoder_ffn_dim": 8, "decoder_ffn_dim": 8, "vocab_size": 10, **change}  # fmt: skip
    with pytest.raises(UserError, match=setting) as e:
        hfx.check_importable(config, "DIR")
    assert "\n" not in str(e.value)


# The verbs ------------------------------------------------------------------------------------


def test_verbs_without_transformers_name_the_install(tmp_path, monkeypatch, capsys) -> None:
    """Transformers hidden: both verbs end with one line naming pip install 'aiayn[hf]'."""
    monkeypatch.setitem(sys.modules, "transformers", None)
    ckpt = tmp_path / "m.safetensors"
    tok = Tokenizer.train(["a b c"], vocab_size=260)
    cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=8, n_heads=2, d_ff=8, n_layers=1)
    save_model(ckpt, Transformer(cfg), metadata={"tokenizer": tok.to_str()})
    for argv in (
        ["export", "--format", "hf", "--checkpoint", str(ckpt), "--out", str(tmp_path / "o")],
        ["import-hf", "--model", str(tmp_path), "--out", str(tmp_path / "x.safetensors")],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert "pip install 'aiayn[hf]'" in err
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "x.safetensors").exists()


def test_the_explorer_says_which_model_it_shows(tmp_path) -> None:
    """A model trained with aiayn says so; an imported one names its source (tested below)."""
    from aiayn.explore.card import origin

    tok = Tokenizer.train(["a b c"], vocab_size=260)
    cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=8, n_heads=2, d_ff=8, n_layers=1)
    save_model(tmp_path / "m.safetensors", Transformer(cfg), metadata={"tokenizer": tok.to_str()})
    assert origin(tmp_path / "m.safetensors") == "trained with aiayn"


def test_import_hf_refuses_in_one_line_and_writes_nothing(tmp_path, marian, capsys) -> None:
    d = tmp_path / "pre-ln"
    d.mkdir()
    config = json.loads((marian[0] / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**config, "normalize_before": True}))
    (tmp_path / "file").write_text("x")
    for model, says in (
        (d, "normalize_before=True"),
        (tmp_path / "nope", "no such directory"),
        (tmp_path / "file", "not a directory"),
        (tmp_path, "no config.json"),
    ):
        out = tmp_path / "x.safetensors"
        assert main(["import-hf", "--model", str(model), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert says in err
        assert len(err.splitlines()) == 1
        assert not out.exists()


def test_import_hf_then_translate_evaluate_explore(tmp_path, marian, capsys) -> None:
    """aiayn import-hf, then translate, evaluate and the explorer's API on the imported model."""
    d, hf, tok, *_ = marian
    out = tmp_path / "opus.safetensors"
    assert main(["import-hf", "--model", str(d), "--out", str(out)]) == 0
    lines = texts()[:20]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    hyp = tmp_path / "out.txt"
    flags = ["--beam", "1", "--max-len-a", "0", "--max-len-b", str(M)]
    assert main(["translate", "--checkpoint", str(out), "--input", str(src), "--output",
                 str(hyp), *flags]) == 0  # fmt: skip
    enc = tok(lines, padding=True, return_tensors="pt")
    pad = hf.config.pad_token_id
    theirs, _ = hf_generate(hf, enc.input_ids, pad, 0, pad, (pad,))
    expect = [tok.decode(t, skip_special_tokens=True) for t in theirs]
    assert hyp.read_text(encoding="utf-8").splitlines() == expect
    assert main(["evaluate", "--checkpoint", str(out), "--src", str(src), "--ref", str(hyp),
                 *flags]) == 0  # fmt: skip
    from aiayn.explore.core import Explorer, Request

    ex = Explorer(out)
    assert "MarianMTModel opus-mt-tiny" in ex.info()["origin"]
    result = ex.analyze(Request(text=lines[3], beam=1))
    assert result["output"]["text"] == expect[3]


@pytest.mark.slow
def test_trained_model_exports_loads_and_translates_identically(tmp_path, capsys) -> None:
    """A tiny model trained on reversal (outputs depend on positions), exported by the verb:
    from_pretrained, AutoTokenizer and generate (pipeline("translation") where the installed
    Transformers still has it) give aiayn's translations."""
    torch.manual_seed(0)
    letters = "abcdefghijkl"
    tok = Tokenizer.train([" ".join(letters)] * 3, vocab_size=260)
    ids = [tok.encode(c)[0] for c in letters]  # one id a letter
    cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=4, d_ff=64, n_layers=2,
                      dropout=0.0)  # fmt: skip
    model = Transformer(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98), eps=1e-9)
    g = torch.Generator().manual_seed(0)
    for _ in range(120):
        rows = [[ids[int(j)] for j in torch.randint(0, 12, (int(n),), generator=g)]
                for n in torch.randint(1, 8, (64,), generator=g)]  # fmt: skip
        b = collate([(r, r[::-1]) for r in rows])
        loss, _, n = model(b.src, b.tgt_in, target=b.tgt_out, label_smoothing=0.1)
        opt.zero_grad()
        (loss / n).backward()
        opt.step()
    ckpt = tmp_path / "model.safetensors"
    save_model(ckpt, model.eval(), metadata={"tokenizer": tok.to_str()})
    out = tmp_path / "hf"
    assert main(["export", "--format", "hf", "--checkpoint", str(ckpt), "--out", str(out)]) == 0
    assert {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json"} <= {
        p.name for p in out.iterdir()}  # fmt: skip
    lines = ["".join(letters[int(j)] for j in torch.randint(0, 12, (int(n),), generator=g))
             for n in torch.randint(1, 8, (30,), generator=g)]  # fmt: skip
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    hyp = tmp_path / "out.txt"
    flags = ["--beam", "1", "--max-len-a", "0", "--max-len-b", str(M)]
    assert main(["translate", "--checkpoint", str(ckpt), "--input", str(src), "--output",
                 str(hyp), *flags]) == 0  # fmt: skip
    mine = hyp.read_text(encoding="utf-8").splitlines()
    assert sum(m == s[::-1] for m, s in zip(mine, lines, strict=True)) >= 10  # it learned
    hf_tok = tf.AutoTokenizer.from_pretrained(str(out))
    assert hf_tok(lines[0]).input_ids == [*tok.encode(lines[0]), EOS]
    # What pipeline("translation", model=out) does; Transformers 5 removed that pipeline.
    hf = tf.MarianMTModel.from_pretrained(str(out))
    batch = hf_tok(lines, padding=True, return_tensors="pt")
    ids = hf.generate(**batch, num_beams=1, max_new_tokens=M)
    assert hf.generation_config.decoder_start_token_id == 1  # aiayn's BOS
    assert hf_tok.batch_decode(ids, skip_special_tokens=True) == mine
    if int(tf.__version__.split(".")[0]) < 5:  # pragma: no cover (Transformers 4)
        translate = tf.pipeline("translation", model=str(out), device="cpu")
        got = [r["translation_text"] for r in translate(lines, num_beams=1, max_new_tokens=M)]
        assert got == mine
