"""benchmarks/learning.py (issue 20 part 1): the simulated bench runs in a short mode and writes its figures.

Only completion and the figures' presence are checked (the issue's rule): the targets are measured by the
full run (benchmarks/README.md, "Learning loop"), never asserted here. The run is the real thing: the
local upstream and a gateway per policy, as separate processes on 127.0.0.1.
"""

import json
import xml.etree.ElementTree as ElementTree

from benchmarks import learning


def test_issue20_short_simulation_completes_and_writes_its_figures(tmp_path):
    said = []
    found = learning.simulate(prompts=160, seed=3, every=40, out=tmp_path, say=said.append)
    saved = json.loads(found["json"].read_text(encoding="utf-8"))
    assert saved["prompts"] == 160 and [r["policy"] for r in saved["results"]] == list(learning.POLICIES)
    for run in saved["runs"]:
        assert len(run["events"]) == 160 and len(run["checkpoints"]) == 4
    picture = ElementTree.fromstring(found["svg"].read_text(encoding="utf-8"))
    assert picture.tag.endswith("svg") and len(picture.findall("{http://www.w3.org/2000/svg}polyline")) >= 8
    assert said and "| gap closed by the route, whole run |" in said[0] and "![learning curves]" in said[0]
