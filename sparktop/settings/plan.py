"""A plan file's shape: `[[workload]]` tables and nothing else. What each table's keys mean (a catalog name,
parameter values) is checked by the plan itself (sparktop.plan), with the same rules as the What-if editor;
this model makes sure there are tables to check, so `workload = [1, 2]` is a message, not a traceback."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from sparktop.settings.files import KeyLines, SettingsError, parse_toml, problems_from


class PlanFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    workload: list[dict[str, Any]] = []


def read_plan_tables(text: str, source: str) -> tuple[list[tuple[int | None, dict[str, Any]]], KeyLines]:
    """Each `[[workload]]` table with the line it starts on, and the key lines to locate problems inside them.
    SettingsError on the first problem with the file's shape."""
    data = parse_toml(text, source)
    lines = KeyLines(text)
    try:
        plan = PlanFile.model_validate(data)
    except ValidationError as exc:
        problem = problems_from(exc, source, lines)[0]
        if problem.message == "unknown key":
            problem.message = "unknown table (a plan holds [[workload]] tables)"
        raise problem from None
    return [(lines.line(("workload", i)), table) for i, table in enumerate(plan.workload)], lines


__all__ = ["PlanFile", "SettingsError", "read_plan_tables"]
