"""`gpusched cluster build|up|down` (the real control plane as processes) and `gpusched conformance` (differential)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.console import Console

from ..conformance import differential
from ..conformance.api import Rest
from ..conformance.build import Binaries, HarnessError, cache_root, ensure_built
from ..conformance.cluster import STATE_FILE, WORKLOAD_CONTROLLERS, ControlPlane, start, stop_detached
from ..conformance.load import LoadReport, load_into
from ..scenarios import load_scenario
from .common import SEED_MAX, JsonFlag, app, run, shape, show, usage
from .progress import progress_bar

cluster_app = typer.Typer(help="A real kube-apiserver, kube-scheduler and etcd, built from Go modules, run locally.")
app.add_typer(cluster_app, name="cluster")

SourceOpt = Annotated[str | None, typer.Option("--source", help="the conformance Go module (default: ./conformance)")]
DirOpt = Annotated[Path | None, typer.Option("--dir", help="where `up` keeps its files (default: in the cache)")]
ReleaseOpt = Annotated[
    str | None,
    typer.Option(
        "--k8s-version", help="the release to build and run: 1.34, 1.35 or 1.37 (a patch optional); default the newest"
    ),
]


def _harness(body: Callable[[], int]) -> Callable[[], int]:
    """Harness failures (no Go, a failed build, a component that will not start) are exit 2 with one message."""

    def guarded() -> int:
        try:
            return body()
        except (HarnessError, TimeoutError) as error:
            raise usage(str(error)) from None

    return guarded


def _default_dir(folder: Path | None) -> Path:
    return folder or cache_root() / "cluster"


def _binaries(source: str | None, version: str | None) -> Binaries:
    """The cached control plane, or a cold build (~13-20 min on 2 cores) with a running clock on the terminal."""
    with progress_bar("control plane binaries (a cold build takes minutes)"):
        return ensure_built(source, version)


@shape(Binaries)
@cluster_app.command("build")
def build_command(source: SourceOpt = None, version: ReleaseOpt = None, as_json: JsonFlag = False) -> None:
    """Build etcd, kube-apiserver, kube-scheduler and kube-controller-manager once for a pinned release."""

    def body() -> int:
        show(_binaries(source, version), as_json, _render_build)
        return 0

    run(_harness(body))


@shape(ControlPlane)
@cluster_app.command("up")
def up_command(
    folder: DirOpt = None,
    controller_manager: Annotated[
        bool, typer.Option("--controller-manager", help="also run kube-controller-manager (ResourceClaimTemplates)")
    ] = False,
    source: SourceOpt = None,
    version: ReleaseOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Start a control plane in the background; prints its kubeconfig. `gpusched cluster down` stops it."""

    def body() -> int:
        workdir = _default_dir(folder)
        if (workdir / STATE_FILE).exists():
            raise usage(f"{workdir}: a cluster is already up here; `gpusched cluster down` first")
        binaries = _binaries(source, version)
        cluster = start(
            binaries, workdir, controller_manager=controller_manager, attach=False, controllers=WORKLOAD_CONTROLLERS
        )
        show(cluster.info, as_json, _render_up)
        return 0

    run(_harness(body))


@shape(LoadReport)
@cluster_app.command("load")
def load_command(
    scenario: Annotated[str, typer.Argument(help="built-in scenario, scenario file or cluster file")],
    folder: DirOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a scenario's nodes, running pods (bound, started) and pending pods in the cluster `up` started."""

    def body() -> int:
        workdir = _default_dir(folder)
        if not (workdir / STATE_FILE).exists():
            raise usage(f"{workdir}: no cluster is up here; `gpusched cluster up` first")
        loaded = load_scenario(scenario)
        info = ControlPlane.model_validate_json((workdir / STATE_FILE).read_text())
        rest = Rest(info.kubeconfig)
        try:
            report = load_into(rest, loaded)
        finally:
            rest.close()
        show(report, as_json, _render_load)
        return 0

    run(_harness(body))


@shape(ControlPlane)
@cluster_app.command("down")
def down_command(folder: DirOpt = None, as_json: JsonFlag = False) -> None:
    """Stop the control plane `up` started (only the processes it recorded) and remove its files."""

    def body() -> int:
        show(stop_detached(_default_dir(folder)), as_json, _render_down)
        return 0

    run(_harness(body))


@shape(differential.ConformanceReport)
@app.command("conformance")
def conformance_command(
    scenarios: Annotated[
        int, typer.Option("--scenarios", min=1, max=100_000, help="how many random scenarios to play")
    ] = 50,
    seed: Annotated[
        int, typer.Option("--seed", min=0, max=SEED_MAX, help="the generator's seed: the same seed plays the same")
    ] = 0,
    source: SourceOpt = None,
    version: ReleaseOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Play random scenarios on a fresh real control plane of a release; compare every pod with gpusched's
    prediction for that release."""

    def body() -> int:
        binaries = _binaries(source, version)
        # kube-controller-manager: ResourceClaimTemplates need its resourceclaim controller
        with start(binaries, controller_manager=True) as cluster, progress_bar("scenarios", scenarios) as progress:
            rest = Rest(cluster.kubeconfig)
            try:
                report = differential.run(rest, binaries.pin, seed, scenarios, lambda i, _: progress(i + 1, scenarios))
            finally:
                rest.close()
        show(report, as_json, _render_report)
        return 0 if not report.disagreements else 1

    run(_harness(body))


# --- rendering ---------------------------------------------------------------------------------------------------


def _render_build(console: Console, result: Binaries) -> None:
    how = f"built in {result.seconds:.0f} s" if result.built else "cached"
    console.print(f"{result.pin} ({how}): {result.bin_dir}", markup=False)


def _render_up(console: Console, info: ControlPlane) -> None:
    console.print(f"{info.version} up in {info.startup_seconds:.1f} s at {info.server}", markup=False)
    for process in info.processes:
        console.print(f"  {process.name} pid {process.pid} port {process.port} log {process.log}", markup=False)
    console.print(f"export KUBECONFIG={info.kubeconfig}", markup=False)


def _render_load(console: Console, report: LoadReport) -> None:
    console.print(
        f"loaded {report.scenario}: {report.nodes} nodes, {report.running} running pods, {report.pending} pending",
        markup=False,
    )
    for note in report.notes:
        console.print(note, markup=False)


def _render_down(console: Console, info: ControlPlane) -> None:
    console.print(f"stopped {', '.join(p.name for p in info.processes)}; removed {info.workdir}", markup=False)


def _render_report(console: Console, report: differential.ConformanceReport) -> None:
    console.print(
        f"conformance against kube-scheduler {report.version}, seed {report.seed}: {report.scenarios} scenarios, "
        f"{report.pods} pods, {report.agreed} agree ({report.rate:g}%){_extras(report)} in {report.seconds:.0f} s",
        markup=False,
    )
    if report.plugins:
        counts = ", ".join(f"{name} {c.scenarios} ({c.pods} pods)" for name, c in report.plugins.items())
        console.print(f"scenarios per plugin at work (rejected a node, claims, preemption): {counts}", markup=False)
    for found in report.disagreements:
        console.print(f"\ndisagreement in {found.scenario} on pod {found.outcome.pod}", markup=False)
        console.print(f"  real:     {found.outcome.real()}", markup=False)
        console.print(f"  gpusched: {found.outcome.gpusched()}", markup=False)
        for claim in found.outcome.claims:
            if not claim.agrees:
                console.print(
                    f"  claim {claim.claim}: real {_devices(claim.real)}; gpusched {_devices(claim.predicted)}",
                    markup=False,
                )
        manifests = [*found.reproducer.objects, *found.reproducer.nodes, *found.reproducer.pdbs, *found.reproducer.pods]
        console.print(yaml.safe_dump_all(manifests, sort_keys=False).rstrip(), markup=False)


def _extras(report: differential.ConformanceReport) -> str:
    """The DRA and preemption figures, when the run had any."""
    parts = []
    if report.dra_scenarios:
        parts.append(
            f"{report.dra_scenarios} scenarios with DRA objects, {report.claims} claims "
            f"({report.allocated} allocated), {report.claims_agreed} as predicted"
        )
    if report.preemption_scenarios:
        parts.append(
            f"{report.preemption_scenarios} with preemption, {report.preemptions} pods preempted others, "
            f"{report.during} arrived meanwhile, {report.budget_scenarios} with disruption budgets"
        )
    if report.rules:
        parts.append("pods with " + ", ".join(f"{k} {v}" for k, v in report.rules.items()))
    if report.refused or report.held:
        parts.append(f"{report.refused} refused by the API server, {report.held} never tried")
    return "".join(f"; {part}" for part in parts)


def _devices(allocation: dict | None) -> str:
    """An allocation's results as `request=pool/device`."""
    if allocation is None:
        return "none"
    results = allocation.get("devices", {}).get("results", [])
    return ", ".join(f"{r['request']}={r['pool']}/{r['device']}" for r in results) or "no devices"
