"""aiayn/flops.py: the FLOPs of a training step, counted by hand."""


def test_flop_count_matches_a_hand_count() -> None:
    """2 m k n per matmul; the output layer and attention included; training = 3 x forward."""
    from aiayn import ModelConfig
    from aiayn.flops import forward_flops, training_flops

    cfg = ModelConfig(vocab_size=10, d_model=4, n_heads=2, d_ff=8, n_layers=1)
    B, S, T, D, F, V = 1, 3, 2, 4, 8, 10
    attn = lambda lq, lk: 2 * lq * D * D + 2 * lk * D * 2 * D + 2 * lq * D * D + 2 * 2 * lq * lk * D  # noqa: E731
    enc = attn(S, S) + 2 * 2 * S * D * F
    dec = attn(T, T) + attn(T, S) + 2 * 2 * T * D * F
    assert forward_flops(B, S, T, cfg) == enc + dec + 2 * T * D * V
    assert training_flops(B, S, T, cfg) == 3 * forward_flops(B, S, T, cfg)
    # The output layer counts only the target tokens that reach the loss (not padding).
    assert forward_flops(B, S, T, cfg, n_out=1) == enc + dec + 2 * 1 * D * V
