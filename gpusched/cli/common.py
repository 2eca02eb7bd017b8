"""The Typer app and what every command shares: options, error handling, --json output.

Exit codes: 0 everything fits, 1 something Pending / deadlocked / unallocatable, 2 unreadable input.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer
from pydantic_core import to_jsonable_python
from rich.console import Console
from rich.table import Table

from ..errors import GpuschedError, Infeasible
from ..files import write_files
from ..planner.frag import DEFAULT_SIZES

app = typer.Typer(
    name="gpusched",
    help="A GPU placement planner for Kubernetes: the scheduler's view, the hardware's view, the best plan.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _group() -> None:
    """Keep `gpusched COMMAND` a group when the console script loaded one module with a single command (import,
    map): Typer would otherwise run that command as the whole program and read COMMAND as its argument."""


_CONTROL = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(code) not in "\n\t"}


class _PlainConsole(Console):
    """A console that never interprets what it prints: names and messages come from input files, so no rich
    markup (`[/bold]`), no emoji codes, and control characters (ANSI escapes) shown as `\\x1b`, not sent."""

    def render_str(self, text: str, **options: Any) -> Any:
        return super().render_str(text.translate(_CONTROL), **{**options, "markup": False, "emoji": False})


def console(stderr: bool = False, **options: Any) -> Console:
    """Every console of the CLI: plain text (see _PlainConsole), no highlighting, lines never broken mid-word."""
    return _PlainConsole(stderr=stderr, highlight=False, soft_wrap=True, markup=False, emoji=False, **options)


out = console()
err = console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="print the result as JSON (a documented, stable shape)")]
ClusterArg = Annotated[str, typer.Argument(help="cluster file (JSON/YAML), scenario file, or built-in scenario name")]
SizesOpt = Annotated[
    str, typer.Option("--sizes", help="job sizes for the fragmentation report, comma-separated (1,2,4,8 always)")
]


def run(body: Callable[[], int]) -> None:
    """Run a command body; bad input becomes one clear message on stderr and exit code 2."""
    try:
        code = body()
    except Infeasible as error:  # a well-formed request with no answer (or none found in time): exit 1
        err.print(f"no solution: {error}", markup=False)
        raise typer.Exit(error.exit_code) from None
    except GpuschedError as error:  # each error's exit code comes from gpusched.errors, the one place
        err.print(f"error: {error}", markup=False)
        raise typer.Exit(error.exit_code) from None
    except ValueError as error:  # legacy: library ValueErrors still read as bad input until they become InputError
        err.print(f"error: {error}", markup=False)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:  # Ctrl-C where no command handles signals (an --apply run does): one line, not a trace
        err.print("error: interrupted by SIGINT", markup=False)
        raise typer.Exit(130) from None
    raise typer.Exit(code)


def emit_json(result: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable_python(result), indent=2) + "\n")


def counts(option: str, text: str) -> tuple[int, ...]:
    """A comma-separated list of GPU counts (each at least 1)."""
    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"{option}: expected comma-separated whole numbers, got {text!r}") from None
    if any(count < 1 for count in counts):
        raise ValueError(f"{option}: GPU counts must be at least 1")
    return counts


def choice(option: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        listed = ", ".join(choices[:-1]) + " or " + choices[-1]
        raise ValueError(f"{option}: expected {listed}, got {value!r}")


POLICY_CHOICES = ("binpack", "spread", "topology")
VIEW_CHOICES = ("gpu", "extended")


def show(result: Any, as_json: bool, renderer: Callable[[Console, Any], None]) -> None:
    """--json prints the result model; otherwise the renderer draws it for people."""
    if as_json:
        emit_json(result)
    else:
        renderer(out, result)


def run_and_show(measure: Callable[[], Any], as_json: bool, renderer: Callable[[Console, Any], None]) -> None:
    """Run a command whose whole work is one measurement shown as it came (exit 0), bad input handled as `run`."""

    def body() -> int:
        show(measure(), as_json, renderer)
        return 0

    run(body)


def sizes(text: str) -> tuple[int, ...]:
    return tuple(sorted(set(DEFAULT_SIZES) | set(counts("--sizes", text))))


SEED_MAX = 2**31 - 1  # CP-SAT's random_seed is an int32
WORKERS_MAX = 256
SECONDS_MAX = 7 * 86400.0  # a week: longer is a typo, not a plan


def finite(low: float | None, high: float) -> Callable[[Any], float]:
    """The parser of every float option (`typer.Option(parser=finite(0, 100))`): a finite number in range (None:
    no lower bound here, the command checks it). typer's min/max let nan through, and inf when there is no max."""

    def parse(value: Any) -> float:
        try:
            number = float(value)
        except ValueError:
            raise typer.BadParameter(f"{value!r} is not a number") from None
        if not math.isfinite(number) or number > high or (low is not None and number < low):
            at_least = "" if low is None else f"at least {low:g} and "
            raise typer.BadParameter(f"{value!r}: expected a finite number {at_least}at most {high:g}")
        return number

    return parse


TimeLimit = Annotated[
    float,
    typer.Option(
        "--time-limit", parser=finite(None, SECONDS_MAX), help="seconds for the whole solve, all levels (> 0)"
    ),
]
SolverWorkers = Annotated[int, typer.Option("--workers", max=WORKERS_MAX, help="CP-SAT search workers (>= 1)")]
Seed = Annotated[int, typer.Option("--seed", min=0, max=SEED_MAX, help="CP-SAT random seed, for repeatable runs")]


def solver_config(time_limit: float, workers: int, seed: int) -> Any:
    """The CP-SAT settings, checked here so that a bad one is one clear line (exit 2)."""
    from ..planner.optimize.solver import (
        SolverConfig,  # CP-SAT loads only for the commands that solve
    )

    if not time_limit > 0:
        raise ValueError(f"--time-limit: must be more than 0 seconds, got {time_limit:g}")
    if workers < 1:
        raise ValueError(f"--workers: must be at least 1, got {workers}")
    return SolverConfig(time_limit=time_limit, workers=workers, seed=seed)


def emit_target(option: str, target: str | None, as_json: bool) -> Console:
    """Where the report goes when a file is emitted: stderr if the file takes stdout (`-`), which --json cannot share."""
    if target == "-" and as_json:
        raise ValueError(f"--json and {option} - both want stdout: give {option} FILE")
    if target is not None and not target.strip():
        raise ValueError(f"{option}: expected a file name or - for stdout")
    return err if target == "-" else out


def write_output(target: str, text: str, *more: tuple[str, str]) -> None:
    """Write emitted files whole (`-`: stdout), only once the command has succeeded: every file through
    gpusched.files' safe writer, all of them or none; a failure is exit 2 naming the path."""
    outputs = [(target, text), *more]
    write_files([(path, content) for path, content in outputs if path != "-"])
    for path, content in outputs:
        if path == "-":
            sys.stdout.write(content)


def show_emitted(
    result: Any, emitted: Any, target: str | None, key: str, as_json: bool, console: Console,
    renderers: tuple[Callable[[Console, Any], None], Callable[[Console, Any, str], None]],
) -> None:  # fmt: skip
    """Write the emitted file, then the result: --json adds the emitted objects under `key`, text a note on them."""
    assert target is not None
    write_output(target, emitted.text())
    if as_json:
        emit_json({**to_jsonable_python(result), key: emitted})
    else:
        render_result, render_note = renderers
        render_result(console, result)
        render_note(console, emitted, target)


def new_table(*columns: str) -> Table:
    """A borderless table with bold headers: every command's tables look alike."""
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column)
    return table
