"""The planner's model of a checkpoint set: the FLOPs its recompute costs (exact) and its peak
(calibrated), and the search for the cheapest set under a budget.

Segments, as the recompute pass cuts them (``passes/recompute.py``, semantics 3)
--------------------------------------------------------------------------------
The candidates are single-variable cuts read right after they are written (``planner.py``), so a
chosen set, in path order, falls into *runs* of candidates at consecutive positions.  The pass
skips a pair of consecutive checkpoints that bound a single op, so:

- between runs ``(.., j)`` and ``(a, .., b)`` one segment runs from after ``j``'s producer to
  ``a``'s producer; the ops of a run after its first member are in no segment (never recomputed,
  their outputs kept as without recompute);
- the first run ``(a, .., b)`` ends the prefix segment ``[0, b]`` with all its members held — if
  another run follows or the run is one checkpoint; a set that is a single run of two or more
  has no segment at all (nothing is recomputed);
- the ops after the last checkpoint are never recomputed.

FLOPs: a segment's copies are found with the pass's own rules (``recompute.freed_names`` and
``recompute.copied``, priced by ``Analysis.copy_flops``), so ``flops`` equals the FLOPs of the
copies in the program the pass builds (tests check every subset of small nets).  A segment
ending at ``a`` copies the same ops after its start whatever the start is, and an inner op of a
first run is copied or not on its own (a copy there reads only the previous checkpoint), so one
walk per candidate prices every segment.

Peak (a model; the planner checks its choices with the exact estimate).  ``grads[p]`` is the
plain step's peak while the gradient ops of path op ``p`` run, when the saved values of ops up to
``p`` are live.  With recompute, while a segment's gradients run the values it saved or
recomputed are live as in the plain step, the ones before it are replaced by what the runs
before it hold: the segment's peak is ``held before + max(grads[start..a]) - saved before
start``.  Held: a run's saved checkpoints and the values the pass never frees (random masks that
cannot replay, the saved outputs of a run's inner ops), and a checkpoint no gradient op reads
from the segment on whose copies read it.  At the start of the backward everything held is live
with the saved values after the last checkpoint (``base``: the plain peak less all saved bytes).
"""
from __future__ import annotations


class Model:
    """The planner's FLOPs and peak model over candidate sets (indices into ``analysis.candidates``)."""

    def __init__(self, analysis):
        path, saved, cands = analysis.path, analysis.saved, analysis.candidates
        n = len(path)
        self.ps, self.hs = [0] * (n + 1), [0] * (n + 1)    # saved bytes, held saved bytes, by position
        for i, op in enumerate(path):
            outs = dict.fromkeys(op.output_arg_names)
            self.ps[i + 1] = self.ps[i] + sum(saved.get(name, 0) for name in outs)
            self.hs[i + 1] = self.hs[i] + sum(saved.get(name, 0) for name in outs if name in analysis.held)
        self.cands, self.n = cands, n
        self.base = analysis.plain.peak_bytes + analysis.extra - self.ps[n]
        self.adjacent = [k > 0 and cands[k - 1].pos + 1 == c.pos for k, c in enumerate(cands)]
        self.own = [saved.get(c.name, 0) for c in cands]           # a checkpoint's own saved bytes
        # per candidate as the end of a segment: [start position] -> FLOPs of its copies
        self.copies = [analysis.copy_flops([c.name], c.pos + 1) for c in cands]
        # per candidate inside a first run: FLOPs of its op's copy (its checkpoint held)
        self.inner = [analysis.copy_flops([c.name], c.pos + 1, c.pos)[0] if self.adjacent[k] else 0
                      for k, c in enumerate(cands)]
        # the plain step's peak while the gradients of path op p run (its saved values all live)
        grads = analysis.transient or [self.base + self.ps[p + 1] for p in range(n)]
        self.grads_after = [0] * (n + 1)
        for p in range(n - 1, -1, -1):
            self.grads_after[p] = max(self.grads_after[p + 1], grads[p])
        self.grads_upto = []      # per candidate: [start] -> max of grads[start .. its position]
        for c in cands:
            upto = [0] * (c.pos + 2)
            for p in range(c.pos, -1, -1):
                upto[p] = max(upto[p + 1], grads[p])
            self.grads_upto.append(upto)

    def first(self, a, b) -> tuple:
        """(FLOPs, bytes held after, peak while its gradients run) of a first run ``a..b``."""
        end = self.cands[b].pos + 1
        flops = self.copies[a][0] + sum(self.inner[a + 1:b + 1])
        return flops, self.hs[end] + sum(self.own[a:b + 1]), self.grads_upto[b][0]

    def later(self, j, a) -> tuple:
        """(FLOPs, bytes held after, peak less the bytes held before) of the segment from after
        candidate ``j`` to candidate ``a``: while its gradients run, the plain step's peak less
        the saved values before the segment; checkpoint ``j`` counts from here on if a copy reads
        it and no gradient op does."""
        start, end = self.cands[j].pos + 1, self.cands[a].pos + 1
        copies = self.copies[a]
        extra = self.cands[j].nbytes - self.own[j] if copies[start] > copies[start + 1] else 0
        held = extra + self.hs[end] - self.hs[start] + self.own[a]
        return copies[start], held, extra + self.grads_upto[a][start] - self.ps[start]

    def extend(self, k) -> int:
        """Bytes held by candidate ``k`` inside a later run: its op's saved outputs."""
        pos = self.cands[k].pos
        return self.ps[pos + 1] - self.ps[pos]

    def final(self, b) -> int:
        """Peak less the bytes held, from the start of the backward to the last checkpoint ``b``."""
        after = self.cands[b].pos + 1
        return max(self.base + self.ps[self.n], self.grads_after[after]) - self.ps[after]

    def runs(self, chosen) -> list:
        """A sorted set of candidate indices as runs [(a, b)]."""
        out = []
        for k in chosen:
            if out and out[-1][1] == k - 1 and self.adjacent[k]:
                out[-1] = (out[-1][0], k)
            else:
                out.append((k, k))
        return out

    def _evaluate(self, chosen) -> tuple:
        """(FLOPs, modelled peak) of a sorted set of candidate indices."""
        runs = self.runs(chosen)
        if not runs or (len(runs) == 1 and runs[0][0] < runs[0][1]):
            return 0, self.base + self.ps[self.n]       # no segment: nothing recomputed
        flops, cum, worst = self.first(*runs[0])
        for (_, j), (a, b) in zip(runs, runs[1:]):
            f, held, peak = self.later(j, a)
            flops, worst = flops + f, max(worst, cum + peak)
            cum += held + sum(self.extend(k) for k in range(a + 1, b + 1))
        return flops, max(worst, cum + self.final(runs[-1][1]))

    def peak(self, chosen) -> int:
        """The modelled peak of a set of candidate indices (sorted)."""
        return self._evaluate(chosen)[1]

    def flops(self, chosen) -> int:
        """The FLOPs the recompute pass's copies cost for a set of candidate indices (sorted)."""
        return self._evaluate(chosen)[0]

    def search(self, budget):
        """The candidate indices of least FLOPs whose modelled peak is within ``budget`` (None if
        no set fits; [] if no checkpoint is needed).  Dynamic programming over candidates in path
        order, with per candidate three Pareto fronts of (bytes held, FLOPs, back pointer): sets
        whose first run ends here with one member or with more (the latter may not end the set),
        and sets whose later run reaches here.  Exact for the model (tests: brute force)."""
        if self.base + self.ps[self.n] <= budget:
            return []
        fronts = []          # per candidate: (first of one, first of more, later)
        for k in range(len(self.cands)):
            fronts.append(self._fronts(fronts, k, budget))
        best = None          # ((FLOPs, bytes), (k, kind, index))
        for k, front in enumerate(fronts):
            for kind in (0, 2):
                for idx, (cum, fl, _) in enumerate(front[kind]):
                    if cum + self.final(k) <= budget and (best is None or (fl, cum) < best[0]):
                        best = ((fl, cum), (k, kind, idx))
        return None if best is None else self._trace(fronts, best[1])

    def _fronts(self, fronts, k, budget) -> tuple:
        first1, firstn, later = [], [], []
        a = k
        while True:          # first runs a..k
            flops, held, peak = self.first(a, k)
            if peak <= budget:
                (first1 if a == k else firstn).append((held, flops, ("first", a)))
            if not self.adjacent[a]:
                break
            a -= 1
        if self.adjacent[k]:     # a later run grows by k
            grow = self.extend(k)
            later.extend((cum + grow, fl, ("grow", idx)) for idx, (cum, fl, _) in enumerate(fronts[k - 1][2]))
        for j in range(k - 1 if self.adjacent[k] else k):
            f, held, peak = self.later(j, k)
            for kind in (0, 1, 2):
                for idx, (cum, fl, _) in enumerate(fronts[j][kind]):
                    if cum + peak <= budget:
                        later.append((cum + held, fl + f, (j, kind, idx)))
        return _pareto(first1), _pareto(firstn), _pareto(later)

    def _trace(self, fronts, node) -> list:
        chosen, (k, kind, idx) = [], node
        while True:
            back = fronts[k][kind][idx][2]
            if back[0] == "first":
                return list(range(back[1], k + 1)) + chosen[::-1]
            chosen.append(k)
            if back[0] == "grow":
                k, idx = k - 1, back[1]
            else:
                k, kind, idx = back


def _pareto(options) -> list:
    """Options (cum, flops, back) not dominated by another with both less or equal; cum ascending."""
    front = []
    for cum, fl, back in sorted(options, key=lambda o: (o[0], o[1])):
        if not front or fl < front[-1][1]:
            front.append((cum, fl, back))
    return front
