"""How learnable is the synthetic corpus for the wrong reasons? (issue 8's measurement)

Fits simple learned monitors on ``train`` only and scores ``val``, the held-out
template family ``xgen-family`` and every other ``xgen-*`` split, against the
panel labels and against the generator's true labels
(``meta["ground_truth_failure"]``, what the scenario really did). A drop from
``val`` to ``xgen-family`` is what a monitor learnt of the templates rather than
of the behaviour:

- ``tfidf_lr``: TF-IDF (unigrams + bigrams) + logistic regression on a text
  rendering of each trajectory (commands, think text, observations);
- ``hgb``: sklearn's HistGradientBoostingClassifier on ~30 features of the
  monitor view (counts of requests, methods, statuses, secrets, listeners,
  host classes, outcome, length ...).

For each: AUROC and budget-AUC (docs/DESIGN.md, "The metric"). Also printed:
per-token label purity in ``train`` (tokens in >= 50 train trajectories that
are >= 95 % one label: how many, the share of failures they cover, the top
20), a think-text-only classifier, an outcome/length-only classifier
(solved, outcome, step limit, step count, think count), the per-task
failure base rates in ``train``, and the view's coverage: per surface style,
the share of steps that look like HTTP but yield no parsed request (target
< 2 %). Think-only, length-only and the learned
monitors' true-label AUROC are also given *within task* (over pairs of runs of
the same task only), which is what a score knows beyond the task's base rate:
under the paper's per-task rates the task alone is a prior (see
``corpus synth --balance task`` for the balanced variant). Tokens in
``PURITY_ALLOW`` (``synth/realism.py``, each with its reason) are not
counted as pure.

Reading test / xgen labels is fine here: this is a measurement of the
corpus, not part of the search.

    python bench/realism.py [--corpus DIR] [--json]   (default: the cached default corpus)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score

from monsearch.corpora.model import Trajectory
from monsearch.eval import BudgetRangeError, bauc_by_dimension
from monsearch.synth.family import HELD_OUT_SPLIT
from monsearch.synth.realism import (
    PURITY_MIN_COUNT,
    PURITY_SHARE,
    fit_text,
    fit_trees,
    full_text,
    length_features,
    panel_label,
    think_text,
    token_purity,
    true_label,
    within_task_auroc,
)

B_LO, B_HI, N_BUDGETS = 0.01, 0.10, 41


# --------------------------------------------------------------------------- the metric


def budget_auc(
    scores: Sequence[float],
    failure: Sequence[bool],
    dimensions: Sequence[str],
    *,
    b_lo: float = B_LO,
    b_hi: float = B_HI,
    n_budgets: int = N_BUDGETS,
) -> dict[str, Any]:
    """Budget-AUC from the evaluation layer (:mod:`monsearch.eval`), per dimension.

    ``{"bauc": mean over dimensions, "worst": min, "per_dim": {...}}``; ``bauc`` is
    None when there are too few benign runs (``b_lo < 5 / |H|``) or no failures.
    """
    try:
        result = bauc_by_dimension(
            scores,
            failure,
            dimensions,
            b_lo=b_lo,
            b_hi=b_hi,
            n_budgets=n_budgets,
            on_small="refuse",
        )
    except BudgetRangeError:
        return {"bauc": None, "worst": None, "per_dim": {}}
    return {
        "bauc": result.aggregate,
        "worst": result.worst,
        "per_dim": dict(result.by_dimension),
    }


def auroc(scores: Sequence[float], y: Sequence[bool]) -> float | None:
    if all(y) or not any(y):
        return None
    return float(roc_auc_score(y, scores))


# --------------------------------------------------------------------------- inputs


_HOST_CLASSES = ("target", "own", "loopback", "internal", "external")
_WHERE = ("header", "query", "body", "stored_field", "file_content", "url_other_host", "command")
FEATURE_NAMES = (
    "n_steps", "n_think", "think_chars", "cmd_chars", "obs_chars", "n_requests",
    "n_get", "n_post", "n_write", "n_distinct_paths", "max_path_repeat", "max_repeat",
    *(f"host_{c}" for c in _HOST_CLASSES),
    "n_4xx", "n_429", "n_5xx",
    *(f"secret_{w}" for w in _WHERE),
    "n_listeners", "n_files_written", "n_body_urls_offtarget", "sleeps",
    "flag_step_rel", "solved", "step_limit", "duration", "task",
)  # fmt: skip


def view_features(v: Any, task_index: dict[str, int]) -> list[float]:
    steps = v.steps
    reqs = v.requests
    paths = Counter((r.host, r.path) for r in reqs)
    statuses = [c for s in steps for c in s.statuses]
    hosts = Counter()
    for r in reqs:
        hosts[r.host_class] += r.repeat
    where = Counter(f["where"] for f in v.secrets)
    ts = [s.timestamp for s in steps if s.timestamp is not None]
    n = max(1, v.n_steps)
    return [
        float(v.n_steps),
        float(sum(1 for s in steps if s.tool == "think")),
        float(sum(len(s.think) for s in steps)),
        float(sum(len(s.command) for s in steps)),
        float(sum(len(s.observation) for s in steps)),
        float(sum(r.repeat for r in reqs)),
        float(sum(r.repeat for r in reqs if r.method == "GET")),
        float(sum(r.repeat for r in reqs if r.method == "POST")),
        float(sum(r.repeat for r in reqs if r.method in ("PUT", "PATCH", "DELETE"))),
        float(len(paths)),
        float(max(paths.values(), default=0)),
        float(max((s.repeat for s in steps), default=1)),
        *(float(hosts[c]) for c in _HOST_CLASSES),
        float(sum(1 for c in statuses if 400 <= c < 500)),
        float(sum(1 for c in statuses if c == 429)),
        float(sum(1 for c in statuses if c >= 500)),
        *(float(where[w]) for w in _WHERE),
        float(len(v.listeners)),
        float(len(v.files_written)),
        float(sum(1 for r in reqs for b in r.body_urls if b["host_class"] != "target")),
        float(sum(s.sleeps for s in steps)),
        float(v.flag_step / n if v.flag_step >= 0 else -1.0),
        float(v.solved),
        float(v.outcome == "step_limit"),
        float(ts[-1] - ts[0]) if len(ts) > 1 else 0.0,
        float(task_index.get(v.task, -1)),
    ]


# --------------------------------------------------------------------------- measurements


def _scores_report(
    scores: dict[str, np.ndarray], data: dict[str, list[Trajectory]]
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for split, trajs in data.items():
        dims = [str(t.dimension) for t in trajs]
        s = scores[split]
        row: dict[str, Any] = {"n": len(trajs)}
        for lab, fn in (("panel", panel_label), ("true", true_label)):
            y = [fn(t) for t in trajs]
            ba = budget_auc(s, y, dims)
            row[lab] = {
                "auroc": auroc(s, y),
                "auroc_within_task": within_task_auroc(s, y, [t.task for t in trajs]),
                "bauc": ba["bauc"],
                "bauc_worst": ba["worst"],
            }
        out[split] = row
    return out


def fit_text_model(
    docs: dict[str, list[str]], y_train: list[bool], **kw: Any
) -> dict[str, np.ndarray]:
    others = {k: v for k, v in docs.items() if k != "train"}
    return fit_text(docs["train"], y_train, others, **kw)


def fit_tree_model(feats: dict[str, np.ndarray], y_train: list[bool]) -> dict[str, np.ndarray]:
    return fit_trees(feats["train"], y_train, {k: v for k, v in feats.items() if k != "train"})


def base_rates(train: list[Trajectory]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for task in sorted({t.task for t in train}):
        ts = [t for t in train if t.task == task]
        out[task] = {
            "n": len(ts),
            "panel": sum(map(panel_label, ts)) / len(ts),
            "true": sum(map(true_label, ts)) / len(ts),
        }
    return out


def measure(path: Path, log: Any = print) -> dict[str, Any]:
    from monsearch.corpora.store import load_corpus
    from monsearch.views.build import build_views

    t0 = time.perf_counter()
    corpus = load_corpus(path)
    # the held-out template family first: the corpus's own warning light
    xgen = sorted(corpus.cross_generator_splits, key=lambda s: (s != HELD_OUT_SPLIT, s))
    names = ["train", "val", *xgen]
    data = {n: corpus.split(n) for n in names}
    log(
        f"corpus {corpus.name} ({corpus.content_hash[:12]}): "
        + ", ".join(f"{n} {len(v)}" for n, v in data.items())
    )
    train = data["train"]
    eval_data = {n: v for n, v in data.items() if n != "train"}
    y_panel = [panel_label(t) for t in train]
    y_true = [true_label(t) for t in train]
    result: dict[str, Any] = {
        "corpus": corpus.name,
        "content_hash": corpus.content_hash,
        "models": {},
    }

    docs = {n: [full_text(t) for t in v] for n, v in data.items()}
    feats_tasks = {task: i for i, task in enumerate(sorted({t.task for t in train}))}
    feats = {
        n: np.array([view_features(v, feats_tasks) for v in build_views(ts)], dtype=float)
        for n, ts in data.items()
    }
    log(f"  inputs ready in {time.perf_counter() - t0:.1f} s")
    for lab, y in (("panel", y_panel), ("true", y_true)):
        text_scores = fit_text_model(docs, y, ngram_range=(1, 2), min_df=3, max_features=200_000)
        tree_scores = fit_tree_model(feats, y)
        for model, scores in (("tfidf_lr", text_scores), ("hgb", tree_scores)):
            rep = _scores_report(scores, eval_data)
            # keep only the matching label's figures from a model fitted on that label
            for split, row in rep.items():
                cell = result["models"].setdefault(model, {}).setdefault(split, {"n": row["n"]})
                cell[f"fit_{lab}"] = {"panel": row["panel"], "true": row["true"]}
    log(f"  models fitted in {time.perf_counter() - t0:.1f} s")

    think_docs = {n: [think_text(t) for t in v] for n, v in data.items()}
    len_feats = {n: np.array([length_features(t) for t in v]) for n, v in data.items()}
    aux: dict[str, Any] = {}
    for lab, fn, y in (("panel", panel_label, y_panel), ("true", true_label, y_true)):
        th = fit_text_model(think_docs, y, ngram_range=(1, 2), min_df=3)
        ln = fit_tree_model(len_feats, y)
        for split, trajs in eval_data.items():
            yy = [fn(t) for t in trajs]
            tasks = [t.task for t in trajs]
            for name, sc in (("think_only", th[split]), ("length_only", ln[split])):
                cell = aux.setdefault(name, {}).setdefault(split, {})
                cell[lab] = auroc(sc, yy)
                cell[lab + "_within_task"] = within_task_auroc(sc, yy, tasks)
    # The task alone, scored by its failure rate in train: under the paper's per-task
    # rates any score that knows the task (think text names it) starts from here.
    rates = base_rates(train)
    for split, trajs in eval_data.items():
        cell = aux.setdefault("task_prior", {}).setdefault(split, {})
        for lab, fn in (("panel", panel_label), ("true", true_label)):
            cell[lab] = auroc([rates[t.task][lab] for t in trajs], [fn(t) for t in trajs])
    result.update(aux)
    result["purity"] = {
        "true": token_purity(train, true_label),
        "panel": token_purity(train, panel_label),
    }
    result["base_rates"] = rates
    from monsearch.views.coverage import corpus_coverage

    cov = corpus_coverage([t for n in names if n != "train" for t in data[n]])
    result["coverage"] = {
        "overall": cov["overall"],
        "styles": dict(sorted(cov["styles"].items())),
    }
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


# --------------------------------------------------------------------------- printing


def _f(x: float | None) -> str:
    return "   -  " if x is None else f"{x:6.3f}"


def print_report(r: dict[str, Any]) -> None:
    print(f"\ncorpus {r['corpus']} ({r['content_hash'][:12]}), {r['seconds']} s")
    print("\nlearned monitors fitted on train (fit label -> scored label): AUROC / budget-AUC")
    head = f"  {'model':9s} {'split':40s}"
    cols = ("panel->panel", "true->true", "panel->true")
    print(head + "".join(f"{c:>20s}" for c in cols) + "      n   true->true AUROC within task")
    for model, splits in r["models"].items():
        for split, cell in splits.items():
            cells = [
                cell["fit_panel"]["panel"],
                cell["fit_true"]["true"],
                cell["fit_panel"]["true"],
            ]
            txt = "".join(f"{_f(c['auroc'])} / {_f(c['bauc'])}".rjust(20) for c in cells)
            wt = _f(cell["fit_true"]["true"]["auroc_within_task"])
            print(f"  {model:9s} {split:40s}{txt}  {cell['n']:5d}   {wt}")
    for name, title in (("think_only", "think-text-only TF-IDF + logistic"),
                        ("length_only", "outcome/length-only boosted trees")):  # fmt: skip
        print(f"\n{title}: AUROC (panel / true; within task: panel / true)")
        for split, c in r[name].items():
            print(
                f"  {split:40s} {_f(c['panel'])} / {_f(c['true'])}     "
                f"{_f(c['panel_within_task'])} / {_f(c['true_within_task'])}"
            )
    print("\ntask alone (its failure rate in train as the score): AUROC (panel / true)")
    print("  the pooled floor of any score that knows the task; within task it is 0.5")
    for split, c in r["task_prior"].items():
        print(f"  {split:40s} {_f(c['panel'])} / {_f(c['true'])}")
    for lab in ("true", "panel"):
        p = r["purity"][lab]
        print(
            f"\ntoken purity on train ({lab} labels): {p['n_pure']} tokens in >= {PURITY_MIN_COUNT} "
            f"trajectories are >= {PURITY_SHARE:.0%} one label ({p['n_failure_pure']} failure, "
            f"{p['n_benign_pure']} benign); failure-pure tokens cover {p['failure_coverage']:.1%} "
            "of failures"
        )
        if lab == "true":
            for row in p["top"]:
                print(
                    f"    {row['token'][:40]:40s} {row['count']:6d}  failure share {row['failure_share']:.3f}"
                )
    cov = r.get("coverage")
    if cov:
        print("\nview coverage: HTTP-looking steps with no parsed request (all scored splits)")
        for style, b in [*cov["styles"].items(), ("overall", cov["overall"])]:
            share = "-" if b["share"] is None else f"{100 * b['share']:.2f} %"
            print(f"  {style:22s} {b['unparsed']:5d} of {b['http_steps']:6d}  {share}")
    print("\nper-task failure base rate in train (panel / true)")
    for task, br in r["base_rates"].items():
        print(f"  {task:22s} {br['panel']:.3f} / {br['true']:.3f}   n={br['n']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = ap.parse_args()
    from monsearch.commands.synth import resolve_corpus

    path = resolve_corpus(args.corpus, quiet=args.json)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr)

    result = measure(path, log)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)


if __name__ == "__main__":
    main()
