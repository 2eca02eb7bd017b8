"""The public API is what the package root exports; this pins it so a change to it is a decision."""

from pathlib import Path

import gpusched


def test_exported_names():
    assert sorted(gpusched.__all__) == [
        "Assignment",
        "BusyGpu",
        "Cluster",
        "ClusterState",
        "DefragReport",
        "Explanation",
        "FragReport",
        "GangReport",
        "GpuBlock",
        "InputError",
        "Job",
        "JobList",
        "K8sPrediction",
        "MigInstance",
        "MigPlan",
        "Node",
        "Offers",
        "PlaceReport",
        "PlanReport",
        "Pod",
        "PodList",
        "PreemptReport",
        "ScaleDownReport",
        "ScaleUpReport",
        "SolverConfig",
        "advertised",
        "allocate",
        "build_graph",
        "defrag",
        "explain_job",
        "explain_pod",
        "fragmentation",
        "import_cluster",
        "kueue_setup",
        "load_cluster",
        "load_jobs",
        "load_offers",
        "load_pending",
        "load_pods",
        "load_scenario",
        "mig_parted_file",
        "parse_shape",
        "pending_jobs",
        "place",
        "plan",
        "plan_mig",
        "predict",
        "preempt",
        "scale_down",
        "scale_up",
        "scenario_names",
        "scheduler_config",
        "simulate",
        "violations",
    ]
    assert sorted(gpusched._EXPORTS) == sorted(gpusched.__all__)
    assert all(hasattr(gpusched, name) for name in gpusched.__all__)


def test_every_export_is_the_object_its_module_defines():
    import importlib

    for name, module in gpusched._EXPORTS.items():
        assert getattr(gpusched, name) is getattr(importlib.import_module(module, "gpusched"), name), name


def test_headline_planners_from_the_root():
    cluster = gpusched.load_cluster("backlog")
    pods, jobs = gpusched.load_pending("backlog")
    config = gpusched.SolverConfig(time_limit=5)
    report = gpusched.plan(cluster, gpusched.pending_jobs(pods.pods, jobs.jobs), config)
    assert isinstance(report, gpusched.PlanReport)
    train = next(pod for pod in gpusched.load_pods("monday").pods if pod.name == "train-8")
    assert gpusched.explain_pod(gpusched.load_cluster("monday"), train, config).target == "train-8"


def test_import_cluster_reads_a_dump_directory():
    dump = str(Path(__file__).parent / "data" / "import")
    assert gpusched.import_cluster(dump).cluster == gpusched.load_cluster(dump)


def test_library_round_trip():
    cluster = gpusched.load_cluster("monday")
    report = gpusched.place(cluster, gpusched.load_pods("monday").pods, policy="spread")
    assert [r.pod for r in report.pending] == ["train-8"]


def test_every_command_is_mapped_to_the_module_that_registers_it():
    from gpusched.cli import COMMAND_MODULES, app

    registered = {(c.name or c.callback.__name__): c.callback.__module__ for c in app.registered_commands}
    registered.update(
        {g.name: g.typer_instance.registered_commands[0].callback.__module__ for g in app.registered_groups}
    )
    expected = {name: f"gpusched.cli.{module}" for name, module in COMMAND_MODULES.items()}
    assert registered == expected


def test_every_bench_command_lives_in_one_module():
    from gpusched.cli import app

    (bench,) = [g.typer_instance for g in app.registered_groups if g.name == "bench"]
    assert {c.callback.__module__ for c in bench.registered_commands} == {"gpusched.cli.bench"}
    assert [c.name for c in bench.registered_commands] == [
        "place",
        "openb",
        "synthetic",
        "replay",
        "cel",
        "k8s",
        "dra",
        "mig",
        "plan",
        "preempt",
        "defrag",
        "explain",
        "scale",
    ]
