"""Regenerate the documentation's pictures from one real quick-start run.

Evolves ``monsearch evolve --budget 100 --seed 0`` (the README's main job) on the
embedded default corpus in a temporary runs folder, opens its sealed test with a
throw-away ledger (the user's is untouched), and writes into ``docs/``:

    lineage.svg     the run's lineage tree, as ``monsearch report`` draws it
    fitness.png     val fitness over evaluations, as ``monsearch report`` plots it
    escalation.png  the sealed test's escalation curves (``monsearch test``'s own plot)
    figures.json    when, from which run and code, and the figures the pictures show

    python docs/make_figures.py [--run RUN_DIR] [--budget 100] [--seed 0]

``--run`` reuses an existing run folder (its sealed test is opened if it has none yet).
Run it with the project's Python from the repository's root; it takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent


def _monsearch(args: list[str], env: dict[str, str], cwd: Path) -> dict:
    # Not from the repository's root: ``-m`` would import its folders, not the install.
    cmd = [sys.executable, "-m", "monsearch", *args]
    print("+ monsearch " + " ".join(args), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        sys.exit(f"monsearch {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return json.loads(proc.stdout)


def _git_head() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, cwd=ROOT)
    return proc.stdout.strip() or "unknown"


def _svg_file(markup: str) -> str:
    """The report's inline SVG as a file of its own (a file needs the namespace)."""
    text = str(markup)
    if "xmlns=" not in text.split(">", 1)[0]:
        text = text.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n"


def pictures(run_dir: Path, env: dict[str, str], tmp: Path) -> dict:
    """Write the three pictures of ``run_dir`` into docs/; what they show."""
    from monsearch.search.report import fitness_plot_png, lineage_svg
    from monsearch.search.runs import resolve_run
    from monsearch.search.tree import Lineage

    run = resolve_run(str(run_dir), None)
    with run.store(readonly=True) as store:
        lineage = Lineage(store.records())
    selected = run.selected()
    best = lineage.best()
    selected_id = selected.id if selected else None
    (DOCS / "lineage.svg").write_text(
        _svg_file(lineage_svg(lineage, selected_id, best.id if best else None)),
        encoding="utf-8",
    )
    (DOCS / "fitness.png").write_bytes(fitness_plot_png(lineage, selected_id))

    reports = sorted((run_dir / "test").glob("*/report.json"))
    if not reports:
        _monsearch(["test", str(run_dir.resolve()), "--json"], env, tmp)
        reports = sorted((run_dir / "test").glob("*/report.json"))
    report_dir = reports[-1].parent
    plot = report_dir / "escalation.png"
    if not plot.is_file():
        sys.exit(f"{report_dir}: the sealed test wrote no escalation.png")
    shutil.copyfile(plot, DOCS / "escalation.png")
    return {
        "run_id": run.id,
        "candidates": len(lineage.records),
        "selected": selected_id,
        "selected_val_fitness": selected.fitness if selected else None,
        "best_val_fitness": best.fitness if best else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=None, help="an existing run folder")
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="monsearch-figures-") as tmp:
        env = dict(os.environ)
        env["MONSEARCH_LEDGER"] = str(Path(tmp) / "sealed-ledger.json")
        command = f"monsearch evolve --budget {args.budget} --seed {args.seed}"
        if args.run is None:
            out = _monsearch(["evolve", "--budget", str(args.budget), "--seed", str(args.seed),
                              "--runs-dir", tmp, "--run-id", "figures", "--json", "--quiet"],
                             env, Path(tmp))
            run_dir = Path(out.get("run_dir") or Path(tmp) / "figures")
        else:
            run_dir, command = args.run, f"an existing run ({args.run.name})"
        shown = pictures(run_dir, env, Path(tmp))
    record = {
        "made": datetime.now(UTC).strftime("%Y-%m-%d"),
        "by": "python docs/make_figures.py",
        "run": command,
        # The code that evolved the run: known only when this script evolved it.
        "code": _git_head() if args.run is None else None,
        **shown,
    }
    (DOCS / "figures.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
