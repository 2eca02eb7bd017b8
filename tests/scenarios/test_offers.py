"""OFFERS files: instance types completed from the catalogue, and bad input named by file and field."""

from __future__ import annotations

import pytest
import yaml

from gpusched.errors import InputError
from gpusched.scenarios.offers import load_offers

GOOD = {
    "nodepool": "gpu",
    "limits": {"gpus": 16},
    "instance_types": [
        {"name": "p4d.24xlarge", "cpu": 96, "memory": "1152Gi", "prices": [{"zone": "a", "per_hour": 20}]},
        {"name": "g6.xlarge", "cpu": 4, "memory": "16Gi", "prices": [{"zone": "a", "per_hour": 0.8}]},
        {
            "name": "my-box",
            "cpu": 32,
            "memory": "256Gi",
            "gpu": {"model": "L40S", "count": 2, "memory_gib": 48},
            "prices": [{"capacity_type": "spot", "zone": "b", "per_hour": 1.5}],
        },
    ],
}


def _write(tmp_path, data) -> str:
    path = tmp_path / "offers.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_gpus_come_from_the_catalogue(tmp_path):
    offers = load_offers(_write(tmp_path, GOOD))
    p4d, g6, box = offers.instance_types
    assert p4d.gpu is not None and (p4d.gpu.model, p4d.gpu.count, p4d.gpu.islands) == (
        "A100-SXM4-40GB", 8, [list(range(8))],
    )  # fmt: skip
    assert g6.gpu is not None and (g6.gpu.model, g6.gpu.count, g6.gpu.islands) == ("L4", 1, [])
    assert box.gpu is not None and box.gpu.model == "L40S"  # given, kept


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            lambda d: d["instance_types"][1].update(name="x9.huge"),
            "instance_types[1](x9.huge).gpu",
            "not in the catalogue",
        ),
        (lambda d: d["instance_types"][0].update(prise=1), "instance_types[0](p4d.24xlarge).prise", "did you mean"),
        (lambda d: d["instance_types"][0]["prices"].append({"zone": "a", "per_hour": 3}), "prices", "priced twice"),
        (lambda d: d["instance_types"][0]["prices"][0].update(per_hour=-1), "per_hour", "greater than or equal"),
        (lambda d: d["instance_types"][0].update(cpu="0"), "cpu", "more than 0"),
        (lambda d: d.update(labels={"karpenter.sh/capacity-type": "spot"}), "offers", "set by the offering"),
        (lambda d: d["instance_types"].append(dict(d["instance_types"][0])), "instance_types", "unique"),
        (lambda d: d["instance_types"][0].update(server="Nope"), "instance_types[0](p4d.24xlarge).gpu", "no catalogue"),
    ],
)
def test_bad_offers_name_the_file_and_field(tmp_path, change, field, message):
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    change(data)
    path = _write(tmp_path, data)
    with pytest.raises(InputError) as raised:
        load_offers(path)
    assert raised.value.source == path
    assert field in str(raised.value) or field == "offers"
    assert message in str(raised.value)


def test_not_a_mapping(tmp_path):
    with pytest.raises(InputError, match="instance_types"):
        load_offers(_write(tmp_path, ["p4d.24xlarge"]))
