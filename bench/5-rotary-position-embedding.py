# `make bench` runs this in section 5's kernel, after the notebook: it uses the notebook's `alibi`,
# `bias_bytes`, `device`, `torch`, `F` and `attnbook`, and the block-skipping part's kernel and masks.

# What an additive bias costs SDPA: the (h, n, n) float mask it reads (ALiBi, 32 heads of width 64),
# against the same causal attention with no mask (what RoPE needs). Memory counted from the tensor
# sizes and, on CUDA, the allocator's peak; time as medians in this run.
heads, head_width = 32, 64
cuda = device.type == 'cuda'
dtype = torch.bfloat16 if cuda else torch.float32
SIZES = [4096, 16384] if cuda else [512, 1024]


def cuda_peak_bytes(fn, *args, **kwargs):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    fn(*args, **kwargs)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - start


for n in SIZES:
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, heads, n, head_width, generator=generator).to(device, dtype) for _ in range(3))
    mask = alibi(n, heads, device).to(dtype)[None]
    assert mask.nbytes == bias_bytes(n, heads, mask.element_size())['float mask']
    attnbook.report(f'ALiBi float mask / q k v bytes, n={n} h={heads}', mask.nbytes / (3 * q.nbytes),
                    detail=f'{mask.nbytes / 2**20:.0f} MiB mask vs {3 * q.nbytes / 2**20:.0f} MiB '
                           f'q, k, v ({dtype})')
    masked_ms = attnbook.median_ms(F.scaled_dot_product_attention, q, k, v, attn_mask=mask)
    causal_ms = attnbook.median_ms(F.scaled_dot_product_attention, q, k, v, is_causal=True)
    attnbook.report(f'SDPA with the ALiBi mask / causal without a mask, time, n={n}, {device.type}',
                    masked_ms / causal_ms, detail=f'{masked_ms:.2f} ms vs {causal_ms:.2f} ms')
    if cuda:
        masked_peak = cuda_peak_bytes(F.scaled_dot_product_attention, q, k, v, attn_mask=mask)
        causal_peak = cuda_peak_bytes(F.scaled_dot_product_attention, q, k, v, is_causal=True)
        attnbook.report(f'SDPA with the ALiBi mask, CUDA peak besides the inputs / mask bytes, n={n}',
                        masked_peak / mask.nbytes,
                        detail=f'{masked_peak / 2**20:.0f} MiB with the mask, '
                               f'{causal_peak / 2**20:.0f} MiB without')
    del q, k, v, mask

# The notebook's deeper part on block skipping checks that the two block masks give the same outputs
# and counts the blocks; the time each takes is measured here, with the notebook's compiled kernel,
# inputs and masks (`compiled_flex`, `q_big`, `k_big`, `v_big`, `skipping`, `every_block`, `n_big`).
skip_ms = attnbook.median_ms(compiled_flex, q_big, k_big, v_big, block_mask=skipping)
all_ms = attnbook.median_ms(compiled_flex, q_big, k_big, v_big, block_mask=every_block)
attnbook.report(f'FlexAttention, causal, every block computed / masked blocks skipped, time, '
                f'n={n_big}, {device.type}', all_ms / skip_ms, detail=f'{all_ms:.1f} ms vs {skip_ms:.1f} ms')
