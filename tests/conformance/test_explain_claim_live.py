"""`explain --emit-claim` against the real API server: every emitted ResourceClaim is accepted by a server-side
dry run (schema, defaulting and the API server's own compilation of the CEL selectors); a broken one is refused."""

from __future__ import annotations

import copy

import pytest
import yaml

from gpusched.conformance.api import Rest, RestError

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims?dryRun=All"
CASES = [
    ("train-8", "monday", "gpu.nvidia.com"),
    ("embed", "ticket-embed", "gpu.nvidia.com"),
    ("finetune-2", "monday", "gpu.example.com"),
    ("train-8", "ticket-finetune", "gpu.example.com"),
]


def emitted(gpusched, pod: str, cluster: str, driver: str) -> dict:
    result = gpusched("explain", pod, "--cluster", cluster, "--driver", driver, "--emit-claim", "-")
    assert result.exit_code in (0, 1)
    return yaml.safe_load(result.stdout)


@pytest.mark.parametrize(("pod", "cluster", "driver"), CASES)
def test_the_api_server_accepts_every_emitted_claim(rest: Rest, gpusched, pod, cluster, driver):
    claim = emitted(gpusched, pod, cluster, driver)
    stored = rest.create(CLAIMS, claim)
    assert (
        stored["spec"]["devices"]["requests"][0]["exactly"]["count"]
        == claim["spec"]["devices"]["requests"][0]["exactly"]["count"]
    )
    assert stored["spec"]["devices"]["requests"][0]["exactly"].get("selectors") == claim["spec"]["devices"]["requests"][
        0
    ]["exactly"].get("selectors")


def test_the_dry_run_refuses_a_broken_selector(rest: Rest, gpusched):
    claim = copy.deepcopy(emitted(gpusched, "embed", "ticket-embed", "gpu.nvidia.com"))
    claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"] = "device.capacity["
    with pytest.raises(RestError, match="422|Invalid|compil"):
        rest.create(CLAIMS, claim)
