"""The what-if planner's API (no UI): build a plan from the catalog, edit it, evaluate it.

from sparktop.plan.catalog import load_catalog
from sparktop.plan import Baseline, Plan, evaluate, load_plan, save_plan

catalog = load_catalog()                      # built-in + local models + user catalog
catalog.list("qwen coder")                    # entries matching a filter
plan = Plan(catalog)
item = plan.add("llama3.1:70b", context=32768)
plan.set(item.uid, "parallel", 2)             # PlanError if the value is bad
plan.params(item.uid)                         # editable parameters: type, choices, value, default
result = evaluate(plan, Baseline.clean())     # or Baseline.from_snapshot(snapshot)
result.fit.verdict, result.compute.verdict, result.to_dict()
# with what this machine knows (plan/measured.py), looked up once up front, or given as it is:
evaluate(plan, baseline, facts=LiveFacts(footprints=store.all, snapshot=snapshot))
evaluate_known(plan.workloads(), catalog, baseline, known=PlanFacts({item.uid: ItemFacts(peak=footprint)}))
save_plan(plan, "plan.toml")
"""

from sparktop.plan.evaluate import (
    Baseline,
    Evaluation,
    ItemResult,
    estimate_workload,
    evaluate,
    evaluate_known,
)
from sparktop.plan.io import dumps_plan, load_plan, loads_plan, save_plan
from sparktop.plan.items import Param, Plan, PlanError, PlanItem, Workload

__all__ = [
    "Baseline",
    "Evaluation",
    "ItemResult",
    "Param",
    "Plan",
    "PlanError",
    "PlanItem",
    "Workload",
    "dumps_plan",
    "estimate_workload",
    "evaluate",
    "evaluate_known",
    "load_plan",
    "loads_plan",
    "save_plan",
]
