"""`sparktop plan`: will these workloads fit, and will they fight for the GPU? A launch guard:

    sparktop plan llama3.1:70b faster-whisper-large-v3 && docker compose up -d

Exit status (the high side of the estimates unless --optimistic): 0 fits, 1 tight, 2 OOM risk or won't fit,
3 bad input. Workloads are catalog names
(forgiving case, spaces and underscores), optionally with parameters: `llama3.1:70b,context=32768,parallel=2`;
or a plan file (--file), the same TOML the What-if tab saves. Figures are decimal GB (1e9 bytes).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparktop.commands.common import EXIT_BAD_INPUT
from sparktop.core.safe_text import json_visible, say, visible_lines
from sparktop.plan import Baseline, Evaluation, Plan, PlanError, evaluate, load_plan, save_plan
from sparktop.plan.catalog.loader import load_catalog
from sparktop.plan.catalog.lookup import Catalog
from sparktop.plan.catalog.params import kind_label
from sparktop.plan.estimate import GB
from sparktop.plan.verdict import FITS, OOM_RISK, TIGHT, WONT_FIT
from sparktop.settings.files import SettingsError, read_bytes

if TYPE_CHECKING:
    from sparktop.core.snapshot import Snapshot
    from sparktop.plan.measured import LiveFacts
    from sparktop.settings.config import Config

EXIT_FITS, EXIT_TIGHT, EXIT_OOM = 0, 1, 2  # the verdict; a bad flag or value is common.EXIT_BAD_INPUT
EXIT_CODES = {FITS: EXIT_FITS, TIGHT: EXIT_TIGHT, OOM_RISK: EXIT_OOM, WONT_FIT: EXIT_OOM}
EXIT_TABLE = """\
exit status, from the high estimates (an underestimate is what freezes a Spark);
with --optimistic, from the mid ones:
  0  fits        under the safe line (80 GB on a Spark; scaled to the pool on a smaller machine)
  1  tight       between the safe and aggressive lines
  2  OOM risk    over the aggressive line (100 GB), or won't fit: more than the pool
  3  bad input   unknown workload, bad parameter or plan file, usage error
"""


def _facts(snap: Snapshot | None, use_measured: bool) -> LiveFacts:
    """Peaks measured on this machine (the footprint store) and, with a live baseline, what runs now."""
    from sparktop.footprints.store import shared_store
    from sparktop.plan.measured import LiveFacts

    store = shared_store()
    if store.status:
        say("sparktop plan", store.status)
    return LiveFacts(
        footprints=store.all, snapshot=snap, use_measured=use_measured, slowdowns=store.slowdowns
    )


def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    """The `plan` subcommand's arguments. Its parser is a `CliParser`: a usage error exits 3 (bad input), not
    argparse's 2, which here means "OOM risk"."""
    from sparktop.commands.common import add_config_argument

    parser.description = __doc__.split("\n\n")[0]
    parser.epilog = EXIT_TABLE
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "workloads",
        nargs="*",
        metavar="WORKLOAD",
        help="catalog name, optionally with parameters: NAME,key=value,...",
    )
    parser.add_argument(
        "--file", "-f", type=Path, metavar="PLAN.toml", help="a plan file ([[workload]] tables)"
    )
    parser.add_argument(
        "--clean",
        action="store_true",
        help="plan for this machine empty (its pool and GPU, system overhead only) instead of what runs now",
    )
    parser.add_argument(
        "--machine",
        choices=("here", "spark"),
        default=None,  # here, unless a plan file names its baseline
        help="spark: plan for an empty DGX Spark (128 GB, 48 SMs) instead of this machine (implies --clean)",
    )
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="use the estimates even where a peak was measured on this machine",
    )
    parser.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    parser.add_argument(
        "--optimistic",
        action="store_true",
        help="exit status from the mid estimates instead of the high ones",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="show how each figure was computed")
    parser.add_argument(
        "--list",
        nargs="?",
        const="",
        metavar="FILTER",
        dest="list_filter",
        help="list catalog workloads and exit; FILTER: words, kind:training, source:local",
    )
    parser.add_argument("--save", type=Path, metavar="PLAN.toml", help="also write the plan to this file")
    add_config_argument(parser)  # the lines and the model servers of the live baseline
    parser.add_argument(
        "--catalog",
        type=Path,
        metavar="CATALOG.toml",
        help="user catalog (default: $XDG_CONFIG_HOME/sparktop/catalog.toml)",
    )
    parser.add_argument(
        "--no-discover",
        action="store_true",
        help="do not look for local models (Ollama, Hugging Face cache, GGUF files)",
    )
    parser.add_argument("--safe", type=float, metavar="GB", help="safe line in GB (default: config, else 80)")
    parser.add_argument(
        "--max", type=float, metavar="GB", help="aggressive line in GB (default: config, else 100)"
    )


def _settings(args: argparse.Namespace) -> tuple[Config, float | None, float | None, list[str]]:
    """The dashboard's config file (`--config`, else the default one) with --safe/--max on top, and the
    user's lines in bytes from it: None keeps the reference's 80/100 GB (scaled on a small machine). The
    same rules as the dashboard's (SettingsError naming the flag); the file's problems are returned to be
    reported."""
    from sparktop.settings.config import apply_overrides, load_config

    config, problems = load_config(getattr(args, "config", None))
    config = apply_overrides(config, {"safe_gb": ("--safe", args.safe), "max_gb": ("--max", args.max)})
    chosen = config.model_fields_set
    safe = config.safe_gb * GB if "safe_gb" in chosen else None
    high = config.max_gb * GB if "max_gb" in chosen else None
    return config, safe, high, problems


def _live_snapshot(config: Config | None = None) -> Snapshot:
    """One live sample, with the model servers the config lists and a bounded wait for their first answers
    (a plan next to a loaded model uses its measured peak)."""
    from sparktop.sources.live import LiveSource
    from sparktop.sources.snapshot_source import settled_sample

    source = LiveSource(config=config)
    try:
        return settled_sample(source)
    finally:
        source.close()


def parse_workload_arg(text: str) -> tuple[str, dict[str, str]]:
    """`NAME,key=value,...` -> (NAME, {key: value})."""
    name, *pairs = text.split(",")
    params: dict[str, str] = {}
    for pair in pairs:
        if not pair.strip():
            continue
        if "=" not in pair:
            raise PlanError(f"expected key=value after the name in {text!r}, got {pair!r}")
        key, value = pair.split("=", 1)
        params[key.strip()] = value.strip()
    if not name.strip():
        raise PlanError(f"no workload name in {text!r}")
    return name.strip(), params


def build_plan(catalog: Catalog, workloads: Sequence[str], file: Path | None) -> Plan:
    plan = load_plan(file, catalog) if file else Plan(catalog)
    for arg in workloads:
        name, params = parse_workload_arg(arg)
        try:
            plan.add(name, **params)
        except PlanError as exc:
            raise exc.located(arg, None) from None
    return plan


# --- output -------------------------------------------------------------------------------------------------


def _g(value: float) -> str:
    return f"{value / GB:.1f}"


def _part_g(value: float) -> str:
    gb = value / GB
    return f"{gb:.2f}" if gb < 10 else f"{gb:.1f}"


def render(ev: Evaluation, verbose: bool = False) -> str:
    b = ev.baseline
    lines = ev.lines
    out: list[str] = []
    head = b.description  # names the machine: "clean spark-01 (25.3 GB): Linux + Docker only", "live: ..."
    out.append(
        f"What-if: {head}, pool {_g(lines.pool).removesuffix('.0')} GB, lines "
        f"{_g(lines.safe).removesuffix('.0')} / {_g(lines.aggressive).removesuffix('.0')} GB; GB = 1e9 bytes"
    )
    out.append("")
    width = max([len("WORKLOAD"), *(len(r.name) for r in ev.items)]) + 2
    width = min(width, 48)
    header = f"  {'WORKLOAD':<{width}}{'KIND':<11}{'GPU USE':<13}{'LOW':>7}{'MID':>7}{'HIGH':>7}  DECODE"
    out.append(header)
    for r in ev.items:
        w = r.workload
        kind = kind_label(w.kind, w.engine)
        t = r.total
        decode = ""
        if r.decode:
            decode = f"~{r.decode.mid:.0f} tok/s" if r.decode.mid >= 10 else f"~{r.decode.mid:.1f} tok/s"
        name = r.name if len(r.name) < width - 1 else r.name[: width - 2] + "~"
        out.append(
            f"  {name:<{width}}{kind:<11}{w.gpu_use:<13}{_g(t.low):>7}{_g(t.mid):>7}{_g(t.high):>7}  "
            f"{decode}".rstrip()
        )
        if verbose:
            for p in r.estimate.parts:
                detail = f"  ({p.detail})" if p.detail else ""
                out.append(f"      {p.label} {_part_g(p.bytes.mid)}{detail}")
            for note in r.estimate.notes:
                out.append(f"      note: {note}")
        else:
            out.append("      " + " + ".join(f"{p.label} {_part_g(p.bytes.mid)}" for p in r.estimate.parts))
        if w.entry and w.entry.reference_gb and not w.fixed:
            lo, _, hi = w.entry.reference_gb
            ref = f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"
            out.append(f"      (reference table: ~{ref} GB)")
    base_label = "baseline: Linux + Docker daemon" if b.source == "clean" else "baseline: in use now"
    bu = b.used
    out.append(f"  {base_label:<{width + 24}}{_g(bu.low):>7}{_g(bu.mid):>7}{_g(bu.high):>7}")
    t = ev.total
    out.append(f"  {'TOTAL':<{width + 24}}{_g(t.low):>7}{_g(t.mid):>7}{_g(t.high):>7}")
    out.append("")
    out.append(f"  Memory   {ev.fit.verdict.upper():<10}{ev.fit.reason}")
    if ev.gpu_fit is not None:
        out.append(f"  GPU mem  {ev.gpu_fit.verdict.upper():<10}{ev.gpu_fit.reason}")
    out.append(f"  Compute  {ev.compute.verdict.upper():<10}{ev.compute.reason}")
    for extra in ev.compute.reasons[1:]:
        out.append(f"  {'':<19}{extra}")
    for title, text in ev.contention_lines():
        out.append(f"  {title:<9}{'':<10}{text}")
    if ev.notes:
        out.append("")
        out.append("  Notes:")
        out += [f"  - {n}" for n in ev.notes]
    return "\n".join(out) + "\n"


def list_rows(catalog: Catalog, filter_text: str, facts: LiveFacts | None = None) -> list[dict[str, Any]]:
    """The catalog entries matching `filter_text`, each with its estimate (`gb`: mid, decimal GB; None when
    it cannot be estimated alone) and, from `facts`, the peak measured on this machine."""
    from sparktop.plan.measured import measured_line

    entries = catalog.list(filter_text)
    plan = Plan(catalog)
    peaks = facts.entry_peaks(entries) if facts is not None else {}
    rows: list[dict[str, Any]] = []
    for entry in entries:
        measured = peaks.get(entry.name)
        try:
            item = plan.add(entry.name)
            ev = evaluate(Plan(catalog, [item]))
            gb: float | None = round(ev.items[0].total.mid / GB, 1)
        except PlanError:
            gb = None
        rows.append({
            "name": entry.name,
            "kind": kind_label(entry.kind, entry.engine),
            "gb": gb,
            "source": entry.source,
            "description": entry.description,
            "measured": measured_line(measured) if measured else None,
        })  # fmt: skip
    return rows


def render_list(catalog: Catalog, filter_text: str, facts: LiveFacts | None = None) -> str:
    """The catalog as a table; `facts`: a peak measured on this machine is named beside the estimate."""
    rows = list_rows(catalog, filter_text, facts)
    if not rows:
        return f"no catalog workload matches {filter_text!r}\n"
    width = min(max(len(r["name"]) for r in rows) + 2, 48)
    out = [f"{'NAME':<{width}}{'KIND':<11}{'GB':>7}  {'SOURCE':<14}DESCRIPTION"]
    for r in rows:
        gb = "?" if r["gb"] is None else f"{r['gb']:.1f}"
        desc = f"{r['description']} · {r['measured']}" if r["measured"] else r["description"]
        out.append(f"{r['name']:<{width}}{r['kind']:<11}{gb:>7}  {r['source']:<14}{desc}")
    return "\n".join(out) + "\n"


# --- entry points ------------------------------------------------------------------------------------------


def _fail(message: str, as_json: bool, suggestions: list[str] | None = None, more: Sequence[str] = ()) -> int:
    """Say `message` and each of `more` (the other problems of a plan file), one line each; with --json,
    also one JSON object on stdout: `error` (the first), `problems` (all) and `suggestions`."""
    for line in (message, *more):
        say("sparktop plan", line)
    if as_json:
        answer = {"error": message, "problems": [message, *more], "suggestions": suggestions or []}
        print(json_visible(json.dumps(answer)))
    return EXIT_BAD_INPUT


def run(args: argparse.Namespace) -> int:
    """`sparktop plan` as a subcommand of `sparktop` (see cli.SUBCOMMANDS)."""
    return run_plan(args)


add_arguments = add_plan_arguments


def run_plan(args: argparse.Namespace, baseline_provider: Callable[[], Snapshot] | None = None) -> int:
    """Run `sparktop plan` with parsed arguments. `baseline_provider` returns the live snapshot (default: a
    LiveSource sample); --machine spark does without it."""
    as_json = bool(getattr(args, "json", False))

    try:  # the lines first: a bad --safe/--max is refused before anything is loaded or measured
        config, safe, aggressive, problems = _settings(args)
    except SettingsError as exc:
        return _fail(str(exc), as_json)
    for problem in problems:
        say("sparktop plan", f"config: {problem}")
    user_catalog = getattr(args, "catalog", None)
    if user_catalog is not None:
        if not Path(user_catalog).exists():
            return _fail(f"no catalog file {user_catalog}", as_json)
        try:
            read_bytes(Path(user_catalog))  # a file the user named must be one that can be read
        except SettingsError as exc:
            return _fail(str(exc), as_json)
    try:
        catalog = load_catalog(user_catalog, discover=not getattr(args, "no_discover", False))
    except Exception as exc:  # a broken install: say so, do not trace back
        return _fail(f"cannot load the catalog: {exc}", as_json)
    for error in catalog.errors:
        say("sparktop plan", f"catalog: {error}")
    problems = [f"config: {p}" for p in problems] + [f"catalog: {e}" for e in catalog.errors]

    if getattr(args, "list_filter", None) is not None:
        facts = _facts(None, use_measured=True)
        if as_json:
            rows = list_rows(catalog, args.list_filter, facts)
            print(json_visible(json.dumps({"workloads": rows, "errors": problems}, indent=2)))
        else:
            sys.stdout.write(visible_lines(render_list(catalog, args.list_filter, facts)))
        return 0

    try:
        plan = build_plan(catalog, args.workloads or [], getattr(args, "file", None))
    except PlanError as exc:
        return _fail(str(exc), as_json, exc.suggestions, [str(p) for p in exc.problems[1:]])
    if not len(plan):
        return _fail("nothing to plan: name workloads (see --list) or give --file PLAN.toml", as_json)

    # A plan file's own baseline (the What-if tab saves its `b`) unless the command line names one.
    machine, clean = getattr(args, "machine", None), bool(args.clean)
    if machine is None and not clean and plan.baseline is not None:
        machine, clean = ("spark" if plan.baseline == "spark" else "here"), plan.baseline == "clean"
    baseline: Baseline
    fallback_note = None
    snap = None
    if machine == "spark":
        baseline = Baseline.clean()
    else:
        # --clean is this machine empty (its pool, GPU and SM count), as `b` in the What-if tab: it reads
        # the machine too, and leaves out only what runs on it now.
        try:
            snap = baseline_provider() if baseline_provider else _live_snapshot(config)
            baseline = Baseline.clean_of(snap) if clean else Baseline.from_snapshot(snap)
        except Exception as exc:
            fallback_note = f"live baseline unavailable ({exc}): planned for an empty DGX Spark"
            say("sparktop plan", fallback_note)
            baseline = Baseline.clean()
        if clean:
            snap = None  # what runs now is not part of a clean plan

    ev = evaluate(plan, baseline, safe, aggressive, facts=_facts(snap, use_measured=not args.estimate))
    if fallback_note:
        ev.notes.append(fallback_note)
    if getattr(args, "save", None):
        try:
            save_plan(plan, args.save)
        except OSError as exc:
            return _fail(f"cannot write {args.save}: {exc.strerror or exc}", as_json)
    if as_json:
        # Problems in the user's files travel with the answer, so a script sees why a default was used.
        print(json_visible(json.dumps({**ev.to_dict(), "errors": problems}, indent=2)))
    else:
        # Workload names come from the command line, plan files and model servers: no raw controls out.
        sys.stdout.write(visible_lines(render(ev, verbose=getattr(args, "verbose", False))))
    verdict = ev.mid_verdict if getattr(args, "optimistic", False) else ev.verdict
    return EXIT_CODES[verdict]


def main(argv: Sequence[str] | None = None, baseline_provider: Callable[[], Snapshot] | None = None) -> int:
    from sparktop.commands.common import CliParser

    parser = CliParser(prog="sparktop plan")  # for tests and `python -m sparktop.commands.plan`
    add_plan_arguments(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)
    return run_plan(args, baseline_provider)


if __name__ == "__main__":
    sys.exit(main())
