"""The special tokens of every vocabulary.  Sections 3.2.3, 5.1.

Ids 0-3 are PAD, BOS, EOS and UNK in every vocabulary. Stored token ids carry no special
tokens; ``aiayn.data.batch.collate`` adds them when it frames a batch.
"""

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")  # ids 0, 1, 2, 3 in every vocabulary
