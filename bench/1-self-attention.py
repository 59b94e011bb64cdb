# `make bench` runs this in the self-attention section's kernel, after the notebook (which defines
# MultiHeadSelfAttention). A layer at full size, on CUDA only: batch 8, d = 512, h = 8, n = 8192,
# float32, no weights and no mask. Ours against nn.MultiheadAttention: both hand the attention to
# SDPA, so the ratio compares the work around it, our three projections W_q, W_k, W_v (and Python's
# calls) against PyTorch's one packed in_proj_weight and its reshapes; the target is at most 1.1.
# Then SDPA alone on the same q, k, v is the floor under both, and each ratio to it is what the
# projections, the reshapes and Python's calls add. A CPU skips this size.
if device.type == 'cuda':
    batch_big, d_big, h_big, n_big = 8, 512, 8, 8192
    ours_big = MultiHeadSelfAttention(d_big, h_big).to(device).eval()
    torch_big = nn.MultiheadAttention(d_big, h_big, bias=False, batch_first=True).to(device).eval()
    X_big = torch.randn(batch_big, n_big, d_big, generator=torch.Generator().manual_seed(6)).to(device)
    with torch.no_grad():
        ours_ms = attnbook.median_ms(lambda: ours_big(X_big), min_run_time=1)
        torch_ms = attnbook.median_ms(lambda: torch_big(X_big, X_big, X_big, need_weights=False),
                                      min_run_time=1)
        q, k, v = (ours_big.split_heads(W(X_big)) for W in (ours_big.W_q, ours_big.W_k, ours_big.W_v))
        sdpa_ms = attnbook.median_ms(F.scaled_dot_product_attention, q, k, v, min_run_time=1)
    attnbook.report('MultiHeadSelfAttention / nn.MultiheadAttention, batch=8 d=512 h=8 n=8192',
                    ours_ms / torch_ms, target=1.1, detail=f'{ours_ms:.1f} ms vs {torch_ms:.1f} ms')
    shape = f'q, k, v {tuple(q.shape)}'
    attnbook.report(f'MultiHeadSelfAttention / SDPA alone, batch=8 d=512 h=8 n=8192 ({shape})',
                    ours_ms / sdpa_ms, detail=f'{ours_ms:.1f} ms vs {sdpa_ms:.1f} ms')
    attnbook.report(f'nn.MultiheadAttention / SDPA alone, batch=8 d=512 h=8 n=8192 ({shape})',
                    torch_ms / sdpa_ms, detail=f'{torch_ms:.1f} ms vs {sdpa_ms:.1f} ms')
    del ours_big, torch_big, X_big, q, k, v
else:
    print('the n=8192 benchmark runs on CUDA only')
