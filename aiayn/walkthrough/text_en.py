"""The walkthrough's prose in English (the default).  Keys are shared with ``text_zh``.

Placeholders in braces are filled with the example's numbers; a ``.cols`` key is a table's
header, its cells separated by " | ". Formulas live in the code (LaTeX) and are the same in
every language.
"""

TEXT: dict[str, str] = {
    "doc.title": "The Transformer, step by step: the note's walkthrough",
    "layer": " (layer {l} of {n})",
    # The example.
    "intro.title": "The note's example",
    "intro.text": (
        "This walkthrough replays the study note “Transformer 精简笔记” on its own toy example, "
        "step by step and with its symbols. Every step proves itself: its formula is computed a "
        "second time by hand (plain NumPy, from the model's parameters and the previous step's "
        "values) and compared with what the PyTorch model computed (aiayn.trace). A mismatch "
        "stops the walkthrough with an error; each ✓ line below is one such comparison, with the "
        "largest difference found."
    ),
    "intro.settings": (
        "The model shown: aiayn's Transformer, randomly initialised with these settings, not a "
        "trained translator (a trained or imported one, such as OPUS-MT through aiayn "
        "import-hf, opens in aiayn explore). "
        "Settings: d_model = {d}, h = {h} heads with d_k = d_v = d_model / h = {dk}, "
        "d_ff = {dff}, N = {n} encoder and {n} decoder layer(s), random seed {seed}, float64. "
        "Dropout is off: this is one deterministic pass (where dropout acts in training is "
        "shown at step 3 and at the end). Matrices show {dec} decimals. Vectors are rows, as in "
        "the note and the paper (X W, not W x)."
    ),
    "intro.pair": (
        "Source “{src}”: the encoder reads {enc} (n = {n} tokens, ending with </s>). "
        "Target “{tgt}”: the decoder reads it shifted right, {dec}, and at each position must "
        "predict the next word: {out}."
    ),
    "intro.vocab": (
        "The vocabulary is the note's “8 words” (with the default sentences): <s>, </s> and "
        "every word of the two sentences, |V| = {v}. One sentence pair needs no padding, so there "
        "is no separate <pad> token; the model's pad_id is the id of {pad}, which never occurs "
        "in the source nor among the words to predict, so nothing is masked or skipped because "
        "of it."
    ),
    "intro.cols": "id | word",
    "intro.rows": (
        "E holds one row of d_model numbers per word (random before training). It serves three "
        "times (3.4): for the source words, for the target words (both multiplied by "
        "√d_model = {sqrtd}) and, transposed, as the output layer of step 13."
    ),
    # Steps 1-14.
    "s1.title": "Step 1. Encoder: input embedding + positional encoding",
    "s1.text": (
        "E_src stacks the rows of E for the {n} source tokens. The paper multiplies them by "
        "√d_model = {sqrtd} (3.4) and adds the positional encoding PE, whose entries lie between "
        "−1 and 1: without PE the model could not tell “I love you” from “you love I”. The "
        "explanation the note left for later is below, in “Positional encoding, as promised”. PE "
        "is computed here from the formula and compared with the model's sum."
    ),
    "s2.title": "Step 2. Encoder: multi-head self-attention",
    "s2.text": (
        "Each head i recombines the numbers inside each token's row with its own W_Qi, W_Ki, "
        "W_Vi (d_model × d_k); tokens do not mix yet. Then S_i = Q_i K_iᵀ / √d_k scores how well "
        "each query row matches each key row, the softmax turns every row of scores into weights "
        "that sum to 1, and O_i = A_i V_i gives each token a weighted average of the value rows: "
        "this is where tokens exchange information. The model keeps W^Q of all heads in one "
        "d_model × h·d_k matrix; head i is its columns i·d_k … (i+1)·d_k − 1 (likewise W^K, W^V)."
    ),
    "head": "Head {i} (columns {lo}…{hi} of W^Q, W^K and W^V):",
    "sep": ", ",  # between the items of a list (heads 1, 2)
    "heads.hidden": (
        "Heads {heads}: not shown (--heads chooses), proved all the same ({n} more checks, "
        "counted in the summary)."
    ),
    "concat": "The heads' outputs side by side, then multiplied by W^O:",
    "s3.title": "Step 3. Encoder: Add & Norm",
    "s3.text": (
        "R_E = X_E + M_E is the residual: the arrow in the figure that jumps over the attention. "
        "Dropout is off in this pass; in training the paper drops 10% of M_E's entries (and "
        "scales the rest by 1/0.9) before the sum. LayerNorm then treats each row (each token) "
        "on its own: subtract the row's mean μ, divide by √(σ² + ε) with the row's variance σ² "
        "and ε = {eps}, then scale by γ and shift by β. Rows do not interfere with one another."
    ),
    "s4.title": "Step 4. Encoder: feed-forward",
    "ffn.text": (
        "The same two-layer network is applied to every row separately (“position-wise”, 3.3): "
        "d_model = {d} → d_ff = {dff} → d_model. ReLU sets the negative entries to 0 ({z} of the "
        "{nh} hidden entries here)."
    ),
    "s5.title": "Step 5. Encoder: the second Add & Norm",
    "s5.text": (
        "Each row of Z_E is the encoder's final reading of one source token (layer {l} of {n} "
        "here; the paper stacks N = 6 layers, each starting from the previous one's Z_E). The "
        "last Z_E is the “memory” that the cross-attention of every decoder layer reads in step 9."
    ),
    "s6.title": "Step 6. Decoder: output embedding + positional encoding",
    "s6.text": (
        "As in step 1, for the decoder's input: the target shifted right by one position (3.2.3), "
        "so that position t holds the word before the one it must predict. The same E (shared, "
        "3.4) and the same PE for positions 0 … {n}−1."
    ),
    "s7.title": "Step 7. Decoder: masked multi-head self-attention",
    "s7.text": (
        "As in step 2, but the decoder is trained on the whole target at once, so position t "
        "must not look at the later positions, which hold the words it is learning to predict. "
        "The mask M adds −∞ above the diagonal; after the softmax e^(−∞) = 0, so those weights "
        "are exactly 0 and each row still sums to 1."
    ),
    "s8.title": "Step 8. Decoder: Add & Norm",
    "s9.title": "Step 9. Encoder-decoder cross-attention",
    "s9.text": (
        "The queries come from the decoder (H_D, the note's X_D′: the decoder after step 8), the "
        "keys and values from the encoder's output Z_E. Every target position may read every "
        "source word, so there is no causal mask (only padding in the source would be masked; "
        "there is none). Each A_i is an n_D × n_E map: row t shows which source words position t "
        "reads. In the paper all N decoder layers read the same, final Z_E."
    ),
    "s10.title": "Step 10. Decoder: Add & Norm",
    "s10.text": "The note calls this result H_D again; here it is H_D^(2), to tell the two apart.",
    "s11.title": "Step 11. Decoder: feed-forward",
    "s12.title": "Step 12. Decoder: the last Add & Norm",
    "s12.text": (
        "Z_D has one row per output position (layer {l} of {n}). With the paper's N = 6 this "
        "would be the sixth decoder layer's output; no extra LayerNorm follows (post-LN, 3.1)."
    ),
    "s13.title": "Step 13. Linear: from d_model numbers to one score per word",
    "s13.text": (
        "The output layer reuses E, unscaled (3.4): in L = Z_D Eᵀ the score of word v at "
        "position t is the dot product of row t of Z_D with the embedding of v. {d} numbers "
        "become |V| = {v} scores, one column per word of the vocabulary."
    ),
    "s14.title": "Step 14. Softmax",
    "s14.text": (
        "Each row becomes a probability distribution over the vocabulary, and each output "
        "position can choose a word. The model is untrained, so its choices are arbitrary and "
        "its rows close to uniform (1/|V| = {u})."
    ),
    "s14.cols": "t | input | most probable word | its probability | correct next word",
    # Asides: the note and the paper.
    "scale.title": "The note and the paper: √d_k, not √d_model",
    "scale.text": (
        "The note's step 2 divides the scores by √d_model = √{d} = {sd}; the paper (Eq. 1, and "
        "the note's own step 7) divides by √d_k = √{dk} = {sdk}. Here that makes every score "
        "{r} times smaller (√h with h = {h}) and the softmax flatter: its rows move toward the "
        "uniform distribution, whose entropy is ln {n} = {u}. The table gives, for each head, "
        "the mean of the rows' largest weight and the mean row entropy (nats)."
    ),
    "scale.cols": (
        "head | max weight (√d_k) | max weight (√d_model) | entropy (√d_k) | entropy (√d_model)"
    ),
    "scale.why": (
        "Why √d_k: if the entries of q and k are independent with mean 0 and variance 1, q·k is "
        "a sum of d_k terms with variance d_k; dividing by √d_k brings it back to variance 1 for "
        "any head size (3.2.1, footnote 4). Scores that are too large push the softmax into "
        "regions where its gradients are extremely small; scores divided by too much (√d_model) "
        "make every head attend almost uniformly, the more so as h grows (√8 ≈ 2.83 times "
        "smaller in the base model)."
    ),
    "wo.title": "The note and the paper: the output projection W^O",
    "wo.text": (
        "The note concatenates the heads “directly”. The paper multiplies the concatenation by "
        "W^O ∈ ℝ^(h·d_v × d_model) (3.2.2), d_model · h·d_v = {p} more parameters per attention "
        "layer. Since h·d_v = d_model, both versions have the right shape, which makes the "
        "missing W^O easy to overlook. Without it, output column j could only carry the result "
        "of one head (the one whose d_v = {dv} columns contain j), and each head would always "
        "write into the same few features of the residual stream; W^O lets every output feature "
        "combine all the heads. What the residual sum of step 3 receives in each version:"
    ),
    "ln.title": "The note and the paper: γ and β are learned, ε is not",
    "ln.text": (
        "The note names γ and ε as the trainable parameters. The trainable pair is γ (a scale) "
        "and β (a shift), two vectors of d_model = {d} numbers; ε = {eps} is a fixed constant "
        "that keeps the division safe when a row is almost constant. It hardly matters here: "
        "this LayerNorm computed with ε = 0 differs by at most {dd}. γ and β each receive a "
        "gradient in the backward pass below."
    ),
    # The loss.
    "loss.title": "The loss",
    "loss.cross_entropy": "cross-entropy",
    "loss.training_loss": "the training loss",
    "loss.text": (
        "At each position t the correct next word y_t is known (teacher forcing: the decoder was "
        "given the true previous words), and p(y_t) is the probability the model gives to that "
        "word, read in its column of P. The paper does not train on −log p(y_t) alone: it "
        "smooths the labels with ε_ls = {eps} (5.4), giving the correct word 1 − ε_ls and sharing "
        "ε_ls among the other |V| − 1 words, which “hurts perplexity, as the model learns to be "
        "more unsure, but improves accuracy and BLEU score”. Padding positions would not count: "
        "the mean runs over the real target tokens (here all {n} rows are real tokens)."
    ),
    "loss.mean": "mean",
    "loss.cols": (
        "t | input | y_t | p(y_t) | −log p(y_t) | smoothed L_t | argmax | max p | −log max p"
    ),
    "p.title": "The note and the paper: p(y_t) is the correct word's probability",
    "p.text": (
        "The note reads p(y_t) as the largest probability in the row (last two columns). With "
        "that reading the mean loss would be {note} instead of {plain}. At position {t} the "
        "largest probability belongs to “{w}”, but the word to predict is “{y}”: the loss must "
        "look up the correct word's column, whatever the model currently prefers."
    ),
    "p.same": (
        "The note reads p(y_t) as the largest probability in the row (last two columns). In this "
        "example the most probable word happens to be the correct one at every position, so both "
        "readings give {note}; in general they differ."
    ),
    "p.why": (
        "Only the correct word's probability says how wrong the model is. −log max p would be "
        "small whenever the model is confident about any word, right or wrong, and its gradient "
        "would push up whichever word already wins."
    ),
    # Backpropagation.
    "backward.title": "Backpropagation",
    "backward.text": (
        "One backward pass computes the gradient of the mean smoothed loss with respect to every "
        "parameter. PyTorch's autograd does it for the model; the NumPy twin (aiayn.numpy_twin) "
        "does it by hand, block by block, with the chain rule written out (derivations in "
        "docs/math.md). Each gradient below is proved twice over: the twin's equals autograd's. "
        "The chain starts at the logits, where the gradient is simply (p − q)/n_D, and flows back "
        "through the output layer and the decoder, through the cross-attention into the encoder, "
        "and into E."
    ),
    "backward.notation": (
        "∂X stands for ∂L̄/∂X, a matrix of the same shape as X: how fast the loss rises when each "
        "entry grows. The parameters are those the note lists: the embeddings, every W_Q, W_K, "
        "W_V (all heads side by side, as the model stores them), W^O, the FFN's weights and "
        "biases, and every LayerNorm's γ and β."
    ),
    "grad.embedding": "Embedding",
    "grad.E": (
        "The shared embedding E (rows: words). It collects gradient from three uses: the output "
        "layer (every word, through its score), the target lookup and the source lookup "
        "(× √d_model)."
    ),
    "grad.encoder": "Encoder layer {l}",
    "grad.decoder": "Decoder layer {l}",
    "grad.self_attn": ", self-attention",
    "grad.cross_attn": ", cross-attention",
    "grad.ffn": ", feed-forward",
    "grad.norm": ", LayerNorm {i}",
    "grad.cols": "where | parameter | shape | ‖gradient‖",
    # The optimizer step.
    "update.title": "One optimizer step",
    "update.adam": (
        "The paper trains with Adam (β1 = 0.9, β2 = 0.98, ε = 10⁻⁹) and a learning rate that "
        "grows linearly for warmup = {warmup} steps and then decays as step^(−1/2) (5.3, Eq. 3). "
        "A real run's first step uses lrate(1) = {lr1}, far too small to show anything in one "
        "step; {which}: lr = {lr}. On the first step Adam's bias correction makes m̂ = g and "
        "v̂ = g², so every parameter with a non-zero gradient moves by almost exactly lr against "
        "the sign of its gradient, however small the gradient is."
    ),
    "update.sgd": (
        "Plain gradient descent, for clarity (the paper uses Adam; run without --optimizer sgd "
        "to see it): every parameter moves against its gradient, scaled by lr = {lr} ({which})."
    ),
    "update.lr_given": "this walkthrough uses the rate given with --lr",
    "update.lr_step": "this walkthrough uses Eq. (3) at step {step} (the peak is at step = warmup)",
    "update.cols": "t | y_t | p(y_t) before | p(y_t) after",
    "update.result": (
        "The smoothed loss goes from {before} to {after} (the plain mean of −log p(y_t) from {pb} "
        "to {pa}). ΔE above is the change of the shared embedding."
    ),
    # Positional encoding.
    "pos.title": "Positional encoding, as promised",
    "pos.order": (
        "Why positions at all: attention treats its input as a set. Without PE, shuffling the "
        "source words only shuffles the rows of the encoder's output, and nothing else changes "
        "(checked below on this model's encoder layer, with the words rotated by one place). "
        "With PE added, the same shuffle changes the outputs (by up to {moved} here): the order "
        "has become visible."
    ),
    "pos.cols": "i | dimensions | ω_i | wavelength λ_i | λ_i / 2π",
    "pos.wavelengths": (
        "Each pair of dimensions (2i, 2i+1) turns at its own frequency ω_i. The wavelengths form "
        "a geometric progression from 2π (pair 0: one turn every 6.28 positions) towards "
        "10000·2π, the limit as 2i/d_model approaches 1: with d_model = {d} the slowest pair has "
        "λ = {last}·2π, with d_model = 512 about {l512}·2π. Fast pairs tell neighbours apart; "
        "slow pairs change little across a sentence and tell its beginning from its end, like "
        "the hands of a clock."
    ),
    "pos.fig": (
        "PE for d_model = {d}: positions from left to right, dimensions from top to bottom; red "
        "positive, blue negative."
    ),
    "pos.why": (
        "Why a sine and a cosine: the pair (sin ω_i·pos, cos ω_i·pos) is a point on the unit "
        "circle at the angle ω_i·pos. Moving k positions further turns the point by the angle "
        "ω_i·k, whatever pos is. A turn is a linear map, so PE(pos + k) = R_k PE(pos), where R_k "
        "is block-diagonal with one 2×2 rotation per pair and depends on k only. With a sine "
        "alone this fails: sin(ω(pos + k)) is not determined by sin(ω·pos), it also needs the "
        "cosine. This is the paper's reason (3.5): “for any fixed offset k, PE_pos+k can be "
        "represented as a linear function of PE_pos”, which should make it easy for the model to "
        "attend by relative positions."
    ),
    "pos.rotation": "R_1 for this d_model, and PE(3) obtained by turning PE(2):",
    "pos.consequences": (
        "Two consequences, checked on the model's own table: every PE(pos) has the same length, "
        "‖PE(pos)‖² = {half} (each pair is a unit vector), and the dot product PE(p)·PE(p + k) = "
        "Σ_i cos(ω_i·k) depends only on the distance k, not on p."
    ),
    "pos.dots.cols": "k | Σ_i cos(ω_i k) | max deviation over p",
    # Where the note and the paper differ.
    "diff.title": "Where the note and the paper differ",
    "diff.intro": (
        "The note is a careful first pass, and its slips are the usual ones. This project "
        "implements the paper; where the note says otherwise, here is the paper's version. Items "
        "1 to 4 were shown with numbers beside their steps."
    ),
    "diff.cols": "# | the paper",
    "diff.item1": "Step 2 scales by √d_model; the paper (and the note's step 7) by √d_k (3.2.1).",
    "diff.item2": (
        "Step 2 concatenates the heads directly; the paper multiplies the concatenation by W^O "
        "(3.2.2)."
    ),
    "diff.item3": "Step 3: the learned parameters are γ and β; ε is a constant.",
    "diff.item4": (
        "The loss: p(y_t) is the probability of the correct next word, not the row's largest; "
        "the paper also smooths the labels (ε_ls = 0.1, 5.4)."
    ),
    "diff.item5": (
        "The note shows one layer; the paper stacks N = 6 identical layers in the encoder and in "
        "the decoder (3.1)."
    ),
    "diff.item6": (
        "Dropout (P_drop = 0.1) acts on every sub-layer's output before the residual sum and on "
        "the embedding + PE sums of both stacks (5.4), not only in step 3."
    ),
    "diff.item7": (
        "Padding masks, the training schedule (Adam and warm-up, 5.3) and inference (beam "
        "search, 6.1) complete the paper's flow."
    ),
    "diff.layers": (
        "N: this walkthrough runs N = {n} (the note's single layer unless --n-layers is given), "
        "{p} parameters; the same toy model with N = 6 has {p6}. Each layer has its own weights, "
        "and the cross-attention of every decoder layer reads the final encoder output."
    ),
    "diff.dropout": (
        "Dropout: in training, with P_drop = 0.1, it would act at {here} places in this model "
        "(the two embedding sums, 2 per encoder layer, 3 per decoder layer), and at {six} places "
        "with N = 6. It is off here so that every number can be reproduced."
    ),
    "diff.padding": (
        "Padding: sentences of different lengths share a batch by padding the short ones, and "
        "the padding mask (3.2.3) removes the padding keys from every attention, so the results "
        "do not depend on them. Checked: the source with two padding tokens ({pad}) appended "
        "gives the logits of the pair alone; the keep row and the cross-attention weights "
        "(head 1) show the padded columns at 0."
    ),
    "diff.schedule": (
        "The schedule (5.3, Eq. 3): Adam with β1 = 0.9, β2 = 0.98, ε = 10⁻⁹ and a learning rate "
        "that rises linearly for 4000 warm-up steps, then decays as step^(−1/2); for this "
        "d_model and for the base model:"
    ),
    "diff.beam": (
        "Inference (6.1): the trained model translates one token at a time; the paper keeps the "
        "4 best partial translations (beam search with beam size 4), ranks them with a length "
        "penalty α = 0.6, and stops at input length + 50 tokens (see `aiayn translate`)."
    ),
    "summary.title": "Summary",
    "summary.text": (
        "All {n} checks passed: every step of the note, computed by hand, equals what the model "
        "computed; the backward pass by hand equals autograd; the optimizer step equals "
        "torch.optim. The largest absolute difference was {diff} (largest ratio to its "
        "tolerance: {ratio})."
    ),
    # A trained model (--checkpoint).
    "trained.doc.title": "The Transformer, step by step: the note's walkthrough on a trained model",
    "trained.title": "The sentence and the model",
    "trained.text": (
        "This walkthrough replays the study note “Transformer 精简笔记” step by step and with its "
        "symbols, not on the note's toy example but on a trained model translating a real "
        "sentence. Every step proves itself: its formula is computed a second time by hand (plain "
        "NumPy, from the model's parameters and the previous step's values) and compared with "
        "what the PyTorch model computed (aiayn.trace). A mismatch stops the walkthrough with an "
        "error; each ✓ line below is one such comparison, with the largest difference found."
    ),
    "trained.model": (
        "The model: {path}. d_model = {d}, h = {h} heads with d_k = d_v = {dk}, d_ff = {dff}, "
        "N = {n} encoder and {nd} decoder layers, one BPE vocabulary shared by both languages "
        "with |V| = {v} tokens, {p} parameters. Its weights are copied into float64 and dropout "
        "is off: one deterministic pass, so that every number can be checked."
    ),
    "trained.source": (
        "The source “{src}”: the model's own tokenizer splits it into {n} BPE pieces (▁ marks a "
        "space before a piece), and the encoder reads them followed by </s>. These are the rows "
        "of the encoder's matrices:"
    ),
    "trained.pieces.cols": "position | piece | id",
    "trained.translation": (
        "The model's own translation, found as aiayn translate finds it ({search}): “{tgt}”. It "
        "is the target here: the decoder reads it shifted right, starting with <s> (teacher "
        "forcing on the model's own output), and at each position t the token to predict, y_t, is "
        "the one the translation continues with. These are the rows of the decoder's matrices:"
    ),
    "trained.s1.text": (
        "E_src stacks the rows of E for the {n} source tokens. The paper multiplies them by "
        "√d_model = {sqrtd} (3.4) and adds the positional encoding PE, whose entries lie between "
        "−1 and 1: without PE the model could not tell “I love you” from “you love I”. The "
        "explanation the note left for later is in the toy walkthrough (aiayn walkthrough, "
        "“Positional encoding, as promised”). PE is computed here from the formula and compared "
        "with the model's sum."
    ),
    "trained.ln.text": (
        "The note names γ and ε as the trainable parameters. The trainable pair is γ (a scale) "
        "and β (a shift), two vectors of d_model = {d} numbers, which training has set for "
        "every LayerNorm of this model; ε = {eps} is a fixed constant that keeps the division "
        "safe when a row is almost constant. It hardly matters here: this LayerNorm computed "
        "with ε = 0 differs by at most {dd}."
    ),
    "trained.greedy": "greedy search",
    "trained.beam": "beam search with beam size {k} and length penalty α = {alpha}, section 6.1",
    "trained.target.cols": "t | the decoder reads | y_t | id of y_t",
    "trained.shown": (
        "What is shown: of each matrix, its first {rows} rows and {cols} columns, with … and ⋮ "
        "where the rest would be (--rows, --cols); of each attention, heads {heads} of {h}, "
        "numbered from 1 as in the note (--heads); of the vocabulary, the columns of the "
        "translation's tokens and each position's {top} most probable tokens. Every ✓ still "
        "compares the whole matrices, every head included. The note's toy example, with "
        "backpropagation, one optimizer step and the positional encoding explained, is aiayn "
        "walkthrough without --checkpoint."
    ),
    "s13.columns": (
        "Of the |V| = {v} columns, L and P below show those of the translation's tokens; the "
        "checks compare all of them."
    ),
    "s14.top": (
        "Each row is a probability distribution over all |V| = {v} tokens. The table gives, for "
        "each position, the token the translation continues with, its probability, and the {k} "
        "most probable tokens. A greedy search always takes the most probable one; a beam search "
        "keeps the best whole sentence, so at some positions it may continue with another."
    ),
    "s14.top.cols": "t | input | y_t | p(y_t) | the most probable tokens, with p",
    "trained.summary.text": (
        "All {n} checks passed: every step of the note, computed by hand from the trained "
        "model's parameters, equals what the model computed, in every layer and every head. The "
        "largest absolute difference was {diff} (largest ratio to its tolerance: {ratio})."
    ),
}
