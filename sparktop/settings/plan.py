"""A plan file's shape: `[[workload]]` tables and nothing else. What each table's keys mean (a catalog name,
parameter values) is checked by the plan itself (sparktop.plan), with the same rules as the What-if editor;
this model makes sure there are tables to check, so `workload = [1, 2]` is a message, not a traceback."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from sparktop.settings.files import KeyLines, SettingsError, parse_toml, problems_from


class PlanFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    # What the plan is judged against (the What-if tab saves its `b` choice): live, clean or spark.
    baseline: Literal["live", "clean", "spark"] | None = None
    workload: list[dict[str, Any]] = []


def read_plan_file(text: str, source: str) -> tuple[PlanFile, KeyLines]:
    """The file's shape checked, and the key lines to locate problems inside its tables. SettingsError on the
    first problem with the shape."""
    data = parse_toml(text, source)
    lines = KeyLines(text)
    try:
        plan = PlanFile.model_validate(data)
    except ValidationError as exc:
        problem = problems_from(exc, source, lines)[0]
        if problem.message == "unknown key":
            problem.message = "unknown table (a plan holds [[workload]] tables)"
        raise problem from None
    return plan, lines


def read_plan_tables(text: str, source: str) -> tuple[list[tuple[int | None, dict[str, Any]]], KeyLines]:
    """Each `[[workload]]` table with the line it starts on, and the key lines to locate problems inside them.
    SettingsError on the first problem with the file's shape."""
    plan, lines = read_plan_file(text, source)
    return [(lines.line(("workload", i)), table) for i, table in enumerate(plan.workload)], lines


__all__ = ["PlanFile", "SettingsError", "read_plan_file", "read_plan_tables"]
