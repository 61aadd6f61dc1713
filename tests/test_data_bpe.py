"""The shared byte-level BPE (section 5.1): exact round trip, specials at ids 0-3, no UNK."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiayn.data import BOS, EOS, PAD, SPECIAL_TOKENS, UNK, Tokenizer
from aiayn.errors import UserError

CORPUS = [
    "The cat sat on the mat.",
    "Die Katze saß auf der Matte.",
    "Click the Save button to store the document.",
    "Klicken Sie auf Speichern, um das Dokument zu speichern.",
] * 5


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.train(CORPUS, vocab_size=320)


# Random Unicode plus a deliberate mix of CJK, emoji (with ZWJ and skin tone), combining marks,
# runs of spaces, tabs, newlines and text that looks like the special tokens.
PIECES = st.sampled_from(
    [
        "日本語",
        "中文",
        "한국어",
        "😀",
        "👩‍👩‍👧",
        "👍🏽",
        "e\u0301",
        "a\u0308\u0323",
        "   ",
        "\t",
        "\n",
        "\r\n",
        "<s>",
        "</s>",
        "<pad>",
        "<unk>",
        "Ġ",
        "▁",
        "\x00",
        "\ufeff",
        "ß",
        "the",
    ]
)
TEXTS = st.one_of(st.text(), st.lists(st.one_of(PIECES, st.text(max_size=5))).map("".join))


@given(TEXTS)
def test_round_trip_any_unicode(tok: Tokenizer, text: str) -> None:
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert all(i >= len(SPECIAL_TOKENS) for i in ids)  # never a special, never UNK


def test_round_trip_examples(tok: Tokenizer) -> None:
    for text in ["  two  spaces ", "猫 😺 e\u0301", "</s> is text", "", " ", "\n\n"]:
        assert tok.decode(tok.encode(text)) == text


def test_specials_have_fixed_ids(tok: Tokenizer) -> None:
    assert SPECIAL_TOKENS == ("<pad>", "<s>", "</s>", "<unk>")
    assert [tok.id_to_token(i) for i in (PAD, BOS, EOS, UNK)] == list(SPECIAL_TOKENS)
    assert tok.decode([BOS, *tok.encode("cat"), EOS, PAD]) == "cat"


def test_shared_vocabulary_learns_both_languages(tok: Tokenizer) -> None:
    # one model for source and target: frequent words of both sides became single tokens
    assert len(tok.encode(" the")) == 1
    assert len(tok.encode(" Katze")) < len(b" Katze")


def test_save_load_and_from_str(tok: Tokenizer, tmp_path) -> None:
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    again = Tokenizer.load(path)
    assert again.encode("Die Katze") == tok.encode("Die Katze")
    assert Tokenizer.from_str(tok.to_str()).vocab_size == tok.vocab_size == 320


def test_bad_tokenizer_files(tmp_path) -> None:
    with pytest.raises(UserError, match="not found"):
        Tokenizer.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match=r"bad\.json"):
        Tokenizer.load(bad)


def test_tokens_are_readable(tok: Tokenizer) -> None:
    pieces = tok.tokens([*tok.encode("the cat"), EOS])
    assert "".join(pieces[:-1]).replace("▁", " ") == "the cat"
    assert pieces[-1] == "</s>"


def test_tiny_vocabulary_still_covers_all_bytes() -> None:
    small = Tokenizer.train(["ab"], vocab_size=10)
    assert small.vocab_size == 260  # 4 specials + 256 bytes
    assert small.decode(small.encode("∀x 😀")) == "∀x 😀"
