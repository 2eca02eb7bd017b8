"""The public API is what the package root exports; this pins it so a change to it is a decision."""

import gpusched


def test_exported_names():
    assert sorted(gpusched.__all__) == [
        "Assignment", "BusyGpu", "Cluster", "ClusterState", "FragReport", "GangReport", "GpuBlock", "InputError",
        "Job", "JobList", "K8sPrediction", "MigInstance", "Node", "PlaceReport", "Pod", "PodList", "advertised",
        "build_graph", "fragmentation", "load_cluster", "load_jobs", "load_pods", "load_scenario", "place",
        "predict", "scenario_names", "simulate", "violations",
    ]
    assert all(hasattr(gpusched, name) for name in gpusched.__all__)


def test_library_round_trip():
    cluster = gpusched.load_cluster("monday")
    report = gpusched.place(cluster, gpusched.load_pods("monday").pods, policy="spread")
    assert [r.pod for r in report.pending] == ["train-8"]


def test_every_command_is_mapped_to_the_module_that_registers_it():
    from gpusched.cli import COMMAND_MODULES, app

    registered = {(c.name or c.callback.__name__): c.callback.__module__ for c in app.registered_commands}
    registered.update({g.name: g.typer_instance.registered_commands[0].callback.__module__
                       for g in app.registered_groups})
    expected = {name: f"gpusched.cli.{module}" for name, module in COMMAND_MODULES.items()}
    assert registered == expected


def test_every_bench_command_lives_in_one_module():
    from gpusched.cli import app

    (bench,) = [g.typer_instance for g in app.registered_groups if g.name == "bench"]
    assert {c.callback.__module__ for c in bench.registered_commands} == {"gpusched.cli.bench"}
    assert [c.name for c in bench.registered_commands] == [
        "place", "openb", "synthetic", "replay", "dra", "mig", "plan", "preempt", "defrag", "explain",
    ]
