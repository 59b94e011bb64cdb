# `make bench` runs this in the self-attention section's kernel, after the notebook. On CUDA it uses
# the notebook's n = 8192 benchmark (`ours_big`, `X_big`, `ours_ms`, `torch_ms`):
# both layers hand their step 3 to SDPA, so SDPA alone on the same q, k, v (batch 8, 8 heads of
# width 64, float32, no mask) is the floor under both, and each ratio to it is what the projections,
# the reshapes and Python's calls add. On a CPU the notebook skips that size and so does this.
if device.type == 'cuda':
    with torch.no_grad():
        q, k, v = (ours_big.split_heads(W(X_big)) for W in (ours_big.W_q, ours_big.W_k, ours_big.W_v))
        sdpa_ms = attnbook.median_ms(F.scaled_dot_product_attention, q, k, v, min_run_time=1)
    shape = f'q, k, v {tuple(q.shape)}'
    attnbook.report(f'MultiHeadSelfAttention / SDPA alone, batch=8 d=512 h=8 n=8192 ({shape})',
                    ours_ms / sdpa_ms, detail=f'{ours_ms:.1f} ms vs {sdpa_ms:.1f} ms')
    attnbook.report(f'nn.MultiheadAttention / SDPA alone, batch=8 d=512 h=8 n=8192 ({shape})',
                    torch_ms / sdpa_ms, detail=f'{torch_ms:.1f} ms vs {sdpa_ms:.1f} ms')
    del q, k, v
