"""BLEU flavours, chrF, reference perplexity, and `aiayn evaluate` end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from aiayn import ModelConfig, Transformer
from aiayn.cli import main
from aiayn.config import DecodeConfig
from aiayn.data import EOS, Tokenizer
from aiayn.evaluate import (
    LOWERCASE_BLEU_LABEL,
    MOSES_BLEU_LABEL,
    PAPER_BLEU_LABEL,
    bleu_tokenizer,
    chrf,
    compound_split,
    evaluate,
    lowercase_bleu,
    moses_bleu,
    moses_tokenize,
    paper_bleu,
    paper_tokenize,
    reference_perplexity,
    sacre_bleu,
    score_texts,
)
from aiayn.translator import load_translator
from aiayn.weights import save_model
from tests.zh_support import prepare_en_zh

SRC = ["a dog runs .", "two men play football .", "a cat", ""]
REF = ["ein Hund rennt .", "zwei Männer spielen Fußball .", "eine Katze", ""]


def test_compound_split() -> None:
    assert compound_split("rich-text format") == "rich ##AT##-##AT## text format"
    assert compound_split("a-b-c") == "a ##AT##-##AT## b-c"  # non-overlapping, as the script
    assert compound_split("- x -y x- a - b") == "- x -y x- a - b"  # no compound: unchanged
    assert paper_tokenize("The rich-text, well-known.") == (
        "The rich ##AT##-##AT## text , well ##AT##-##AT## known ."
    )
    assert paper_tokenize("rich-text", "intl") == "rich - text"  # intl splits hyphens itself
    with pytest.raises(ValueError, match="tokenize"):
        paper_tokenize("x", "moses")


def test_paper_bleu_by_the_formula() -> None:
    # hyp "the cat sat-down" -> the cat sat ##AT##-##AT## down (5 tokens); the reference adds
    # "on" (6 tokens). Every n-gram precision is 1, so BLEU = BP = exp(1 - 6/5).
    got = paper_bleu(["the cat sat-down"], ["the cat sat-down on"])
    assert got == pytest.approx(100 * math.exp(1 - 6 / 5), abs=1e-6)
    # Compound splitting changes the number: without it "sat-down" is one token, the hypothesis
    # has 3 tokens and no 4-gram, and unsmoothed BLEU is 0.
    from sacrebleu.metrics import BLEU

    plain = BLEU(tokenize="13a", smooth_method="none")
    unsplit = plain.corpus_score(["the cat sat-down"], [["the cat sat-down on"]]).score
    assert unsplit == 0.0
    assert "not sacreBLEU" in PAPER_BLEU_LABEL


def test_sacrebleu_and_chrf_with_signatures() -> None:
    score, sig = sacre_bleu(["the cat sat on the mat"], ["the cat sat on the mat"])
    assert score == pytest.approx(100.0)
    assert "tok:13a" in sig
    assert "nrefs:1" in sig
    score, sig = chrf(["the cat"], ["the cat"])
    assert score == pytest.approx(100.0)
    assert "nc:6" in sig
    low, _ = sacre_bleu(["a b c d e"], ["v w x y z"])
    assert low < 1.0


def tiny(vocab: int, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=vocab, d_model=16, n_heads=2, d_ff=32, n_layers=2, dropout=0.0)
    return Transformer(cfg).eval()


def test_perplexity_of_a_uniform_model_is_the_vocabulary() -> None:
    # A zero embedding gives zero logits: P = 1/V everywhere, so PPL = V exactly.
    model = tiny(17)
    with torch.no_grad():
        model.embedding.zero_()
    pairs = [([5, 6, 7], [8, 9]), ([5], [10, 11, 12, 13]), ([6, 7], [])]
    ppl = reference_perplexity(model, pairs)
    assert ppl.tokens == 3 + 5 + 1  # every target token and its EOS; never padding
    assert ppl.value == pytest.approx(17.0, rel=1e-5)


def test_perplexity_equals_one_sentence_at_a_time() -> None:
    model = tiny(30, seed=3)
    pairs = [([5, 6, 7, 8, 9], [10, 11]), ([12], [13, 14, 15, 16, 17, 18]), ([19, 20], [21])]
    together = reference_perplexity(model, pairs)
    nll, n = 0.0, 0
    for src, tgt in pairs:
        s = torch.tensor([[*src, EOS]])
        y = torch.tensor([[*tgt, EOS]])
        tgt_in = torch.tensor([[1, *tgt]])
        logp = F.log_softmax(model(s, tgt_in), dim=-1)  # (1, T, V)
        nll -= logp.gather(-1, y[..., None]).sum().item()
        n += y.numel()
    assert together.tokens == n
    assert together.nll == pytest.approx(nll, rel=1e-5)
    # Batches of one sentence (a budget smaller than any pair) give the same number.
    assert reference_perplexity(model, pairs, max_tokens=1).nll == pytest.approx(nll, rel=1e-5)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory) -> Path:
    tok = Tokenizer.train(SRC + REF, vocab_size=280)
    path = tmp_path_factory.mktemp("eval") / "model.safetensors"
    save_model(path, tiny(tok.vocab_size), metadata={"tokenizer": tok.to_str()})
    return path


def test_evaluate_report(ckpt) -> None:
    tr = load_translator(ckpt, DecodeConfig(max_len_b=3))
    report = evaluate(tr, SRC, REF)
    assert len(report["hypotheses"]) == len(SRC)
    assert report["hypotheses"][3] == ""  # the empty line
    for key in ("sacrebleu", "chrf", "paper_bleu"):
        assert 0.0 <= report[key]["score"] <= 100.0
    assert report["perplexity"]["value"] > 1.0
    assert report["perplexity"]["tokens"] == sum(
        len(tr.tokenizer.encode(r)) + 1 for r in REF
    )  # references scored with EOS, no padding
    assert report["speed"]["sentences"] == 4
    assert report["speed"]["sentences_per_second"] > 0
    # The headline is sacreBLEU of the very hypotheses returned.
    assert report["sacrebleu"]["score"] == pytest.approx(sacre_bleu(report["hypotheses"], REF)[0])


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def test_cli_evaluate_src_ref(tmp_path, ckpt, capsys) -> None:
    src, ref = write(tmp_path / "s.txt", SRC), write(tmp_path / "r.txt", REF)
    out, hyps = tmp_path / "report.json", tmp_path / "hyps.txt"
    argv = ["evaluate", "--checkpoint", str(ckpt), "--src", str(src), "--ref", str(ref)]
    assert main([*argv, "--json", str(out), "--hyps", str(hyps), "--max-len-b", "3"]) == 0
    table = capsys.readouterr().out
    for name in ("sacreBLEU", "chrF2", "paper-compatible BLEU", "reference perplexity", "speed"):
        assert name in table
    assert "tok:13a" in table
    # No language known from --src/--ref: Moses' default, said on the line.
    moses = next(line for line in table.splitlines() if "Moses-tokenized BLEU" in line)
    assert "-l en (no --tgt-lang: default)" in moses
    assert MOSES_BLEU_LABEL in moses
    assert "((" not in table
    assert "))" not in table
    report = json.loads(out.read_text())
    assert report["decode"]["beam"] == 4
    assert report["paper_bleu"]["label"] == PAPER_BLEU_LABEL
    assert (report["moses_bleu"]["lang"], report["moses_bleu"]["lang_given"]) == ("en", False)
    assert len(hyps.read_text(encoding="utf-8").split("\n")) == len(SRC) + 1
    # --tgt-lang names the references' language; the score is moses_bleu's of the hypotheses.
    assert main([*argv, "--json", str(out), "--max-len-b", "3", "--tgt-lang", "de"]) == 0
    moses = next(x for x in capsys.readouterr().out.splitlines() if "Moses-tokenized BLEU" in x)
    assert "-l de;" in moses
    report = json.loads(out.read_text())
    assert (report["moses_bleu"]["lang"], report["moses_bleu"]["lang_given"]) == ("de", True)
    written = hyps.read_text(encoding="utf-8").split("\n")[:-1]
    assert report["moses_bleu"]["score"] == pytest.approx(moses_bleu(written, REF, "de"))
    assert f"{report['moses_bleu']['score']:.2f}" in moses


def test_cli_evaluate_data_dir(tmp_path, ckpt, capsys, monkeypatch) -> None:
    import aiayn.data
    from aiayn.weights import load_state

    state, config, meta = load_state(ckpt)

    class Prepared:
        tokenizer = Tokenizer.from_str(meta["tokenizer"])
        tgt_lang = "de"

        def texts(self, split: str) -> tuple[list[str], list[str]]:
            assert split == "valid"
            return SRC, REF

    monkeypatch.setattr(aiayn.data, "load_prepared", lambda d: Prepared(), raising=False)
    argv = ["evaluate", "--checkpoint", str(ckpt), "--data", str(tmp_path), "--split", "valid"]
    assert main([*argv, "--max-len-b", "2", "--limit", "2"]) == 0
    table = capsys.readouterr().out
    assert "2 sentences" in table
    assert "-l de;" in table  # the prepared data's target language
    # A checkpoint without a tokenizer uses the prepared data's.
    bare = tmp_path / "bare.safetensors"
    save_model(bare, state, config)
    argv = ["evaluate", "--checkpoint", str(bare), "--data", str(tmp_path), "--split", "valid"]
    assert main([*argv, "--max-len-b", "2", "--limit", "1"]) == 0
    assert "1 sentences" in capsys.readouterr().out


def test_cli_evaluate_errors(tmp_path, ckpt, capsys) -> None:
    src = write(tmp_path / "s.txt", SRC)
    ref = write(tmp_path / "r.txt", REF[:2])
    assert main(["evaluate", "--checkpoint", str(ckpt), "--src", str(src), "--ref", str(ref)]) == 2
    assert "has 4 lines but" in capsys.readouterr().err
    assert main(["evaluate", "--checkpoint", str(ckpt)]) == 2
    assert "--src FILE --ref FILE" in capsys.readouterr().err
    # n-best lists are translate's: evaluate refuses --nbest rather than ignore it.
    ref = write(tmp_path / "r.txt", REF)
    argv = ["evaluate", "--checkpoint", str(ckpt), "--src", str(src), "--ref", str(ref)]
    assert main([*argv, "--nbest", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aiayn evaluate: error: --nbest")
    assert err.count("\n") == 1
    toml = write(tmp_path / "d.toml", ["[decode]", "nbest = 2"])
    assert main([*argv, "--config", str(toml)]) == 2  # the same from a settings file
    assert capsys.readouterr().err.startswith("aiayn evaluate: error: --nbest")
    # and --help does not offer it (translate's does)
    assert main(["evaluate", "--help"]) == 0
    assert "--nbest" not in capsys.readouterr().out
    assert main(["translate", "--help"]) == 0
    assert "--nbest" in capsys.readouterr().out
    # A report file in a directory that does not exist is refused, not created.
    missing = tmp_path / "no" / "such" / "report.json"
    assert main([*argv, "--json", str(missing)]) == 2
    assert "the directory" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()


def test_cli_evaluate_a_prepared_corpus(tmp_path, capsys) -> None:
    # End to end with the data module: `aiayn prepare` (numbers as words), a random model saved
    # without a tokenizer (the prepared data's is used), `aiayn evaluate --data`.
    data = tmp_path / "numbers"
    argv = ["prepare", "--source", "numbers", "--num-pairs", "100", "--out", str(data)]
    assert main([*argv, "--no-progress"]) == 0
    tok = Tokenizer.load(data / "tokenizer.json")
    save_model(tmp_path / "m.safetensors", tiny(tok.vocab_size))
    capsys.readouterr()
    out = tmp_path / "r.json"
    argv = ["evaluate", "--checkpoint", str(tmp_path / "m.safetensors"), "--data", str(data)]
    assert main([*argv, "--json", str(out), "--max-len-b", "3"]) == 0
    table = capsys.readouterr().out
    assert "sacreBLEU" in table
    report = json.loads(out.read_text())
    assert report["split"] == "test"
    assert (report["moses_bleu"]["lang"], report["moses_bleu"]["lang_given"]) == ("de", True)
    assert report["speed"]["sentences"] == len((data / "text" / "test.en").read_text().splitlines())


def test_lowercase_bleu_is_labelled_and_ignores_case_only() -> None:
    """The Multi30k papers' flavour: case-blind, labelled, and still BLEU (not a copy of cased)."""
    from aiayn.evaluate import score_texts

    hyps = ["A Dog Runs On The Grass .", "two men play ."]
    refs = ["a dog runs on the grass .", "two men are playing football ."]
    report = score_texts(hyps, refs)
    lc = report["lowercase_bleu"]
    assert "case:lc" in lc["signature"]
    assert "Multi30k" in lc["label"]
    assert lc["score"] > report["sacrebleu"]["score"]  # the case errors no longer count
    assert lc["score"] < 100.0  # the second sentence still differs
    same = score_texts([h.lower() for h in hyps], refs)
    assert same["lowercase_bleu"]["score"] == pytest.approx(lc["score"])


def test_moses_tokenize_as_multi30k_tokenized_files() -> None:
    # Lines of Multi30k's own test_2016_flickr.lc.norm.tok.de (dataset repository, data/task1/tok)
    # and train.lc.norm.tok.de, from their raw lines: the German tokenizer splits every
    # apostrophe off, escapes, keeps hyphens (no -a) and the numeric prefix "10." at the end;
    # the perl normalizer turns a lone "’" into a double quote.
    assert moses_tokenize("Zwei Jungen essen ihr McDonald's-Menü im Außenbereich.", "de") == (
        "zwei jungen essen ihr mcdonald &apos; s-menü im außenbereich ."
    )
    assert moses_tokenize("Ein Boston Terrier läuft über saftig-grünes Gras.", "de") == (
        "ein boston terrier läuft über saftig-grünes gras ."
    )
    assert moses_tokenize('Eine Frau auf einem Boot namens "El Corazon".', "de") == (
        "eine frau auf einem boot namens &quot; el corazon &quot; ."
    )
    assert moses_tokenize("Er trägt die Nummer 10.", "de") == "er trägt die nummer 10."
    assert moses_tokenize("macht das „Hook ’em Horns“-Zeichen.", "de") == (
        "macht das &quot; hook &quot; em horns &quot; -zeichen ."
    )
    # English keeps the apostrophe on the right and splits the final "10." (no such prefix).
    assert moses_tokenize("McDonald's menu costs 10.", "en") == "mcdonald &apos;s menu costs 10 ."


def test_moses_bleu_by_the_formula_and_against_13a() -> None:
    hyp, ref = ["Ein Mann isst bei McDonald Pommes"], ["ein Mann isst bei McDonald's Pommes"]
    # Moses (de): the reference is "ein mann isst bei mcdonald &apos; s pommes" (8 tokens), the
    # hypothesis 6 tokens, all in it; n-gram matches 6/6, 4/5, 3/4, 2/3; BP = exp(1 - 8/6).
    expected = 100 * math.exp(1 - 8 / 6) * (1 * 4 / 5 * 3 / 4 * 2 / 3) ** (1 / 4)
    assert moses_bleu(hyp, ref, "de") == pytest.approx(expected, abs=1e-9)
    # 13a keeps "mcdonald's" whole: 6 tokens a side, "mcdonald" unmatched, matches 5/6, 3/5,
    # 2/4, 1/3, BP = 1: another number from the same text.
    lc13a = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** (1 / 4)
    assert lowercase_bleu(hyp, ref)[0] == pytest.approx(lc13a, abs=1e-9)
    assert abs(expected - lc13a) > 3
    # Case never counts; identical text is 100; unsmoothed, as multi-bleu.perl: no 4-gram, 0.
    text = ["Zwei Männer spielen Tennis.", "Ein Hund rennt über die Wiese."]
    assert moses_bleu(text, [t.upper() for t in text], "de") == pytest.approx(100.0)
    assert moses_bleu(["ein hund ."], ["ein hund ."], "de") == 0.0


def test_moses_escaping_changes_no_bleu() -> None:
    # tokenizer.perl escapes by default; both sides escaped alike, the n-grams match as before.
    from sacrebleu.metrics import BLEU
    from sacremoses import MosesTokenizer

    hyps = ['Er sagt "Hallo" & geht.', "Sie sagt 'Tschüss' | lacht & geht."]
    refs = ['er sagt "hallo" & lacht .', "sie sagt 'tschüss' und lacht & geht ."]
    tok = MosesTokenizer(lang="de")
    plain = [
        [tok.tokenize(x.lower(), escape=False, return_str=True) for x in xs] for xs in (hyps, refs)
    ]
    assert "&quot;" not in plain[0][0]
    unescaped = BLEU(tokenize="none", smooth_method="none", force=True)
    expected = unescaped.corpus_score(plain[0], [plain[1]]).score
    assert 0 < expected < 100
    assert moses_bleu(hyps, refs, "de") == pytest.approx(expected)


def test_score_texts_reports_moses_bleu_with_its_language() -> None:
    hyps, refs = ["Ein Mann isst bei McDonald Pommes"], ["ein Mann isst bei McDonald's Pommes"]
    report = score_texts(hyps, refs, "de")["moses_bleu"]
    assert report["score"] == pytest.approx(moses_bleu(hyps, refs, "de"))
    assert report["label"] == MOSES_BLEU_LABEL
    assert "not sacreBLEU" in report["label"]
    assert "Multi30k" in report["label"]
    assert (report["lang"], report["lang_given"]) == ("de", True)
    from importlib.metadata import version

    assert report["sacremoses"] == version("sacremoses")
    assert f"sacremoses {version('sacremoses')}" in report["tokenizer"]
    assert "MosesTokenizer(lang='de')" in report["tokenizer"]
    assert "smooth_method='none'" in report["tokenizer"]
    # Unknown language: tokenizer.perl's default, en, and the report says it was not given.
    fallback = score_texts(hyps, refs)["moses_bleu"]
    assert (fallback["lang"], fallback["lang_given"]) == ("en", False)
    assert "MosesTokenizer(lang='en')" in fallback["tokenizer"]


# A Chinese reference and a hypothesis with one character changed (跑步 "run" -> 散步 "walk").
ZH_REF = ["我们今天去公园跑步。", "他在北京大学学习汉语，很喜欢这个城市。"]
ZH_HYP = ["我们今天去公园散步。", "他在北京大学学习汉语，很喜欢这个城市。"]


def test_chinese_is_scored_with_the_zh_tokenizer() -> None:
    # 13a cuts at spaces (and punctuation), so a Chinese sentence is one or two "words": the
    # changed character makes the whole first sentence wrong and BLEU falls near 0 ...
    one_char, sig = sacre_bleu(ZH_HYP[:1], ZH_REF[:1], "zh")
    assert 30.0 < one_char < 90.0  # ... zh cuts every Han character: one wrong of ten
    assert "tok:zh" in sig
    as_13a, sig_13a = sacre_bleu(ZH_HYP[:1], ZH_REF[:1])
    assert as_13a < 5.0
    assert "tok:13a" in sig_13a
    corpus, _ = sacre_bleu(ZH_HYP, ZH_REF, "zh")
    assert one_char < corpus < 100.0
    assert sacre_bleu(ZH_REF, ZH_REF, "zh")[0] == pytest.approx(100.0)
    # The same tokenizer under Tatoeba's code for Mandarin, and with a region.
    assert sacre_bleu(ZH_HYP, ZH_REF, "cmn") == sacre_bleu(ZH_HYP, ZH_REF, "zh-TW")
    assert sacre_bleu(ZH_HYP, ZH_REF, "cmn")[0] == pytest.approx(corpus)
    # chrF counts characters: no tokenizer, the same figure for any language.
    assert 50.0 < chrf(ZH_HYP[:1], ZH_REF[:1])[0] < 100.0


def test_bleu_tokenizer_for_each_target_language(monkeypatch) -> None:
    import aiayn.evaluate

    for lang in ("en", "de", "fr", "DE", "en-GB", "xx", "th", None):
        assert bleu_tokenizer(lang) == "13a", lang
    for lang in ("zh", "zh-CN", "zh_Hant", "cmn", "zho", "yue"):
        assert bleu_tokenizer(lang) == "zh", lang
    # Japanese and Korean: MeCab where sacreBLEU can build it, else every character a word.
    monkeypatch.setattr(aiayn.evaluate, "_tokenizer_works", lambda name: True)
    assert [bleu_tokenizer(x) for x in ("ja", "jpn", "ko", "kor")] == [
        "ja-mecab",
        "ja-mecab",
        "ko-mecab",
        "ko-mecab",
    ]
    monkeypatch.setattr(aiayn.evaluate, "_tokenizer_works", lambda name: False)
    assert [bleu_tokenizer(x) for x in ("ja", "ko")] == ["char", "char"]
    monkeypatch.undo()
    # Here, whatever is installed, the tokenizer named is one sacreBLEU builds and signs.
    for lang in ("ja", "ko"):
        _, sig = sacre_bleu(["今日は"], ["今日は"], lang)
        assert f"tok:{bleu_tokenizer(lang)}|" in sig


def test_european_targets_keep_13a_and_their_signatures() -> None:
    """Every EN-DE figure stays what it was: sacreBLEU's defaults, byte for byte."""
    from sacrebleu.metrics import BLEU

    for lang in (None, "en", "de", "fr"):
        for scorer, metric in ((sacre_bleu, BLEU()), (lowercase_bleu, BLEU(lowercase=True))):
            score, sig = scorer(REF, SRC, lang)
            assert score == metric.corpus_score(REF, [SRC]).score
            assert sig == str(metric.get_signature())
            assert "|tok:13a|" in sig
    report = score_texts(REF, SRC, "de")
    assert report["lowercase_bleu"]["label"] == LOWERCASE_BLEU_LABEL
    assert "skipped" not in report
    assert {"moses_bleu", "paper_bleu"} <= set(report)


def test_score_texts_of_a_chinese_target() -> None:
    report = score_texts(ZH_HYP, ZH_REF, "zh")
    assert "tok:zh" in report["sacrebleu"]["signature"]
    assert report["sacrebleu"]["score"] == pytest.approx(sacre_bleu(ZH_HYP, ZH_REF, "zh")[0])
    assert report["chrf"]["score"] == pytest.approx(chrf(ZH_HYP, ZH_REF)[0])
    lc = report["lowercase_bleu"]
    assert "case:lc|eff:no|tok:zh|" in lc["signature"]
    assert lc["label"] == "lowercased sacreBLEU, tok:zh"  # not the Multi30k approximation
    # The European flavours (Moses', 13a's words) are left out, and the report says why.
    assert "moses_bleu" not in report
    assert "paper_bleu" not in report
    assert set(report["skipped"]) == {"moses_bleu", "paper_bleu"}
    assert "not computed for zh" in report["skipped"]["moses_bleu"]
    assert "tok:zh" in report["skipped"]["paper_bleu"]


def test_cli_evaluate_a_chinese_target(tmp_path, capsys) -> None:
    # `aiayn prepare --lang-pair en-zh`, a random model on its tokenizer, `aiayn evaluate
    # --data`: the manifest's target language picks the zh tokenizer, no flag needed.
    data = prepare_en_zh(tmp_path)
    tok = Tokenizer.load(data / "tokenizer.json")
    model = tmp_path / "m.safetensors"
    save_model(model, tiny(tok.vocab_size), metadata={"tokenizer": tok.to_str()})
    out, hyps = tmp_path / "r.json", tmp_path / "hyps.txt"
    argv = ["evaluate", "--checkpoint", str(model), "--data", str(data), "--max-len-b", "3"]
    assert main([*argv, "--json", str(out), "--hyps", str(hyps)]) == 0
    table = capsys.readouterr().out
    assert "|tok:zh|" in table
    moses = next(line for line in table.splitlines() if "Moses-tokenized BLEU" in line)
    assert "-  not computed for zh" in moses
    report = json.loads(out.read_text())
    assert report["sacrebleu"]["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:zh|")
    refs = (data / "text" / "test.zh").read_text(encoding="utf-8").splitlines()
    written = hyps.read_text(encoding="utf-8").split("\n")[:-1]
    assert report["sacrebleu"]["score"] == pytest.approx(sacre_bleu(written, refs, "zh")[0])
    assert report["chrf"]["score"] == pytest.approx(chrf(written, refs)[0])
    assert "moses_bleu" not in report
    assert "paper_bleu" in report["skipped"]


def test_cli_evaluate_chinese_references_without_a_language(tmp_path, ckpt, capsys) -> None:
    src, ref = write(tmp_path / "s.txt", SRC[:2]), write(tmp_path / "r.txt", ZH_REF)
    argv = ["evaluate", "--checkpoint", str(ckpt), "--src", str(src), "--ref", str(ref)]
    assert main([*argv, "--max-len-b", "2"]) == 0
    captured = capsys.readouterr()
    assert "tok:13a" in captured.out  # unknown: sacreBLEU's default, and a warning says so
    assert "look Chinese, Japanese or Korean" in captured.err
    assert "--tgt-lang" in captured.err
    assert main([*argv, "--max-len-b", "2", "--tgt-lang", "zh"]) == 0
    captured = capsys.readouterr()
    assert "tok:zh" in captured.out
    assert captured.err == ""
    assert main(["evaluate", "--checkpoint", str(ckpt), "--src", str(src), "--ref", str(src)]) == 0
    assert capsys.readouterr().err == ""  # English references: no warning
