"""Evaluation: the metrics, the fitness record and the selective-escalation cost model.

The one home of every metric in monsearch (docs/DESIGN.md, "The metric" and "Selective
escalation cost model"). Pure, vectorised functions over numpy score and label arrays:

- :mod:`.metrics`: recall at an audit budget (Neyman-Pearson tie randomisation),
  budget-AUC, AUROC, McClish partial AUC, the small-benign-set guard;
- :mod:`.dimensions`: BAUC per failure dimension, the aggregate and the worst;
- :mod:`.summary`: every metric of one score array as one record;
- :mod:`.bootstrap`: the paired, stratified bootstrap of the aggregate;
- :mod:`.fitness`: a candidate's fitness on a split, with the oracle caps;
- :mod:`.costs`, :mod:`.likelihood`, :mod:`.escalation`: the cost model, likelihood
  ratios, and fitting / evaluating escalation policies.
"""

from .bootstrap import BootstrapResult, bootstrap_aggregate
from .costs import DEFAULT_COSTS_TOML, CostFileError, CostModel, load_costs, parse_costs
from .dimensions import DimensionBAUC, bauc_by_dimension
from .escalation import (
    EscalationCurve,
    EscalationFit,
    EscalationPolicy,
    ScoredSet,
    escalation_curves,
    evaluate_escalation,
    fit_escalation,
)
from .fitness import Fitness, OracleSpend, evaluate_fitness
from .metrics import (
    B_HI,
    B_LO,
    N_BUDGETS,
    RECALL_BUDGETS,
    BudgetRangeError,
    BudgetRangeWarning,
    auroc,
    budget_auc,
    budget_grid,
    chance_bauc,
    flag_rate,
    np_threshold,
    partial_auroc,
    recall_at_budget,
    resolve_budget_range,
)
from .summary import Metrics, compute_metrics

__all__ = [
    "B_HI",
    "B_LO",
    "DEFAULT_COSTS_TOML",
    "N_BUDGETS",
    "RECALL_BUDGETS",
    "BootstrapResult",
    "BudgetRangeError",
    "BudgetRangeWarning",
    "CostFileError",
    "CostModel",
    "DimensionBAUC",
    "EscalationCurve",
    "EscalationFit",
    "EscalationPolicy",
    "Fitness",
    "Metrics",
    "OracleSpend",
    "ScoredSet",
    "auroc",
    "bauc_by_dimension",
    "bootstrap_aggregate",
    "budget_auc",
    "budget_grid",
    "chance_bauc",
    "compute_metrics",
    "escalation_curves",
    "evaluate_escalation",
    "evaluate_fitness",
    "fit_escalation",
    "flag_rate",
    "load_costs",
    "np_threshold",
    "parse_costs",
    "partial_auroc",
    "recall_at_budget",
    "resolve_budget_range",
]
