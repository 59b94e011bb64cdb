# `make bench` runs this in the CNN/RNN/self-attention section's kernel, after the notebook: it uses the
# notebook's ConvLayer, RNNLayer, SelfAttentionLayer, formulas, fit_exponents, torch, math and attnbook.
# 1. One forward pass of each layer against n at d = 64 (median, torch.utils.benchmark): milliseconds,
#    the rate of FLOPs, and the exponent of n fitted to the times beside that of the FLOPs. The RNN gets
#    the least work done per second (asserted: less than a fifth of the others' rate at every n).
# 2. One RNN step against d, beside the size of W_s and one tiny operation (tanh of 64 numbers): at
#    small d a step costs a few fixed-cost operations; once W_s outgrows a core's own caches, its size.
# 3. The attention layer's pieces timed alone, beside the whole layer, with the minor page faults of
#    one call (Linux/macOS, CPU): pieces that keep two fresh n x n matrices alive may get them from the
#    operating system on every call, so the whole is not the sum of its parts timed alone.
import math

device_type = torch.get_default_device().type
d_time = 64
sizes = [128, 256, 512, 1024] if device_type == 'cpu' else [512, 1024, 2048, 4096, 8192]
torch.manual_seed(0)
timed = {'convolution': ConvLayer(d_time, 3), 'RNN': RNNLayer(d_time),
         'attention layer': SelfAttentionLayer(d_time)}
print(f'{device_type}, d = {d_time}: milliseconds per forward pass (GFLOP/s)')
print('n'.rjust(6), *(name.rjust(22) for name in timed))
times = {name: [] for name in timed}
with torch.no_grad():
    for n in sizes:
        X_time = torch.randn(1, n, d_time, generator=torch.Generator().manual_seed(0))
        row = []
        for name, layer in timed.items():
            ms = attnbook.median_ms(layer, X_time, min_run_time=0.2)
            times[name].append(ms)
            row.append(f'{ms:9.2f} ({formulas[name](n, d_time, 3) / ms / 1e6:7.1f})')
        print(str(n).rjust(6), *(cell.rjust(22) for cell in row))
for name, ms in times.items():  # least-squares slopes of log time and log FLOPs against log n
    time_exponent = fit_exponents([[n] for n in sizes], ms)[0]
    flop_exponent = fit_exponents([[n] for n in sizes], [formulas[name](n, d_time, 3) for n in sizes])[0]
    attnbook.report(f'{name} time exponent in n ({sizes[0]} to {sizes[-1]}, {device_type})',
                    time_exponent, detail=f'its FLOPs grow as n^{flop_exponent:.2f} there')
rates = {name: [formulas[name](n, d_time, 3) / t for n, t in zip(sizes, ms, strict=True)]
         for name, ms in times.items()}
assert all(rnn * 5 < min(conv, attention) for rnn, conv, attention
           in zip(rates['RNN'], rates['convolution'], rates['attention layer'], strict=True))
attnbook.report(f'RNN / attention layer time at n 1024, d 64 ({device_type})',
                times['RNN'][sizes.index(1024)] / times['attention layer'][sizes.index(1024)],
                detail='with 18x fewer FLOPs')

vector = torch.randn(1, 64, generator=torch.Generator().manual_seed(0))
tiny_us = attnbook.median_ms(torch.tanh, vector, min_run_time=0.2) * 1e3
print(f'\none tiny operation (tanh of 64 numbers): {tiny_us:.1f} µs')
print('     d   W_s KiB   µs per step   tiny operations per step   W_s read at GB/s')
steps = 16
with torch.no_grad():
    for d in [16, 64, 256, 1024, 2048]:
        rnn = RNNLayer(d)
        X_step = torch.randn(1, steps, d, generator=torch.Generator().manual_seed(0))
        step_us = attnbook.median_ms(rnn, X_step, min_run_time=0.2) * 1e3 / steps
        print(f'{d:6d} {4 * d * d / 2**10:9.0f} {step_us:13.1f} {step_us / tiny_us:26.1f} '
              f'{4 * d * d / step_us / 1e3:18.2f}')
        if d == 64:
            attnbook.report(f'RNN step at d 64 / one tiny operation ({device_type})', step_us / tiny_us)

try:
    import resource
except ImportError:  # Windows
    resource = None


def page_faults(fn, *args, calls=10):
    """Minor page faults per call of fn(*args), after one warm-up call; None where not counted."""
    if resource is None or device_type != 'cpu':
        return None
    fn(*args)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn(*args)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


attention = timed['attention layer']
print('\n' + 'n'.rjust(6), 'scores MiB'.rjust(11), 'piece'.rjust(26), 'ms'.rjust(8),
      'page faults per call'.rjust(22))
with torch.no_grad():
    for n in [sizes[0], sizes[-1]]:
        X_time = torch.randn(1, n, d_time, generator=torch.Generator().manual_seed(0))
        Q, K, V = attention.W_q(X_time), attention.W_k(X_time), attention.W_v(X_time)
        scores = Q @ K.transpose(1, 2)
        scaled = scores / math.sqrt(d_time)
        weights = torch.softmax(scaled, dim=-1)
        pieces = {'four projections': (lambda X: [p(X) for p in (attention.W_q, attention.W_k,
                                                                  attention.W_v, attention.W_o)], X_time),
                  'Q Kᵀ': (torch.matmul, Q, K.transpose(1, 2)),
                  'scale': (torch.div, scores, math.sqrt(d_time)),
                  'softmax of scaled scores': (lambda S: torch.softmax(S, dim=-1), scaled),
                  'scale, then softmax': (lambda S: torch.softmax(S / math.sqrt(d_time), dim=-1), scores),
                  'weights V': (torch.matmul, weights, V),
                  'whole layer': (attention, X_time)}
        for name, (fn, *args) in pieces.items():
            faults = page_faults(fn, *args)
            print(str(n).rjust(6), f'{n * n * 4 / 2**20:11.2f}', name.rjust(26),
                  f'{attnbook.median_ms(fn, *args, min_run_time=0.2):8.3f}',
                  ('' if faults is None else f'{faults:.0f}').rjust(22))
