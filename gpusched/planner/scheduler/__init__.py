"""kube-scheduler simulated as its plugins, laid out like its framework: results, names, plugins, pipelines, verdict.

`framework` holds the result vocabulary, `names` every plugin name, `plugins/` one module per plugin with its
reason strings, `views` the filter pipelines of gpusched's two model views and of kubectl JSON, `predict` the
verdict for one pod from kubectl JSON.
"""

from __future__ import annotations

__all__: list[str] = []
