"""The HTML run report's drawings: line numbers that stay on their lines, seed labels
that do not cover the tree, the selected program marked in one colour."""

from __future__ import annotations

import re

from monsearch.search.lineage import LineageStore
from monsearch.search.report import SELECTED_COLOUR, _highlight, lineage_svg
from monsearch.search.tree import Lineage


def test_source_line_numbers_are_inline_with_their_lines():
    source = "PARAMS = {'w': 1.0}\n\n\ndef score(traj):\n    return PARAMS['w']\n"
    html = _highlight(source, "python")
    # One <pre>: numbers cannot take another line height than the code beside them.
    assert html.count("<pre") == 1 and "<table" not in html
    text = re.sub(r"<[^>]+>", "", html)
    # Every line starts with its own number (the gap is the number's padding).
    numbered = [ln for ln in text.splitlines() if re.match(r"\s*\d+", ln)]
    assert len(numbered) == source.count("\n")
    assert re.match(r"\s*4def score", numbered[3]) and re.match(r"\s*5 {4}return", numbered[4])


def test_seed_labels_sit_left_of_their_roots(small_run):
    run_dir, outcome = small_run
    with LineageStore(run_dir / "lineage.sqlite", readonly=True) as store:
        lineage = Lineage(store.records())
    svg = lineage_svg(lineage, outcome["selected"]["id"], outcome["best"]["id"])
    circles = [(float(x), float(y), float(r)) for x, y, r in re.findall(
        r'<circle cx="([\d.]+)" cy="([\d.]+)" r="([\d.]+)" fill="(?!none)', svg)]
    seeds = re.findall(r'<text x="([\d.]+)" y="([\d.]+)"[^>]*text-anchor="end"[^>]*>seed ', svg)
    # A seed that is also the selected or best candidate is labelled as that instead.
    labelled = {outcome["selected"]["id"], outcome["best"]["id"]}
    assert len(seeds) == len([r for r in lineage.roots if r not in labelled]) >= 1
    for x, y in seeds:
        x, y = float(x), float(y)
        # Its root is the node just right of the label's end, on the same row ...
        root = min(circles, key=lambda c: abs(c[1] - y) + abs(c[0] - x))
        assert root[0] > x and abs(root[1] - y) < 0.1
        # ... and the label (drawn leftwards from x) lies left of every node.
        assert x <= min(c[0] - c[2] for c in circles) + 0.1
        assert x - 7 * len("seed stronger") >= 0  # inside the picture


def test_the_selected_program_is_labelled_in_its_colour_when_it_is_also_the_best(small_run):
    run_dir, outcome = small_run
    with LineageStore(run_dir / "lineage.sqlite", readonly=True) as store:
        lineage = Lineage(store.records())
    selected = outcome["selected"]["id"]
    svg = lineage_svg(lineage, selected, selected)
    label = re.search(rf'<text [^>]*fill="(#\w+)"[^>]*>{selected} selected ', svg)
    ring = re.findall(r'<circle [^>]*fill="none" stroke="(#\w+)"', svg)
    # Ring and label agree: the selected program's green, not the best point's orange.
    assert label and label.group(1) == SELECTED_COLOUR and ring == [SELECTED_COLOUR]
