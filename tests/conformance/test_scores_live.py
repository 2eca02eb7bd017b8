"""gpusched's Score plugins against the real kube-scheduler's log (--v=10 logs each plugin's weighted score per
node): every logged score equal, and the node the pod binds to among gpusched's top set."""

from __future__ import annotations

import re
import time

import pytest

from gpusched.conformance.api import Rest
from gpusched.conformance.build import ensure_built, releases
from gpusched.conformance.cluster import start
from gpusched.planner.scheduler.predict import predict

HOST = "kubernetes.io/hostname"
PODS = "/api/v1/namespaces/default/pods"
SCORED = re.compile(r'"Plugin scored node for pod" pod="default/p" plugin="(\w+)" node="(\w+)" score=(-?\d+)')


def node(name, cpu="8", memory="16Gi", zone="z1", taints=None, images=None):
    amounts = {"cpu": cpu, "memory": memory, "pods": "110"}
    status = {"allocatable": amounts, "capacity": dict(amounts), **({"images": images} if images else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {HOST: name, "zone": zone}},
            "spec": {"taints": taints} if taints else {}, "status": status}  # fmt: skip


def pod(name, on=None, cpu="1", memory="1Gi", labels=None, **spec):
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    body = {"containers": [{"name": "m", "image": "nginx", "resources": {"requests": requests}}], **spec}
    if on:
        body["nodeName"] = on
    meta = {"name": name, "namespace": "default", "labels": labels or {"app": "web"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


WEB = {"matchLabels": {"app": "web"}}
AFFINITY = {
    "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}}]},
    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": {"topologyKey": HOST, "labelSelector": WEB}}]},
}  # fmt: skip
SPREAD = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": WEB}]
SCENARIOS = {
    "every-plugin": (
        [node("a", taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}],
              images=[{"names": ["docker.io/library/nginx:latest", "nginx:latest"], "sizeBytes": 500_000_000}]),
         node("b", cpu="4"), node("c", memory="32Gi", zone="z2")],
        [pod("x", on="c", cpu="2", memory="4Gi")],
        pod("p", affinity=AFFINITY, topologySpreadConstraints=SPREAD),
    ),
    "best-effort": ([node("a"), node("b", cpu="4"), node("c", cpu="16", memory="8Gi")],
                    [pod("x", on="a", cpu="3", memory="2Gi")], pod("p", cpu=None, memory=None)),
    "balance": ([node("a", cpu="4", memory="32Gi"), node("b", cpu="16"), node("c", memory="8Gi")],
                [pod("x", on="b", cpu="5"), pod("y", on="c", memory="6Gi")], pod("p", cpu="2", memory="3Gi")),
    "existing-preferred-affinity": (
        [node("a"), node("b", zone="z2"), node("c", zone="z2")],
        [pod("x", on="b", labels={"app": "db"}, affinity={"podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 30, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": WEB}}]}})],
        pod("p"),
    ),
    "hostname-spread-and-hard-affinity": (
        [node("a"), node("b"), node("c", zone="z2"), node("d", zone="z2")],
        [pod("x", on="a"), pod("y", on="a"), pod("z", on="c"),
         pod("w", on="d", labels={"app": "db"}, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
             {"topologyKey": "zone", "labelSelector": WEB}]}})],
        pod("p", topologySpreadConstraints=[
            {"maxSkew": 2, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": WEB}]),
    ),
    "tolerations-and-weighted-terms": (
        [node("a", taints=[{"key": "k", "effect": "PreferNoSchedule"}, {"key": "j", "effect": "PreferNoSchedule"}]),
         node("b", taints=[{"key": "k", "effect": "PreferNoSchedule"}]), node("c", zone="z2")],
        [],
        pod("p", tolerations=[{"key": "k", "operator": "Exists", "effect": "PreferNoSchedule"}],
            affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 7, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}},
                {"weight": 3, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}},
            ]}}),
    ),
}  # fmt: skip


@pytest.fixture(scope="module", params=[release.pin for release in releases()])
def verbose_scheduler(request):
    with start(ensure_built(version=request.param), scheduler_args=("--v=10",)) as cluster:
        rest = Rest(cluster.kubeconfig)
        log = next(process.log for process in cluster.info.processes if process.name == "kube-scheduler")
        yield request.param, rest, log
        rest.close()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_logged_score_is_gpuscheds(verbose_scheduler, scenario):
    release, rest, log = verbose_scheduler
    nodes, bound, target = SCENARIOS[scenario]
    for item in nodes:
        rest.create("/api/v1/nodes", item)
    for item in bound:
        rest.create(PODS, item)
    try:
        time.sleep(2)  # the scheduler's cache sees the nodes and the bound pods
        seen = len(log.read_text(errors="replace"))
        rest.create(PODS, target)
        chosen = rest.wait(lambda: rest.get(f"{PODS}/p")["spec"].get("nodeName"), timeout=30)
        time.sleep(1)
        real = {(m[1], m[2]): int(m[3]) for m in SCORED.finditer(log.read_text(errors="replace")[seen:])}
        ours = predict({"kind": "List", "items": nodes}, {"kind": "List", "items": bound}, target, release)
        assert ours.scores is not None
        mine = {(p.plugin, n): s * p.weight for p in ours.scores.plugins for n, s in p.scores.items()}
        assert real and mine == real
        assert chosen in ours.scores.top
    finally:
        for item in [target, *bound]:
            rest.delete(f"{PODS}/{item['metadata']['name']}")
        for item in nodes:
            rest.delete(f"/api/v1/nodes/{item['metadata']['name']}")
        rest.wait(lambda: not rest.get("/api/v1/pods")["items"], timeout=30)
