"""The size budget: no package module over 1000 lines (STYLE's hard cap), and a report."""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nuvec"
HARD_CAP = 1000


def line_counts() -> dict[str, int]:
    return {
        str(path.relative_to(PACKAGE.parent)): len(path.read_text().splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_no_module_exceeds_the_hard_cap():
    over = {name: n for name, n in line_counts().items() if n > HARD_CAP}
    assert not over, f"modules over {HARD_CAP} lines: {over}"


if __name__ == "__main__":
    counts = line_counts()
    for name, n in sorted(counts.items(), key=lambda item: -item[1]):
        print(f"{n:6d}  {name}")
    print(f"{sum(counts.values()):6d}  total in {len(counts)} modules")
