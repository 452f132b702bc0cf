"""`sparktop completion SHELL`: a completion script for every command and option, generated from the argparse
parser itself by shtab, so it never drifts from what sparktop accepts; the values an option takes (demo
scenarios, units, themes, the planner's workloads) are offered too.

    sparktop completion bash > ~/.local/share/bash-completion/completions/sparktop
    sparktop completion zsh > ~/.zfunc/_sparktop        # with fpath+=(~/.zfunc) before compinit
    sparktop completion fish > ~/.config/fish/completions/sparktop.fish
    sparktop completion tcsh > ~/.sparktop.tcsh          # with `source ~/.sparktop.tcsh` in ~/.tcshrc
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import shtab

SHELLS = ("bash", "zsh", "fish", "tcsh")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Print a completion script for SHELL on standard output. bash: save it as "
        "~/.local/share/bash-completion/completions/sparktop; zsh: as _sparktop in a directory of $fpath; "
        "fish: as ~/.config/fish/completions/sparktop.fish; tcsh: as ~/.sparktop.tcsh, with "
        "`source ~/.sparktop.tcsh` in ~/.tcshrc. The themes and workloads offered are those known when "
        "the script is made."
    )
    parser.add_argument("shell", choices=SHELLS)


def option_values() -> dict[str, list[str]]:
    """The values each option or argument (by its dest) can take, for the script to offer."""
    from sparktop.plan.catalog import load_catalog
    from sparktop.settings.config import UNITS
    from sparktop.settings.theme import theme_names
    from sparktop.sources.demo import DEMO_SCENARIOS

    catalog = load_catalog(discover=False)  # built in and the user's catalog: no disk scan for a script
    return {
        "demo": list(DEMO_SCENARIOS),
        "units": list(UNITS),
        "theme": theme_names(),
        "workloads": sorted(catalog.entries),
    }


def _actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:  # argparse has no public list of a parser's actions
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _actions(sub)


def run(opts: argparse.Namespace) -> int:
    from sparktop.commands.main import build_parser

    parser = build_parser(every_command=True)
    values = option_values()
    # This parser only describes the command line to shtab (which offers an action's `choices`); the one
    # that reads arguments checks them itself, with its own messages, and takes themes made later.
    for action in _actions(parser):
        if action.dest in values and not action.choices:
            action.choices = values[action.dest]
    print(shtab.complete(parser, shell=opts.shell))
    return 0
