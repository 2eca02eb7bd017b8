"""The Typer app and what every command shares: its conventions, error handling, output formats.

The conventions, kubectl's where kubectl has one (each in one place here, so a new command gets them by using these
helpers; `conventions(app)` puts the output flags and help panels on every command once all are registered):
- `gpusched VERB [NAME] [flags]`: the positional argument names what the command is about. Where that is a pod or
  a job (explain, preempt, k8s), the cluster is `-f/--cluster`; where it is the cluster (place, frag, map, plan,
  defrag, mig plan, ...), the cluster is NAME. Either way a live cluster (`--kubeconfig`, or the current context
  under `kubectl gpusched`) stands in for it.
- `-o/--output json|yaml|wide|name` prints the result in that form; `--json` is the same as `-o json` (kept: the
  stable shape scripts have used since the first release). Files the command writes are `--output-file FILE`
  (its one main file: import's cluster file, a picture), `--emit-WHAT FILE|-` (a configuration to apply), or
  `--output-dir DIR` (a bench's CSV, JSON and figures); never `-o`.
- `-` (or `-f -`) reads standard input wherever a file is read.
- `-n/--namespace NS` completes a pod named without one; `-A/--all-namespaces` where a command reads many pods.
- Standard output that is not a terminal is never folded and carries no trailing spaces.
- One default per setting: DEFAULT_WORKERS CP-SAT workers, DEFAULT_DRIVER for DRA.

Exit codes: 0 everything fits, 1 something Pending / deadlocked / unallocatable, 2 unreadable input, 3 a gpusched
bug (one line; --debug shows its traceback).
"""

from __future__ import annotations

import errno
import functools
import inspect
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn

import typer
import typer.rich_utils
import yaml
from pydantic_core import to_jsonable_python
from rich.console import Console, ConsoleDimensions
from rich.table import Table

from ..errors import INTERNAL, GpuschedError, GpuschedWarning, Infeasible, InputError
from ..files import check_target, write_files
from ..limits import check_settings, command_budget
from ..planner.frag import DEFAULT_SIZES


def _version(value: bool) -> None:
    if value:
        try:
            number = version("gpusched")
        except PackageNotFoundError:  # run from a checkout that was never installed
            number = "unknown (not installed)"
        sys.stdout.write(f"gpusched {number}\n")
        raise typer.Exit(0)


# --- help panels: every top-level command in one (a test checks that a new command has one) ----------------------

PANELS: dict[str, tuple[str, ...]] = {
    "Inspect": ("scenarios", "schema", "init", "import", "advertised", "frag", "map", "allreduce"),
    "Predict": ("k8s", "explain", "place", "gang", "dra", "slices"),
    "Plan": ("plan", "preempt", "defrag", "mig", "scale", "validate"),
    "Act": ("apply",),
    "Bench": ("bench",),
    "Cluster": ("cluster", "conformance"),
}
PANEL_OF = {name: panel for panel, names in PANELS.items() for name in names}


class _Panels(typer.core.TyperGroup):
    """Commands listed panel by panel, in PANELS' order (typer lists them as they were registered)."""

    def list_commands(self, ctx: Any) -> list[str]:
        order = list(PANEL_OF)
        return sorted(super().list_commands(ctx), key=lambda name: order.index(name) if name in order else len(order))


app = typer.Typer(
    name="gpusched",
    cls=_Panels,
    help="A GPU placement planner for Kubernetes: the scheduler's view, the hardware's view, the best plan.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode="markdown",  # help text is plain prose: lines joined, no [markup] read in it
)

# typer prints a type beside every parameter: `<bool>` beside each flag, `<str>` beside an argument that is named
# (CLUSTER, POD) already. Only a value's form is shown, as click words it: FILE, SECONDS (a metavar), TEXT, N,
# NUMBER, PATH, or the choices (json|yaml|wide|name).
_option_type = typer.core.TyperOption.display_type_rich
_argument_type = typer.core.TyperArgument.display_type_rich
_FORMS = {"str": "TEXT", "int": "N", "int range": "N", "float": "NUMBER", "float range": "NUMBER", "path": "PATH"}


def _form(shown: str | None) -> str | None:
    if shown is None or not shown.startswith("<"):
        return shown
    inner, dots = shown[1:].split(">", 1)
    inner = inner.removeprefix("list[").removesuffix("]")
    return _FORMS.get(inner, inner) + dots


def _option_shown(self: typer.core.TyperOption, ctx: Any) -> str | None:
    return None if self.is_flag else _form(_option_type(self, ctx))


def _argument_shown(self: typer.core.TyperArgument, ctx: Any) -> str | None:
    return None if self.metavar else _form(_argument_type(self, ctx))


def _plain_usage_error(error: Any) -> None:
    """A usage error as click writes it (`Error: Invalid value for '--policy': ...`), whole on one line (typer
    draws it in a box as wide as the terminal, cut short off one); what was typed is shown, never interpreted."""
    if error.__class__.__name__ == "NoArgsIsHelpError":
        _rich_usage_error(error)
        return
    ctx = getattr(error, "ctx", None)
    lines = [ctx.get_usage(), f"Try '{ctx.command_path} -h' for help.", ""] if ctx is not None else []
    message = error.format_message().replace("Value error, ", "")  # typer's Literal check words it as pydantic
    lines.append(f"Error: {message}")
    sys.stderr.write("\n".join(lines).translate(_CONTROL) + "\n")


_rich_usage_error = typer.rich_utils.rich_format_error
typer.rich_utils.rich_format_error = _plain_usage_error  # type: ignore[assignment]
typer.core.TyperOption.display_type_rich = _option_shown  # type: ignore[method-assign]
typer.core.TyperArgument.display_type_rich = _argument_shown  # type: ignore[method-assign,assignment]


@app.callback()
def _group(
    _: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="print gpusched's version and exit"),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="an internal error prints its traceback (also GPUSCHED_DEBUG=1)")
    ] = False,
) -> None:
    """Keep `gpusched COMMAND` a group when the console script loaded one module with a single command (import,
    map): Typer would otherwise run that command as the whole program and read COMMAND as its argument."""
    _debug[0] = debug


# --- consoles ------------------------------------------------------------------------------------------------------

_CONTROL = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(code) not in "\n\t"}
_TRAILING = re.compile(r"[ \t]+(?=\n|$)")
UNFOLDED = 100_000  # columns: a line wider than this is folded even off a terminal


class _PlainConsole(Console):
    """A console that never interprets what it prints: names and messages come from input files, so no rich
    markup (`[/bold]`), no emoji codes, and control characters (ANSI escapes) shown as `\\x1b`, not sent.
    Off a terminal (a pipe, a file) and with `-o wide` it never folds a line, and no line ends in spaces."""

    def render_str(self, text: str, **options: Any) -> Any:
        return super().render_str(text.translate(_CONTROL), **{**options, "markup": False, "emoji": False})

    def _unfolded(self) -> bool:
        return self._width is None and (not self.is_terminal or output_format() == "wide")

    @property  # type: ignore[override]
    def size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)  # type: ignore[attr-defined]
        return ConsoleDimensions(UNFOLDED, size.height) if self._unfolded() else size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def _render_buffer(self, buffer: Any) -> str:
        return _TRAILING.sub("", super()._render_buffer(buffer))


def console(stderr: bool = False, **options: Any) -> Console:
    """Every console of the CLI: plain text (see _PlainConsole), no highlighting, lines never broken mid-word."""
    return _PlainConsole(stderr=stderr, highlight=False, soft_wrap=True, markup=False, emoji=False, **options)


out = console()
err = console(stderr=True)


# --- output: -o json|yaml|wide|name, --json ------------------------------------------------------------------------

OutputFormat = Literal["json", "yaml", "wide", "name"]
STRUCTURED = ("json", "yaml", "name")  # the forms a command prints instead of its text


@dataclass(frozen=True)
class _Output:
    format: OutputFormat | None = None
    names: Callable[[Any], Iterable[str]] | None = None


_output: ContextVar[_Output | None] = ContextVar("gpusched_output", default=None)


def output_format() -> OutputFormat | None:
    """The command's -o (json also for --json), None for the text view."""
    chosen = _output.get()
    return chosen.format if chosen else None


OutputOpt = Annotated[
    OutputFormat | None,
    typer.Option(
        "-o",
        "--output",
        help="print the result as json | yaml (its documented shape: `gpusched schema --output COMMAND`), "
        "wide (text, never folded), or name (kind/name of the objects it lists)",
        show_default=False,
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="the same as -o json")]


def object_name(kind: str, name: str) -> str:
    """kubectl's `-o name` form, `kind/name`: without the namespace, as kubectl prints it."""
    return f"{kind}/{name.rpartition('/')[2]}"


def names(listed: Callable[[Any], Iterable[str]]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare what `-o name` prints for a command: `listed` gets the result as JSON data and gives `kind/name`s.
    A command without it refuses `-o name` before any work."""

    def mark(command: Callable[..., Any]) -> Callable[..., Any]:
        command.__gpusched_names__ = listed  # type: ignore[attr-defined]
        return command

    return mark


def shape(of: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the type a command's -o json|yaml prints (a model, a union, list[...]): `gpusched schema --output
    COMMAND` publishes its JSON Schema, and a test checks each command has one and prints what it says."""

    def mark(command: Callable[..., Any]) -> Callable[..., Any]:
        command.__gpusched_shape__ = of  # type: ignore[attr-defined]
        return command

    return mark


def command_named(path: str, typer_app: typer.Typer = app) -> Callable[..., Any] | None:
    """The function of a command by its path (`plan`, `mig plan`, `bench openb`), or None."""
    first, _, rest = path.strip().partition(" ")
    for info in typer_app.registered_commands:
        name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        if name == first and not rest:
            return info.callback
    for group in typer_app.registered_groups:
        if group.name == first and group.typer_instance is not None and rest:
            return command_named(rest, group.typer_instance)
    return None


def command_paths(typer_app: typer.Typer = app, prefix: str = "") -> list[str]:
    """Every command's path, groups' commands included."""
    paths = [
        f"{prefix}{info.name or info.callback.__name__.replace('_', '-')}"
        for info in typer_app.registered_commands
        if info.callback
    ]
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            paths += command_paths(group.typer_instance, f"{prefix}{group.name} ")
    return paths


def _with_output(command: Callable[..., Any], path: str) -> Callable[..., Any]:
    """The command with -o/--output beside its --json: both set the output form for show/emit_json, and the
    command's `as_json` is true for every form printed instead of the text (json, yaml, name)."""
    listed = getattr(command, "__gpusched_names__", None)
    signature = inspect.signature(command, eval_str=True)

    @functools.wraps(command)
    def wrapper(*args: Any, output: OutputFormat | None = None, **kwargs: Any) -> Any:
        if output is not None and kwargs.get("as_json") and output != "json":
            raise typer.BadParameter(f"--json is -o json: give one of --json and -o {output}", param_hint="-o")
        chosen: OutputFormat | None = output or ("json" if kwargs.get("as_json") else None)
        if chosen == "name" and listed is None:
            raise typer.BadParameter(
                f"`gpusched {path}` lists no objects to name: use -o json, yaml or wide", param_hint="-o"
            )
        kwargs["as_json"] = chosen in STRUCTURED
        token = _output.set(_Output(chosen, listed))
        try:
            return command(*args, **kwargs)
        finally:
            _output.reset(token)

    parameters = list(signature.parameters.values())
    at = next(i for i, p in enumerate(parameters) if p.name == "as_json")
    option = inspect.Parameter("output", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=OutputOpt)
    positional = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in parameters]
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*positional[:at], option.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD), *positional[at:]]
    )
    wrapper.__annotations__ = {**getattr(command, "__annotations__", {}), "output": OutputOpt}
    wrapper.__gpusched_output__ = True  # type: ignore[attr-defined]
    return wrapper


def conventions(typer_app: typer.Typer = app, prefix: str = "") -> typer.Typer:
    """Give every registered command -o/--output (those with --json) and its help panel; idempotent, so it runs
    each time a module of commands is loaded."""
    for info in typer_app.registered_commands:
        callback = info.callback
        name = info.name or (callback.__name__.replace("_", "-") if callback else "")
        if callback is not None and not getattr(callback, "__gpusched_output__", False):
            if "as_json" in inspect.signature(callback).parameters:
                info.callback = _with_output(callback, f"{prefix}{name}")
        if not prefix and name in PANEL_OF:
            info.rich_help_panel = PANEL_OF[name]
    for group in typer_app.registered_groups:
        if not prefix and group.name in PANEL_OF:
            group.rich_help_panel = PANEL_OF[group.name]
        if group.typer_instance is not None:
            conventions(group.typer_instance, f"{prefix}{group.name} ")
    return typer_app


_OUTPUT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EPIPE, errno.EIO)  # stdout's: full, closed, broken


def run(body: Callable[[], int]) -> None:
    """Run a command body; bad input becomes one clear message on stderr and exit code 2, a doubt (GpuschedWarning)
    a `warning:` line. Standard output is flushed here, so a full disk or a closed pipe behind it is one line
    (exit 2) too, never a traceback or Python's "Exception ignored" at exit."""
    try:
        try:
            _run(body)
        finally:
            sys.stdout.flush()
    except OSError as error:
        if error.errno not in _OUTPUT_ERRNOS:
            raise
        _silence_stdout()
        err.print(f"error: standard output: cannot write: {error.strerror or error}", markup=False)
        raise typer.Exit(2) from None


def _silence_stdout() -> None:
    """Point file descriptor 1 at os.devnull: what is still buffered for the broken stdout goes nowhere quietly."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a test's captured stdout: nothing to redirect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


def _run(body: Callable[[], int]) -> None:
    try:
        with warnings.catch_warnings(record=True) as doubts:
            warnings.simplefilter("always", GpuschedWarning)
            try:
                check_settings()
                with command_budget():
                    code = body()
            finally:
                for doubt in dict.fromkeys(str(item.message) for item in doubts if item.category is GpuschedWarning):
                    err.print(f"warning: {doubt}", markup=False)
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
    except (typer.Exit, typer.Abort, typer.TyperException):  # click's own: a usage error, an exit asked for
        raise
    except Exception as error:
        if isinstance(error, OSError) and error.errno in _OUTPUT_ERRNOS:
            raise  # standard output broke: `run` says so
        _internal(error)
    raise typer.Exit(code)


def debugging() -> bool:
    """--debug (before the command) or GPUSCHED_DEBUG=1: an internal error shows its traceback."""
    return _debug[0] or os.environ.get("GPUSCHED_DEBUG", "") not in ("", "0")


_debug = [False]


def _internal(error: BaseException) -> NoReturn:
    """An exception gpusched did not mean to raise: a bug in gpusched, never the user's input. One line (the
    traceback too with --debug), exit INTERNAL (3)."""
    if debugging():
        import traceback

        sys.stderr.write("".join(traceback.format_exception(error)))
    where = error.__traceback__
    while where is not None and where.tb_next is not None:
        where = where.tb_next
    at = f" at {Path(where.tb_frame.f_code.co_filename).name}:{where.tb_lineno}" if where is not None else ""
    said = next(iter(str(error).splitlines()), "")
    err.print(
        f"internal error (a gpusched bug, not your input): {type(error).__name__}: {said[:300]}{at}; "
        "please report it with the command line (gpusched --debug shows the traceback)",
        markup=False,
    )
    raise typer.Exit(INTERNAL) from None


def usage(message: str) -> InputError:
    """A command line that asks for what cannot be (flags that exclude each other, a malformed value): the CLI's
    own words, naming its flags; exit 2 like any bad input."""
    return InputError("", message)


def emit_json(result: Any) -> None:
    """The result in the -o form chosen: JSON (also --json, and when none was chosen), YAML, or its names."""
    data = to_jsonable_python(result)
    chosen = _output.get() or _Output()
    if chosen.format == "yaml":
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=UNFOLDED))
    elif chosen.format == "name" and chosen.names is not None:
        sys.stdout.write("".join(f"{name}\n" for name in chosen.names(data)))
    else:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")


def counts(option: str, text: str) -> tuple[int, ...]:
    """A comma-separated list of GPU counts (each at least 1)."""
    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise usage(f"{option}: expected comma-separated whole numbers, got {text!r}") from None
    if any(count < 1 for count in counts):
        raise usage(f"{option}: GPU counts must be at least 1")
    return counts


def show(result: Any, as_json: bool, renderer: Callable[[Console, Any], None]) -> None:
    """-o json|yaml|name (or --json) prints the result model; otherwise the renderer draws it for people."""
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
        "--time-limit",
        metavar="SECONDS",
        parser=finite(None, SECONDS_MAX),
        help="seconds for the whole solve, all levels (> 0)",
    ),
]
SolverWorkers = Annotated[
    int, typer.Option("--workers", metavar="N", max=WORKERS_MAX, help="CP-SAT search workers (>= 1)")
]
Seed = Annotated[
    int, typer.Option("--seed", metavar="N", min=0, max=SEED_MAX, help="CP-SAT random seed, for repeatable runs")
]


def solver_config(time_limit: float, workers: int, seed: int) -> Any:
    """The CP-SAT settings, checked here so that a bad one is one clear line (exit 2)."""
    from ..planner.optimize.solver import (
        SolverConfig,  # CP-SAT loads only for the commands that solve
    )

    if not time_limit > 0:
        raise usage(f"--time-limit: must be more than 0 seconds, got {time_limit:g}")
    if workers < 1:
        raise usage(f"--workers: must be at least 1, got {workers}")
    return SolverConfig(time_limit=time_limit, workers=workers, seed=seed)


def emit_target(option: str, target: str | None, as_json: bool) -> Console:
    """Check an output before any work (gpusched.files.check_target: no FIFO, device, folder or empty name) and
    say where the report goes: stderr if the file takes stdout (`-`), which -o json|yaml|name cannot share."""
    if target == "-" and as_json:
        raise usage(f"-o {output_format()} and {option} - both want stdout: give {option} FILE")
    if target is not None and not target.strip():
        raise usage(f"{option}: expected a file name or - for stdout")
    if target is not None and target != "-":
        check_output(option, target)
    return err if target == "-" else out


def check_output(option: str, target: str) -> None:
    """gpusched.files.check_target, its message naming the option too."""
    try:
        check_target(target)
    except InputError as error:
        raise InputError(f"{option} {error.source}", error.message) from None


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


# --- what every command reads: the cluster, the pod, the namespace -----------------------------------------------

ClusterArg = Annotated[
    str | None,
    typer.Argument(
        metavar="CLUSTER",
        help="cluster or scenario file (- for stdin), built-in scenario, kubectl dump folder or kubeconfig "
        "(default: --kubeconfig's cluster)",
        show_default=False,
    ),
]
ClusterOpt = Annotated[
    str | None,
    typer.Option(
        "-f",
        "--cluster",
        metavar="CLUSTER",
        help="cluster or scenario file (- for stdin), built-in scenario, kubectl dump folder or kubeconfig",
    ),
]
KubeconfigOpt = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig",
        metavar="FILE",
        help="read the cluster from this kubeconfig's API server (--apply acts on it); default under "
        "`kubectl gpusched`: kubectl's",
    ),
]
ContextOpt = Annotated[
    str | None, typer.Option("--context", metavar="NAME", help="kubeconfig context (default: current)")
]
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "-n",
        "--namespace",
        metavar="NS",
        help="the namespace of a pod named without one (default: the context's when live, else default)",
    ),
]
AllNamespacesFlag = Annotated[
    bool, typer.Option("-A", "--all-namespaces", help="the pending pods of every namespace (the default)")
]
SizesOpt = Annotated[
    str,
    typer.Option(
        "--sizes", metavar="N,N", help="job sizes for the fragmentation report, comma-separated (1,2,4,8 always)"
    ),
]
Driver = Literal["gpu.example.com", "gpu.nvidia.com"]  # gpusched.planner.dra.slices.DRIVERS (a test checks)
DriverOpt = Annotated[
    Driver,
    typer.Option("--driver", help="the DRA driver whose slices the cluster publishes (the example driver's: default)"),
]

DEFAULT_DRIVER: Driver = "gpu.example.com"  # the seed's example driver (slices.EXAMPLE); gpu.nvidia.com by --driver
DEFAULT_WORKERS = 2  # CP-SAT search workers: one per core of the machines gpusched is tested on
PolicyOpt = Annotated[
    Literal["binpack", "spread", "topology"],
    typer.Option("--policy", help="binpack (MostAllocated) | spread (LeastAllocated) | topology (NVLink islands)"),
]

_plugin_kubeconfig: list[str] = []  # under `kubectl gpusched`: the kubeconfig kubectl would read


@contextmanager
def plugin_mode(kubeconfig: str) -> Iterator[None]:
    """Run as `kubectl gpusched`: every command reads the live cluster of `kubeconfig` when given no cluster."""
    _plugin_kubeconfig[:] = [kubeconfig]
    try:
        yield
    finally:
        _plugin_kubeconfig.clear()


def live(kubeconfig: str | None, cluster: str | None = None) -> str | None:
    """The kubeconfig a command reads: --kubeconfig, else (under `kubectl gpusched`, no CLUSTER given) kubectl's."""
    if kubeconfig or cluster:
        return kubeconfig
    return _plugin_kubeconfig[0] if _plugin_kubeconfig else None


def cluster_source(cluster: str | None, kubeconfig: str | None, context: str | None, what: str = "CLUSTER") -> str:
    """The one cluster a command reads: CLUSTER, or the live one (`KUBECONFIG#CONTEXT`), never both."""
    kubeconfig = live(kubeconfig, cluster)
    if kubeconfig and cluster:
        raise usage(f"--kubeconfig is the cluster: drop {what}")
    if context and not kubeconfig:
        raise usage("--context goes with --kubeconfig")
    if cluster:
        return cluster
    if not kubeconfig:
        raise usage(f"give {what} (a file, built-in scenario, kubectl dump folder or kubeconfig), or --kubeconfig")
    if not any(Path(path).is_file() for path in kubeconfig.split(os.pathsep) if path):  # $KUBECONFIG: a list
        found = "no kubeconfig here" if _plugin_kubeconfig else "no such kubeconfig file"
        where = " (kubectl's: --kubeconfig, else $KUBECONFIG, else ~/.kube/config)" if _plugin_kubeconfig else ""
        raise InputError(kubeconfig, f"{found}{where}; give --kubeconfig FILE, or the cluster as {what}")
    return f"{kubeconfig}#{context}" if context else kubeconfig


def namespace_for(namespace: str | None, kubeconfig: str | None, context: str | None) -> str | None:
    """-n/--namespace, else the context's namespace when the cluster is live, else None (names as they are)."""
    if namespace is not None:
        if not namespace.strip():
            raise usage("-n/--namespace: expected a namespace")
        return namespace
    if kubeconfig is None:
        return None
    from .kubectl import context_namespace  # reads the kubeconfig file only when a live cluster is named

    return context_namespace(kubeconfig, context)


def check_namespaces(namespace: str | None, all_namespaces: bool) -> None:
    if namespace is not None and all_namespaces:
        raise usage("-n/--namespace and -A/--all-namespaces: give one")


def in_namespace(name: str, namespace: str | None) -> bool:
    """Whether a pod (`NS/NAME`, or `NAME` in default) is in the namespace (None: every namespace)."""
    if namespace is None:
        return True
    space, slash, _ = name.partition("/")
    return (space if slash else "default") == namespace


def qualified(name: str, namespace: str | None) -> str:
    """A pod's `NAMESPACE/NAME`: the name as given when it names its namespace, or when there is none to add."""
    return name if namespace is None or "/" in name else f"{namespace}/{name}"
