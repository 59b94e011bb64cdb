# `make bench` runs this in the self-attention section's kernel, after the notebook (which defines
# MultiHeadSelfAttention). First, on any device: both paths of a layer with d = 64 and h = 4, batch 2,
# no mask, at a few lengths (the CPU keeps them small, CUDA runs large ones too): the written-out
# path (return_weights=True) against the fused one (SDPA). Both do the same matrix products; the fused
# one skips writing the (batch, h, n, n) weights to memory and reading them back, so the ratio is
# what that costs. On CUDA it also checks, from the allocator's statistics, that the fused call's
# peak stays below the size of those weights while the written-out one reaches it.
timed_layer = MultiHeadSelfAttention(64, 4).to(device).eval()
with torch.no_grad():
    for n_timed in [128, 256, 512] if device.type == 'cpu' else [1024, 2048, 4096, 8192]:
        X_timed = torch.randn(2, n_timed, 64, generator=torch.Generator().manual_seed(5)).to(device)
        explicit = lambda X_timed=X_timed: timed_layer(X_timed, return_weights=True)
        fused = lambda X_timed=X_timed: timed_layer(X_timed)
        weights_mib = 2 * 4 * n_timed * n_timed * 4 / 2**20  # batch 2, 4 heads, n x n, float32
        peaks = ''
        if device.type == 'cuda':  # the fused call keeps no (batch, h, n, n) tensor; the explicit one does
            explicit_mib, fused_mib = (attnbook.cuda_peak_bytes(fn)[0] / 2**20 for fn in (explicit, fused))
            assert fused_mib < weights_mib <= explicit_mib, (n_timed, fused_mib, explicit_mib)
            peaks = f'; peak MiB written-out {explicit_mib:.1f}, fused {fused_mib:.1f}'
        explicit_ms, fused_ms = attnbook.mean_ms(explicit, number=3), attnbook.mean_ms(fused, number=3)
        attnbook.report(f'written-out / fused attention layer, batch=2 d=64 h=4 n={n_timed}',
                        explicit_ms / fused_ms, detail=f'{explicit_ms:.2f} ms vs {fused_ms:.2f} ms; '
                        f'weights {weights_mib:.1f} MiB{peaks}')
del timed_layer, X_timed

# Then a layer at full size, on CUDA only: batch 8, d = 512, h = 8, n = 8192,
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
