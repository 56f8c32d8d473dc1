"""``plan_checkpoints(loss, budget_bytes, feed)``: recompute checkpoints chosen under a memory budget.

Contract
--------
Called on a program that holds the forward only (before ``minimize``/``append_backward``), it
returns the Variables to pass to ``RecomputeOptimizer._set_checkpoints`` /
``append_backward(checkpoints=...)`` that minimise the FLOPs the recompute pass adds, subject to
the estimated peak (``estimate``) of the forward + backward step (with ``optimizer``, the whole
training step it appends; plus ``extra_bytes`` the caller adds later) within ``budget_bytes``.  An empty list means
no recompute is needed.  If no choice fits, ``BudgetError`` states the smallest peak it found.

Algorithm
---------
1. Analysis (once): the plain backward on a clone, estimated exactly (``estimate``): the peak, the
   bytes and FLOPs of every forward value and op.  *Saved* values are forward values a gradient op
   reads as data (what the plain backward keeps alive).  *Candidates* are single-variable cuts of
   the forward path: positions where exactly one non-persistable value crosses from the ops before
   to the ops after (every layer boundary of a chain; block boundaries of residual and attention
   nets).  More than ``MAX_CANDIDATES`` are thinned evenly.
2. Model: with checkpoints s_1 < ... < s_r, segment j runs from after s_{j-1}'s producer to
   s_j's producer, as the recompute pass cuts it.  Its recompute costs the FLOPs of its ops up to
   the last one writing a saved value (F_j) and makes its saved values live again while its
   gradients run (R_j).  The peak is modelled as
   ``base + max(C + T(s_r), max_j (sum_{i<=j} |s_i| + R_j))`` where C is the checkpoints' bytes,
   T(s_r) the saved bytes after the last checkpoint (never recomputed), and base is calibrated so
   that the empty set gives the exact plain peak.
3. Search: dynamic programming over candidates in forward order; a state is (last checkpoint,
   bytes of the checkpoints so far) with the least FLOPs, Pareto-pruned; O(candidates^2 x front).
   It is exact for the model (tests compare it with brute force).
4. Check: the chosen set is built and estimated exactly.  If the true peak exceeds the budget, the
   model's budget is lowered by the excess and the search repeats (at most ``ROUNDS`` times); then
   the set the model rates lowest in peak is built too, and the cheapest built set that fits is
   returned.  Minimal FLOPs hold where the model is right (plain chains: tested against exhaustive
   search); with dropout or attention it can misjudge the copies and choose a costlier set.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core import names, roles
from ..core.errors import HeadraceError
from ..core.program import Program
from ..core.variable import Variable
from ..ops.registry import lookup
from ..passes.recompute import forward_path
from .estimate import estimate

MAX_CANDIDATES = 96
ROUNDS = 6


class BudgetError(HeadraceError, ValueError):
    """No checkpoint choice brings the estimated peak within the budget."""


@dataclass
class Candidate:
    name: str
    pos: int          # path position of its producer
    nbytes: int


class Analysis:
    """What the planner knows about a forward program (step 1 of the module docstring)."""

    def __init__(self, loss, feed, no_grad_set=None, extra_bytes=0, optimizer=None):
        self.loss, self.feed, self.no_grad = loss, feed, set(no_grad_set or ())
        self.extra, self.optimizer = int(extra_bytes), optimizer
        program = loss.block.program
        if any(roles.is_backward(op.attrs.get(roles.ROLE_ATTR, 0)) for op in program.global_block().ops):
            raise ValueError("plan_checkpoints: the program already has a backward; plan checkpoints "
                             "before minimize()/append_backward()")
        self.program = program
        plain, _ = self.build([])
        self.plain = estimate(plain, feed, fetch_list=[loss.name], live_at_peak=False)
        block = plain.global_block()
        self.path = forward_path(block, [loss.name], self.no_grad)
        index = {id(op): i for i, op in enumerate(block.ops)}
        self.flops = [self.plain.flops[index[id(op)]] if id(op) in index else 0 for op in self.path]
        persist = {v.name for v in plain.list_vars() if v.persistable}
        self.saved = self._saved(block, persist)
        self.candidates = self._candidates(persist)

    def build(self, checkpoints):
        """A clone of the forward program with its backward (recomputing ``checkpoints``) and, with
        an optimizer, the updates a scratch copy of it appends."""
        from ..autodiff.backward import append_backward
        from ..core.context import program_guard

        clone = self.program.clone()
        loss = clone.global_block().var(self.loss.name)
        with program_guard(clone, Program()), names.guard():   # the user's name counters stay as they are
            pairs = append_backward(loss, no_grad_set=self.no_grad, checkpoints=list(checkpoints) or None)
            if self.optimizer is not None:    # the whole step: clipping, decay, updates, state
                _scratch(self.optimizer).apply_gradients(pairs)
        return clone, loss

    def peak(self, checkpoints) -> int:
        program, loss = self.build(checkpoints)
        return estimate(program, self.feed, fetch_list=[loss.name], live_at_peak=False).peak_bytes + self.extra

    def _saved(self, block, persist) -> dict:
        """Forward value -> bytes, for values a gradient op reads as data."""
        written = {n for op in self.path for n in op.output_arg_names if n not in persist}
        saved = {}
        for op in block.ops:
            if not roles.is_backward(op.attrs.get(roles.ROLE_ATTR, 0)):
                continue
            shape_only = lookup(op.type).no_need_buffer
            for slot, slot_names in op.inputs.items():
                if slot in shape_only:
                    continue
                for n in slot_names:
                    if n in written:
                        saved[n] = self.plain.var_bytes.get(n, 0)
        return saved

    def _candidates(self, persist) -> list:
        last_read = {}
        for i, op in enumerate(self.path):
            for n in op.input_arg_names:
                last_read[n] = i
        found, live = [], {}
        for i, op in enumerate(self.path[:-1]):
            for n in op.output_arg_names:
                if n not in persist and last_read.get(n, -1) > i:
                    live[n] = i
            for n in [n for n, _ in live.items() if last_read.get(n, -1) <= i]:
                del live[n]
            if len(live) == 1:
                (name, pos), = live.items()
                if not found or found[-1].name != name:
                    found.append(Candidate(name, pos, self.plain.var_bytes.get(name, 0)))
        if len(found) > MAX_CANDIDATES:
            step = len(found) / MAX_CANDIDATES
            found = [found[int(k * step)] for k in range(MAX_CANDIDATES)]
        return found


class Model:
    """The planner's peak and FLOPs model over candidate sets (step 2 of the module docstring)."""

    def __init__(self, analysis):
        path, saved = analysis.path, analysis.saved
        n = len(path)
        self.pf, self.ps, self.last_saved = [0] * (n + 1), [0] * (n + 1), [-1] * (n + 1)
        for i, op in enumerate(path):
            here = sum(saved.get(name, 0) for name in dict.fromkeys(op.output_arg_names))
            self.pf[i + 1] = self.pf[i] + analysis.flops[i]
            self.ps[i + 1] = self.ps[i] + here
            self.last_saved[i + 1] = i if here else self.last_saved[i]
        self.saved = saved
        self.cands = analysis.candidates
        self.n = n
        self.base = analysis.plain.peak_bytes + analysis.extra - self.ps[n]

    def segment(self, start, cand):
        """(recompute FLOPs, bytes made live again) of the segment [start, cand.pos + 1)."""
        end = cand.pos + 1
        last = self.last_saved[end - 1]      # the last saved writer before the checkpoint's producer
        flops = self.pf[last + 1] - self.pf[start] if last >= start else 0
        live = self.ps[end] - self.ps[start] - self.saved.get(cand.name, 0)
        return flops, max(live, 0)

    def tail(self, cand) -> int:
        return self.ps[self.n] - self.ps[cand.pos + 1]

    def peak(self, chosen) -> int:
        """The modelled peak of a set of candidate indices (sorted)."""
        if not chosen:
            return self.base + self.ps[self.n]
        cum, worst, start = 0, 0, 0
        for k in chosen:
            cand = self.cands[k]
            cum += cand.nbytes
            worst = max(worst, cum + self.segment(start, cand)[1])
            start = cand.pos + 1
        return self.base + max(worst, cum + self.tail(self.cands[chosen[-1]]))

    def flops(self, chosen) -> int:
        total, start = 0, 0
        for k in chosen:
            total += self.segment(start, self.cands[k])[0]
            start = self.cands[k].pos + 1
        return total

    def search(self, budget):
        """The candidate indices of least FLOPs whose modelled peak is within ``budget`` (None if
        no set fits; [] if no checkpoint is needed)."""
        limit = budget - self.base
        if self.ps[self.n] <= limit:
            return []
        states = []      # per candidate: Pareto front [(cum, flops, back)], cum ascending
        best = None
        for k, cand in enumerate(self.cands):
            options = []
            f0, r0 = self.segment(0, cand)
            if cand.nbytes + r0 <= limit:
                options.append((cand.nbytes, f0, None))
            for j in range(k):
                prev = self.cands[j]
                if prev.pos >= cand.pos:
                    continue
                f, r = self.segment(prev.pos + 1, cand)
                for idx, (cum, fl, _) in enumerate(states[j]):
                    c = cum + cand.nbytes
                    if c + r <= limit:
                        options.append((c, fl + f, (j, idx)))
            front = _pareto(options)
            states.append(front)
            for idx, (cum, fl, _) in enumerate(front):
                if cum + self.tail(cand) <= limit and (best is None or (fl, cum) < best[0]):
                    best = ((fl, cum), (k, idx))
        if best is None:
            return None
        chosen, node = [], best[1]
        while node is not None:
            k, idx = node
            chosen.append(k)
            node = states[k][idx][2]
        return chosen[::-1]


def _pareto(options) -> list:
    """Options (cum, flops, back) not dominated by another with both less or equal; cum ascending."""
    front = []
    for cum, fl, back in sorted(options, key=lambda o: (o[0], o[1])):
        if not front or fl < front[-1][1]:
            front.append((cum, fl, back))
    return front


def plan_checkpoints(loss, budget_bytes, feed, no_grad_set=None, extra_bytes=0, optimizer=None) -> list:
    """See the module docstring.  ``optimizer``: the step includes what it appends (a scratch copy
    of it applies the gradients in every program the planner builds; the user's is untouched)."""
    if not isinstance(loss, Variable):
        raise TypeError(f"plan_checkpoints: loss must be a Variable of a static program, got {type(loss).__name__}")
    check_budget(budget_bytes, "plan_checkpoints: budget_bytes")
    analysis = Analysis(loss, feed, no_grad_set, extra_bytes, optimizer)
    plain = analysis.plain.peak_bytes + analysis.extra
    if plain <= budget_bytes:
        return []
    model = Model(analysis)
    tried = {}            # checkpoint names -> exact peak, of every set built
    target = budget_bytes
    for _ in range(ROUNDS):
        chosen = model.search(target)
        if chosen is None:
            break
        names = tuple(model.cands[k].name for k in chosen)
        peak = tried[names] = analysis.peak(names)
        if peak <= budget_bytes:
            return [loss.block.var(n) for n in names]
        target -= peak - budget_bytes
    names, peak = _smallest_peak(analysis, model)
    tried[names] = peak
    fits = [n for n, p in tried.items() if p <= budget_bytes]
    if fits:              # the model misjudged; a set it built fits: the one it rates cheapest
        best = min(fits, key=lambda n: model.flops([_index(model, x) for x in n]))
        return [loss.block.var(n) for n in best]
    raise BudgetError(f"plan_checkpoints: no recompute checkpoints bring the step's peak within {int(budget_bytes)} "
                      f"bytes; the smallest peak found is {min(peak, plain)} bytes (the plain step needs {plain})")


def _index(model, name) -> int:
    return next(k for k, c in enumerate(model.cands) if c.name == name)


def check_budget(budget, what) -> None:
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0:
        raise ValueError(f"{what} must be a positive number of bytes, got {budget!r}")


def _scratch(optimizer):
    """A copy of ``optimizer`` that appends to another program without touching the original's
    state (its own accumulators and containers)."""
    import copy
    from collections import defaultdict

    scratch = copy.copy(optimizer)
    for key, value in vars(optimizer).items():
        if isinstance(value, (dict, list, set)):
            setattr(scratch, key, copy.copy(value))
    scratch._accumulators = defaultdict(dict)
    scratch._pending_state = None
    return scratch


def _smallest_peak(analysis, model) -> tuple:
    """(names, exact peak) of the set the model rates lowest (found by bisecting its budget)."""
    lo, hi = model.base, model.peak([])
    chosen = []
    while hi - lo > max(1, hi // 1000):
        mid = (lo + hi) // 2
        found = model.search(mid)
        if found is None:
            lo = mid
        else:
            hi, chosen = mid, found
    names = tuple(model.cands[k].name for k in chosen)
    return names, analysis.peak(names)
