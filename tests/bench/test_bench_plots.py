"""Bench figures keep every policy visible where curves coincide: each its own colour, dashes and marker, the
markers shifted per policy; the openb figure adds each policy's distance below the best."""

from __future__ import annotations

import io
from types import SimpleNamespace

from matplotlib.image import imread

from gpusched.bench.plots import _style, plot_openb


def test_each_policy_differs_in_colour_dashes_and_marker():
    styles = [_style(number, 130) for number in range(8)]
    for key in ("color", "linestyle", "marker", "markevery"):
        assert len({str(style[key]) for style in styles}) == 8, key


def test_coinciding_curves_separate_in_the_panel_below(tmp_path):
    curve = [None] * 70 + [30 - (x - 70) * 0.3 if x < 95 else 5.0 for x in range(70, 131)]
    policies = [SimpleNamespace(policy=name, curve=curve) for name in ("FGD", "gpusched", "binpack")]
    trace = SimpleNamespace(trace="t", nodes=2, gpus=16, seeds=[42], upper_pct=None, policies=policies)
    buffer = io.BytesIO()
    plot_openb(SimpleNamespace(traces=[trace]), buffer)  # the fields plot_openb reads of an OpenbBench
    image = imread(io.BytesIO(buffer.getvalue()))
    assert image.shape[0] > image.shape[1] * 0.9  # two panels, one above the other
