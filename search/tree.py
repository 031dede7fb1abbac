"""The shape of a run's lineage, for the terminal tree and the HTML report.

The tree follows each candidate's *first* parent (the one its diff is against);
further parents (crossovers) are kept as extra edges. A run of a few hundred
candidates is too deep to nest one level per generation, so the layout nests only
at branch points: a node's *main* child (the one leading to a target, else the one
with the most descendants) is laid out right after it, at the same level, as a
*continuation*; its other children hang under it. Nesting depth then grows with
the logarithm of the run's size, not with its depth in generations.

Views: ``all`` (every candidate), ``focus`` (what leads to the selected and best
candidates, plus their children; other children are counted, not shown), and
``program`` (the same around one candidate).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .lineage import CandidateRecord


@dataclass
class Lineage:
    """Every candidate of a run, indexed by id, with first-parent children."""

    records: list[CandidateRecord]
    by_id: dict[str, CandidateRecord] = field(init=False)
    children: dict[str, list[str]] = field(init=False)
    roots: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.records = sorted(self.records, key=lambda r: r.seq)
        self.by_id = {r.id: r for r in self.records}
        self.children = {r.id: [] for r in self.records}
        self.roots = []
        for r in self.records:
            parent = self.first_parent(r.id)
            if parent is None:
                self.roots.append(r.id)
            else:
                self.children[parent].append(r.id)

    def first_parent(self, cid: str) -> str | None:
        """The tree parent; None for seeds (and for a parent missing from the store)."""
        parents = self.by_id[cid].parent_ids
        return parents[0] if parents and parents[0] in self.by_id else None

    def best(self) -> CandidateRecord | None:
        """The highest val fitness among ``ok`` candidates (earliest on ties, as the engine)."""
        best = None
        for r in self.records:
            if r.ok and (best is None or r.fitness > best.fitness):
                best = r
        return best

    def ancestors(self, ids: Iterable[str]) -> set[str]:
        """``ids`` and all their ancestors through every parent (crossovers included)."""
        out: set[str] = set()
        stack = [i for i in ids if i in self.by_id]
        while stack:
            cid = stack.pop()
            if cid in out:
                continue
            out.add(cid)
            stack.extend(p for p in self.by_id[cid].parent_ids if p in self.by_id)
        return out

    def path(self, cid: str) -> list[CandidateRecord]:
        """The first-parent chain from a seed down to ``cid``."""
        chain = []
        current: str | None = cid
        seen: set[str] = set()
        while current is not None and current not in seen:
            seen.add(current)
            chain.append(self.by_id[current])
            current = self.first_parent(current)
        return chain[::-1]

    def depth(self) -> dict[str, int]:
        """Depth of each candidate in the first-parent tree (seeds: 0)."""
        out: dict[str, int] = {}
        for r in self.records:  # parents precede children in seq order
            parent = self.first_parent(r.id)
            out[r.id] = 0 if parent is None else out.get(parent, 0) + 1
        return out


def focus_ids(lineage: Lineage, targets: Iterable[str]) -> set[str]:
    """The focused view: the targets, their children, and every ancestor of those."""
    start = set()
    for t in targets:
        if t in lineage.by_id:
            start.add(t)
            start.update(lineage.children[t])
    return lineage.ancestors(start)


@dataclass
class TreeItem:
    """One line of the laid-out tree.

    ``continuation``: the item is the child of the item just above it at the same
    level; otherwise it is a child of the item it hangs under (or a seed at the top).
    ``nested``: the items hanging under this one (its other shown children, each
    starting a chain). ``hidden``: its children the view leaves out.
    """

    id: str
    continuation: bool
    nested: list[TreeItem] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)


#: Deepest a laid-out tree may nest one level per generation before chains are used.
MAX_PLAIN_DEPTH = 8


def layout(
    lineage: Lineage, shown: set[str], targets: Sequence[str] = (), *, compress: bool | None = None
) -> list[TreeItem]:
    """The shown candidates as chains (see the module doc); top level: one chain per seed.

    ``compress`` None: chains only when plain nesting would go deeper than
    :data:`MAX_PLAIN_DEPTH` (a shallow tree reads best nested as it is).
    """
    if compress is None:
        depth = lineage.depth()
        compress = max((depth[i] for i in shown), default=0) >= MAX_PLAIN_DEPTH
    size: dict[str, int] = {}
    holds_target: dict[str, int] = {}
    rank = {t: i for i, t in enumerate(targets)}
    for r in reversed(lineage.records):  # children before parents
        if r.id not in shown:
            continue
        kids = [k for k in lineage.children[r.id] if k in shown]
        size[r.id] = 1 + sum(size[k] for k in kids)
        # The best-ranked target (lowest index) in the subtree, len(targets) if none.
        holds_target[r.id] = min(
            [rank.get(r.id, len(rank))] + [holds_target[k] for k in kids]
        )

    def main_child(kids: list[str]) -> str | None:
        if not compress:
            return None
        with_target = [k for k in kids if holds_target[k] < len(rank)]
        if with_target:
            return min(with_target, key=lambda k: (holds_target[k], lineage.by_id[k].seq))
        # A leaf is never a continuation: children without descendants read best nested.
        branching = [k for k in kids if size[k] > 1]
        if not branching:
            return None
        return max(branching, key=lambda k: (size[k], -lineage.by_id[k].seq))

    def chain(start: str) -> list[TreeItem]:
        items = []
        current: str | None = start
        continuation = False
        while current is not None:
            all_kids = lineage.children[current]
            kids = [k for k in all_kids if k in shown]
            main = main_child(kids)
            item = TreeItem(current, continuation)
            for k in kids:
                if k != main:
                    item.nested.extend(chain(k))
            item.hidden = [k for k in all_kids if k not in shown]
            items.append(item)
            current, continuation = main, True
        return items

    out: list[TreeItem] = []
    for root in lineage.roots:
        if root in shown:
            out.extend(chain(root))
    return out


def max_nesting(items: list[TreeItem]) -> int:
    """How deep the laid-out tree nests (1 for a flat list)."""
    return 0 if not items else 1 + max(max_nesting(i.nested) for i in items)
