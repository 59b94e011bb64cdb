# `make bench` runs this in the positional-encoding section's kernel, after the notebook: it uses the
# notebook's `explorer`, `sinusoidal_table`, `d2l` and `attnbook`.
# Slider update (recompute + redraw + encode as the widget sends it, JPEG) at n=d=512 and at n=1000,
# d=410, against drawing the same heatmap from scratch with d2l.show_heatmaps and encoding it as
# Jupyter shows a figure (savefig to PNG); medians of >= 10 updates, one run. The explorer's picture
# has twice the pixels of its CSS size in each direction (sharp on a projector at 150 %), so d2l's
# redraw is timed at 100 dpi (what d2l shows by default) and at 200 dpi (the same pixels as ours).
import matplotlib.pyplot as plt


def d2l_redraw(n, d, dpi=100):
    d2l.show_heatmaps(sinusoidal_table(n, d)[None, None], xlabel='j', ylabel='i',
                      figsize=(3.5, 4), cmap='Blues')
    fig = plt.gcf()
    attnbook.png_bytes(fig, dpi=dpi)
    plt.close(fig)


explorer.set(d=512, n=512, first_column=6)
columns = iter([7, 6] * 1000)  # a column-slider move: recompute P, redraw the data, encode
column_ms = attnbook.median_ms(lambda: explorer.set(first_column=next(columns)), min_run_time=1)
sizes = iter([511, 512] * 1000)  # an n-slider move also redraws axes and ticks
n_ms = attnbook.median_ms(lambda: explorer.set(n=next(sizes)), min_run_time=1)
redraw_ms = attnbook.median_ms(d2l_redraw, 512, 512, min_run_time=1)
redraw_2x_ms = attnbook.median_ms(d2l_redraw, 512, 512, dpi=200, min_run_time=1)
explorer.set(d=410, n=1000, first_column=0)  # the largest table a reader drags through
sizes = iter([999, 1000] * 1000)
n_large_ms = attnbook.median_ms(lambda: explorer.set(n=next(sizes)), min_run_time=1)
redraw_large_ms = attnbook.median_ms(d2l_redraw, 1000, 410, min_run_time=1)
redraw_large_2x_ms = attnbook.median_ms(d2l_redraw, 1000, 410, dpi=200, min_run_time=1)
explorer.set(d=32, n=60, first_column=6)  # the size of the section's figures
columns = iter([7, 6] * 1000)
small_column_ms = attnbook.median_ms(lambda: explorer.set(first_column=next(columns)), min_run_time=1)
sizes = iter([61, 60] * 1000)
small_n_ms = attnbook.median_ms(lambda: explorer.set(n=next(sizes)), min_run_time=1)
redraw_small_ms = attnbook.median_ms(d2l_redraw, 60, 32, min_run_time=1)
for label, ms in [('column', small_column_ms), ('n', small_n_ms)]:
    attnbook.report(f'{label} slider update, n=60, d=32 / d2l.show_heatmaps redraw at 100 dpi',
                    ms / redraw_small_ms, detail=f'{ms:.0f} ms vs {redraw_small_ms:.0f} ms')
explorer.set(d=128, n=200, first_column=40)  # back to where the section opens it
for label, ms, d2l_ms, d2l_2x_ms in [('column slider update', column_ms, redraw_ms, redraw_2x_ms),
                                     ('n slider update', n_ms, redraw_ms, redraw_2x_ms)]:
    for dpi, baseline_ms in [('100 dpi', d2l_ms), ('200 dpi (same pixels)', d2l_2x_ms)]:
        attnbook.report(f'{label} / d2l.show_heatmaps redraw at {dpi}, n=d=512', ms / baseline_ms,
                        target=0.4, detail=f'{ms:.0f} ms vs {baseline_ms:.0f} ms')
for dpi, baseline_ms in [('100 dpi', redraw_large_ms), ('200 dpi (same pixels)', redraw_large_2x_ms)]:
    attnbook.report(f'n slider update, n=1000, d=410 / d2l.show_heatmaps redraw at {dpi}',
                    n_large_ms / baseline_ms, target=0.4,
                    detail=f'{n_large_ms:.0f} ms vs {baseline_ms:.0f} ms')
