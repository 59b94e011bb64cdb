"""Where the tests keep what they measured and the screenshots of what failed: test-artifacts/."""
import pathlib

ARTIFACTS = pathlib.Path(__file__).resolve().parents[1] / "test-artifacts"


def record(line, filename):
    """Print a `measured: ...` line and append it to test-artifacts/<filename>."""
    print(line)
    ARTIFACTS.mkdir(exist_ok=True)
    with open(ARTIFACTS / filename, "a") as report:
        report.write(line + "\n")
