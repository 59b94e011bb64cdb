# `make bench` runs this in section 6's kernel, after the notebook: it uses the notebook's `attnbook`
# and the extrapolation experiment's `accuracies` and `LENGTHS`.

# The experiment's numbers, which the notebook shows only as a figure and as verdicts (they may
# differ in the last digits between devices): mean and min-max over the seeds at each test length.
for name, table in accuracies.items():
    mean, low, high = table.mean(0).tolist(), table.amin(0).tolist(), table.amax(0).tolist()
    cells = ', '.join(f'{n}: {m:.2f} [{lo:.2f}-{hi:.2f}]'
                      for n, m, lo, hi in zip(LENGTHS, mean, low, high, strict=True))
    shown = name.replace(' = ', '=')  # 'YaRN, c = 1': a measurement's name cannot hold ' = '
    attnbook.report(f'extrapolation accuracy at 8 n_train, {shown} ({len(table)} seeds)', mean[-1],
                    detail=f'mean [min-max] by test length: {cells}')
