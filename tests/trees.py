"""Random switch trees for property tests, written as topocoll YAML so the
parser is exercised too, with an independent (test-only) load oracle."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st


@dataclass
class Tree:
    parents: list[int | None]      # parent switch of each switch (None: top)
    machines: list[list[str]]      # machines on each switch, rank order within
    file_order: list[int]          # order in which switches appear in the file
    uplink_mbit: list[int] | None = None    # rate of each switch's uplink (links of unequal rates)
    machine_mbit: dict[str, int] | None = None   # machines whose link is not the default 100 Mbit/s

    def yaml(self) -> str:
        lines = ["bandwidth: 100Mbit"] if self.uplink_mbit or self.machine_mbit else []
        lines.append("switches:")
        for s in self.file_order:
            kids = [f"s{c}" for c, p in enumerate(self.parents) if p == s]
            lines.append(f"  - name: s{s}")
            if self.machines[s]:
                lines.append(f"    machines: [{', '.join(self.machines[s])}]")
            if kids:
                lines.append(f"    switches: [{', '.join(kids)}]")
            if self.uplink_mbit and self.parents[s] is not None:
                lines.append(f"    uplink: {{bandwidth: {self.uplink_mbit[s]}Mbit}}")
        if self.machine_mbit:
            lines.append("machines:")
            lines += [f"  {m}: {{bandwidth: {r}Mbit}}" for m, r in self.machine_mbit.items()]
        return "\n".join(lines) + "\n"

    def rank_order(self) -> list[str]:
        return [m for s in self.file_order for m in self.machines[s]]

    def expected_load(self) -> int:
        """max over links of below * (M - below), computed here independently."""
        M = sum(len(m) for m in self.machines)
        below = [len(m) for m in self.machines]
        order = sorted(range(len(self.parents)), key=self.depth, reverse=True)
        best = 1 if M >= 2 else 0       # each machine's own link carries 1*(M-1)
        best = max(best, M - 1)
        for s in order:
            p = self.parents[s]
            if p is not None:
                below[p] += below[s]
                best = max(best, below[s] * (M - below[s]))
        return best

    def depth(self, s: int) -> int:
        d = 0
        while self.parents[s] is not None:
            s = self.parents[s]
            d += 1
        return d


@st.composite
def trees(draw, max_machines: int = 80, max_switches: int = 12) -> Tree:
    """Trees of every shape: chains (parent = previous), stars, machines on
    the top switch, switches without machines, equal subtrees, 1..80 machines."""
    n = draw(st.integers(1, max_switches))
    chain = draw(st.booleans())
    parents: list[int | None] = [None] + [
        (i - 1) if chain else draw(st.integers(0, i - 1)) for i in range(1, n)
    ]
    if draw(st.booleans()):
        # equal subtrees: the same count on every switch
        per = draw(st.integers(0, max(1, max_machines // n)))
        counts = [per] * n
    else:
        homes = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=max_machines))
        counts = [homes.count(s) for s in range(n)]
    if sum(counts) == 0:
        counts[draw(st.integers(0, n - 1))] = 1
    machines, k = [], 0
    for c in counts:
        machines.append([f"m{k + i}" for i in range(c)])
        k += c
    order = list(draw(st.permutations(range(n))))
    return Tree(parents, machines, order)


@st.composite
def capacitated_trees(draw, max_machines: int = 80, max_switches: int = 12, max_capacity: int = 8) -> Tree:
    """Trees whose switch uplinks run at 1..max_capacity times the host links'
    100 Mbit/s (capacities 1..8), and now and then hosts at 2x or 3x."""
    t = draw(trees(max_machines=max_machines, max_switches=max_switches))
    t.uplink_mbit = [100 * draw(st.integers(1, max_capacity)) for _ in t.parents]
    if draw(st.integers(0, 3)) == 0:
        names = [m for ms in t.machines for m in ms]
        fast = draw(st.lists(st.sampled_from(names), max_size=max(1, len(names) // 3), unique=True))
        t.machine_mbit = {m: 100 * draw(st.integers(2, 3)) for m in fast if len(fast) < len(names)}
    return t
