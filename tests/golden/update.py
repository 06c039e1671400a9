"""Rewrite the golden files from the current generator (run when a change to
the generated plan or entry point is intended)."""

from pathlib import Path

from topocoll import Topology
from topocoll.commands.generate import generate

HERE = Path(__file__).parent
EXAMPLES = HERE.parent.parent / "examples" / "topologies"

text = generate(Topology.load(EXAMPLES / "figure1.yaml"), "faraj-yuan", "fig1_alltoall", phase_order="paper")
(HERE / "figure1_faraj_yuan.c").write_text(text[text.index("/* ---- the plan ---- */"):])
print("updated", HERE / "figure1_faraj_yuan.c")
