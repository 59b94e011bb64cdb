# `make bench` runs this in the relative-encoding section's kernel, after the notebook: it uses the
# notebook's `gather_by_distance`, `skew_logits` (Q E^T written into the padded buffer with out=:
# inference only, autograd refuses out=), `skew_trainable` (F.pad on the product: a model can train
# with it, as with the notebook's copy-free `skew_view`), `extra_bytes`, `device`, `torch` and `attnbook`.
# The Music Transformer's relative term, skew vs naive gather, d_h = 64, one head, float32:
# memory at n = 2048 (bytes allocated besides the n x n logits; on CUDA also the allocator's peak),
# time at n = 1024 (medians, both in this run).
d_h = 64


n = 2048
Q, E = torch.randn(n, d_h, device=device), torch.randn(n, d_h, device=device)
naive_bytes, _ = extra_bytes(gather_by_distance, Q, E)
skew_bytes, _ = extra_bytes(skew_logits, Q, E)
attnbook.report(f'skew with out= / naive gather, memory besides the logits, n={n} d_h={d_h}',
                skew_bytes / naive_bytes, target=0.01,
                detail=f'{skew_bytes / 2**10:.0f} KiB vs {naive_bytes / 2**20:.0f} MiB')
trainable_bytes, _ = extra_bytes(skew_trainable, Q, E)  # the product and F.pad's n x (n + 1) copy
attnbook.report(f'skew that trains / naive gather, memory besides the logits, n={n} d_h={d_h}',
                trainable_bytes / naive_bytes, target=2 / d_h,
                detail=f'{trainable_bytes / 2**20:.0f} MiB vs {naive_bytes / 2**20:.0f} MiB')
skew_total, naive_total = skew_bytes + n * n * 4, naive_bytes + n * n * 4  # counting the logits too
attnbook.report(f'skew with out= / naive gather, memory with the logits, n={n} d_h={d_h}',
                skew_total / naive_total,
                detail=f'{skew_total / 2**20:.0f} MiB vs {naive_total / 2**20:.0f} MiB')
if device.type == 'cuda':
    def peak_besides_logits(fn):  # the allocator's peak, less the (n, n) logits fn returns
        peak, logits = attnbook.cuda_peak_bytes(fn, Q, E)
        return peak - logits.nbytes

    naive_peak, skew_peak = peak_besides_logits(gather_by_distance), peak_besides_logits(skew_logits)
    attnbook.report(f'skew with out= / naive gather, CUDA peak besides the logits, n={n} d_h={d_h}',
                    max(skew_peak, 0) / naive_peak, target=0.01,
                    detail=f'{skew_peak / 2**10:.0f} KiB vs {naive_peak / 2**20:.0f} MiB')

n = 1024
Q, E = torch.randn(n, d_h, device=device), torch.randn(n, d_h, device=device)
naive_ms = attnbook.median_ms(gather_by_distance, Q, E, min_run_time=1)
skew_ms = attnbook.median_ms(skew_logits, Q, E, min_run_time=1)
attnbook.report(f'skew with out= / naive gather, time, n={n} d_h={d_h}, {device.type}', skew_ms / naive_ms,
                target=0.5, detail=f'{skew_ms:.2f} ms vs {naive_ms:.1f} ms')
trainable_ms = attnbook.median_ms(skew_trainable, Q, E, min_run_time=1)
attnbook.report(f'skew that trains / naive gather, time, n={n} d_h={d_h}, {device.type}',
                trainable_ms / naive_ms, target=0.5, detail=f'{trainable_ms:.2f} ms vs {naive_ms:.1f} ms')
