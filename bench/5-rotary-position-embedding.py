# `make bench` runs this in section 5's kernel, after the notebook: it uses the notebook's `alibi`,
# `bias_bytes`, `device`, `torch`, `F` and `attnbook`, its score_mods with their inputs and float masks,
# and the block-skipping part's masks.
import warnings

from torch.nn.attention.flex_attention import create_block_mask, flex_attention

# The notebook checks each score_mod written out for every (g, i, j) (`flex_reference`), because
# FlexAttention's first call costs a second or more of setup on one core; FlexAttention itself runs
# them here (uncompiled), with the causal BlockMask, against the float masks.
causal_blocks = create_block_mask(causal_rule, None, None, n_kv, n_kv, device=device)
with warnings.catch_warnings():
    warnings.simplefilter('ignore')          # "called without torch.compile()": fine for checking values
    qkv = (q_heads, k_heads, v_heads)  # the notebook's inputs of its score_mod checks
    for bias_name, mod, float_mask in [('ALiBi', alibi_mod, alibi(n_kv, heads)), ('T5', t5_mod, t5_bias),
                                       ('Shaw', shaw_mod, shaw_bias)]:
        flexed = flex_attention(*qkv, score_mod=mod, block_mask=causal_blocks)
        torch.testing.assert_close(flexed, attend_explicitly(*qkv, float_mask), msg=bias_name)
        torch.testing.assert_close(flexed, flex_reference(*qkv, mod), msg=bias_name)

# What an additive bias costs SDPA: the (h, n, n) float mask it reads (ALiBi, 32 heads of width 64),
# against the same causal attention with no mask (what RoPE needs). Memory counted from the tensor
# sizes and, on CUDA, the allocator's peak; time as medians in this run.
heads, head_width = 32, 64
cuda = device.type == 'cuda'
dtype = torch.bfloat16 if cuda else torch.float32
SIZES = [4096, 16384] if cuda else [512, 1024]


for n in SIZES:
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, heads, n, head_width, generator=generator).to(device, dtype) for _ in range(3))
    mask = alibi(n, heads).to(device, dtype)[None]   # the notebook set torch's default device
    assert mask.nbytes == bias_bytes(n, heads, mask.element_size())['float mask']
    attnbook.report(f'ALiBi float mask / q k v bytes, n={n} h={heads}', mask.nbytes / (3 * q.nbytes),
                    detail=f'{mask.nbytes / 2**20:.0f} MiB mask vs {3 * q.nbytes / 2**20:.0f} MiB '
                           f'q, k, v ({dtype})')
    masked_ms = attnbook.median_ms(F.scaled_dot_product_attention, q, k, v, attn_mask=mask)
    causal_ms = attnbook.median_ms(F.scaled_dot_product_attention, q, k, v, is_causal=True)
    attnbook.report(f'SDPA with the ALiBi mask / causal without a mask, time, n={n}, {device.type}',
                    masked_ms / causal_ms, detail=f'{masked_ms:.2f} ms vs {causal_ms:.2f} ms')
    if cuda:
        masked_peak = attnbook.cuda_peak_bytes(F.scaled_dot_product_attention, q, k, v, attn_mask=mask)[0]
        causal_peak = attnbook.cuda_peak_bytes(F.scaled_dot_product_attention, q, k, v, is_causal=True)[0]
        attnbook.report(f'SDPA with the ALiBi mask, CUDA peak besides the inputs / mask bytes, n={n}',
                        masked_peak / mask.nbytes,
                        detail=f'{masked_peak / 2**20:.0f} MiB with the mask, '
                               f'{causal_peak / 2**20:.0f} MiB without')
    del q, k, v, mask

# The notebook's deeper part on block skipping builds the two block masks (`skipping`, `every_block`,
# at `n_big`) and counts the blocks each computes; compiling the kernel costs seconds, so here the
# compiled kernel is checked to give the same outputs with both, and each is timed.
big_inputs = torch.randn(3, 1, 4, n_big, 64, generator=torch.Generator().manual_seed(5))
q_big, k_big, v_big = big_inputs.to(device).unbind(0)
compiled_flex = torch.compile(flex_attention)
torch.testing.assert_close(compiled_flex(q_big, k_big, v_big, block_mask=skipping),
                           compiled_flex(q_big, k_big, v_big, block_mask=every_block))
skip_ms = attnbook.median_ms(compiled_flex, q_big, k_big, v_big, block_mask=skipping)
all_ms = attnbook.median_ms(compiled_flex, q_big, k_big, v_big, block_mask=every_block)
attnbook.report(f'FlexAttention, causal, every block computed / masked blocks skipped, time, '
                f'n={n_big}, {device.type}', all_ms / skip_ms, detail=f'{all_ms:.1f} ms vs {skip_ms:.1f} ms')
