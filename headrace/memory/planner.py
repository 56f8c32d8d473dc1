"""``plan_checkpoints(loss, budget_bytes, feed)``: recompute checkpoints chosen under a memory budget.

Contract
--------
Called on a program that holds the forward only (before ``minimize``/``append_backward``), it
returns the Variables to pass to ``RecomputeOptimizer._set_checkpoints`` /
``append_backward(checkpoints=...)`` that minimise the FLOPs the recompute pass adds, subject to
the estimated peak (``estimate``) of the forward + backward step (with ``optimizer``, the whole
training step it appends; plus ``extra_bytes`` the caller adds later) within ``budget_bytes``.
An empty list means no recompute is needed.  If no choice fits, ``BudgetError`` states the
smallest peak it found and the checkpoints that give it.

Algorithm
---------
1. Analysis (once): the plain backward on a clone, estimated exactly (``estimate``): the peak,
   the bytes and FLOPs of every forward value and op, and per forward op the peak while its
   gradient ops run.  *Saved* values are forward values a gradient op reads as data (what the
   plain backward keeps alive).  *Candidates* are single-variable cuts of the forward path read
   right after they are written: positions where exactly one non-persistable value crosses from
   the ops before to the ops after (every op boundary of a chain; block boundaries of residual and
   attention nets).  More than ``MAX_CANDIDATES`` are thinned evenly.
2. Model (``model.py``): the recompute FLOPs of a candidate set are exact — the pass's own rules
   (``recompute.freed_names``, ``recompute.copied``) pick the ops it copies; its peak is modelled
   from the plain step's per-op peaks and the bytes each segment holds or makes live again.
3. Search: dynamic programming over candidates in path order (Pareto fronts of bytes held and
   FLOPs), exact for the model (tests compare it with brute force over the model).
4. Exact checks: the model's choices are built and estimated exactly, for modelled budgets
   corrected by the model's error (``_search``), then a local search over neighbouring sets
   (``_improve``) builds those of fewer FLOPs than the best set that fits.  At most ``BUILDS``
   builds (fewer for long programs).  The cheapest built set whose exact peak fits is returned;
   if none fits, ``BudgetError`` names the lowest exact peak built and its checkpoints.  Minimal
   FLOPs are tested against exhaustive search (every candidate subset built and estimated) on
   chains, dropout chains, residual nets and attention blocks; the search is a heuristic where
   the model errs, so elsewhere that is a measured result, not a guarantee.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core import names, roles
from ..core.errors import HeadraceError
from ..core.program import Program
from ..core.variable import Variable
from ..ops.registry import lookup
from ..passes import recompute
from .estimate import estimate
from .model import Model

MAX_CANDIDATES = 96
BUILDS = 24        # exact builds per plan; fewer for long programs: 2000 // path length, at least 2
MOVE = 3           # a neighbouring set moves one checkpoint by up to this many candidates
PATIENCE = 12      # the local search stops after this many builds that found nothing better


class BudgetError(HeadraceError, ValueError):
    """No checkpoint choice brings the estimated peak within the budget."""


@dataclass
class Candidate:
    name: str
    pos: int          # path position of its producer
    nbytes: int


@dataclass
class _Names:
    """A path op's variable names, read once (what the recompute pass's rules read of an op)."""
    input_arg_names: list
    output_arg_names: list


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
        self.path = recompute.forward_path(block, [loss.name], self.no_grad)
        self.names = [_Names(op.input_arg_names, op.output_arg_names) for op in self.path]
        index = {id(op): i for i, op in enumerate(block.ops)}
        self.flops = [self.plain.flops[index[id(op)]] if id(op) in index else 0 for op in self.path]
        self.persist = {v.name for v in plain.list_vars() if v.persistable}
        self.reads = {}
        for i, op in enumerate(self.path):
            for n in op.input_arg_names:
                self.reads.setdefault(n, []).append(i)
        self.held = recompute.held_names(block, self.path, [], [loss.name])
        self.saved = self._saved(block, self.persist)
        self.candidates = self._candidates(self.persist)
        self.transient = self._transient(block)

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

    def copy_flops(self, held, end, begin=0) -> list:
        """``[start - begin] -> FLOPs`` of the copies the recompute pass makes for a segment of
        path positions ``[start, end)`` whose checkpoints are ``held`` (names; ``start`` in
        ``begin`` .. ``end``).  The pass's own rules decide: ``freed_names``, then ``copied``
        from the values the gradient ops read as data.  Whether an op at or after ``start`` is
        copied does not depend on ``start`` (a gradient op reads only values of its own op,
        written no later than it), so one walk prices every start."""
        ops = self.names[begin:end]
        freed, _ = recompute.freed_names(ops, end, self.held | set(held), self.reads,
                                         self.persist.__contains__)
        freed = set(freed)
        kept = recompute.copied(ops, freed, {n for n in freed if n in self.saved})
        suffix = [0] * (len(ops) + 1)
        costs = dict((i, self.flops[begin + i]) for i, _ in kept)
        for i in range(len(ops) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + costs.get(i, 0)
        return suffix

    def _transient(self, block):
        """[path position p] -> the plain step's peak while the gradient ops of path op p run
        (from the first op reading one of its outputs' gradients to the next such op of another
        path op); None if the estimate's op order is not the block's."""
        ops = block.ops
        if [op.type for op in ops] != self.plain.op_types:
            return None
        first = {}
        for i, op in enumerate(ops):
            if roles.is_backward(op.attrs.get(roles.ROLE_ATTR, 0)):
                for n in op.input_arg_names:
                    first.setdefault(n, i)
        starts = [min((first[g] for g in map(names.grad_name, op.output_arg_names) if g in first), default=None)
                  for op in self.path]
        bounds = sorted(set(s for s in starts if s is not None)) + [len(ops)]
        after = dict(zip(bounds, bounds[1:]))
        inside = [step[3] + self.extra for step in self.plain.profile]
        return [max(inside[s:after[s]]) if s is not None else 0 for s in starts]

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
                # the pass's segments start at a checkpoint's first reader: keep cuts read right
                # after they are written, so consecutive segments tile the path
                if pos == 0 or min(self.reads[name]) != pos + 1:
                    continue
                if not found or found[-1].name != name:
                    found.append(Candidate(name, pos, self.plain.var_bytes.get(name, 0)))
        if len(found) > MAX_CANDIDATES:
            step = len(found) / MAX_CANDIDATES
            found = [found[int(k * step)] for k in range(MAX_CANDIDATES)]
        return found


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
    tried = {}            # checkpoint names -> (exact peak, FLOPs), of every set built
    builds = max(2, min(BUILDS, 2000 // max(len(analysis.path), 1)))
    _search(analysis, model, budget_bytes, tried, builds // 2)
    _improve(analysis, model, budget_bytes, tried, builds - len(tried))
    fits = [(flops, ckpts) for ckpts, (peak, flops) in tried.items() if peak <= budget_bytes]
    if fits:
        return [loss.block.var(n) for n in min(fits)[1]]
    ckpts, peak = _smallest_peak(analysis, model, tried)
    if peak <= budget_bytes:
        return [loss.block.var(n) for n in ckpts]
    if peak >= plain:
        found = "no checkpoint set lowers it"
    else:
        found = f"the smallest peak found is {peak} bytes, with checkpoints {list(ckpts)}"
    raise BudgetError(f"plan_checkpoints: no recompute checkpoints bring the step's peak within "
                      f"{int(budget_bytes)} bytes; {found} (the plain step needs {plain})")


def _search(analysis, model, budget, tried, builds) -> None:
    """Build the model's choices for a sequence of modelled budgets (``tried``: names -> (exact
    peak, FLOPs)); at most ``builds`` builds.  Each next modelled budget corrects the budget by
    the model's error on the set just built (``budget + modelled - exact`` peak); when that is not
    strictly between the highest modelled budget whose choice fit and the lowest one above it
    whose choice did not, it bisects between them (or, before any fit, lowers by the excess)."""
    low, high, target = [], [model.peak([])], budget   # modelled budgets: choice fits / does not
    for _ in range(builds):
        chosen = model.search(target)
        if chosen is None:               # the model fits nothing here: only higher budgets help
            low.append(target)
            chosen = []
        ckpts = _names(model, chosen)
        if ckpts not in tried:
            tried[ckpts] = (analysis.peak(ckpts), model.flops(chosen))
        peak = tried[ckpts][0]
        (low if peak <= budget and chosen else high).append(target)
        fit = max(low, default=None)
        miss = min((m for m in high if fit is None or m > fit), default=None)
        if fit is not None and miss is not None and miss - fit <= max(1, budget // 1000):
            return
        guess = budget + model.peak(chosen) - peak if chosen else target
        if fit is None:
            target = min(guess, target - (peak - budget))
        elif fit < guess < miss and guess not in low + high:
            target = guess
        else:
            target = (fit + miss) // 2


def _improve(analysis, model, budget, tried, builds) -> None:
    """Local search with exact checks, over the neighbours of every set built (a checkpoint moved
    by up to ``MOVE`` candidates, dropped, or one added): build the neighbour of lowest peak —
    in turn the guessed one (its modelled peak corrected by the model's error on the set it
    neighbours) and the modelled one; then least FLOPs — among those of fewer FLOPs than the
    best set that fits (all of them while none fits), until none is left, ``builds`` builds are done, or ``PATIENCE`` builds in
    a row found neither a cheaper set that fits nor (while none fits) a lower peak."""
    index = {c.name: k for k, c in enumerate(model.cands)}
    pool = {}

    def add_neighbours(ckpts):
        chosen = [index[n] for n in ckpts]
        error = tried[ckpts][0] - model.peak(chosen)     # the model's error here, assumed nearby too
        for other in _neighbours(chosen, len(model.cands)):
            key = _names(model, other)
            modelled = model.peak(other)
            if key not in tried and (key not in pool or modelled + error < pool[key][1]):
                pool[key] = (model.flops(other), modelled + error, modelled)

    def score():       # (FLOPs of the best set that fits, or None; the lowest peak)
        return (min((f for p, f in tried.values() if p <= budget), default=None),
                min(p for p, _ in tried.values()))

    for ckpts in list(tried):
        add_neighbours(ckpts)
    idle = 0
    for step in range(builds):
        before = score()
        cheaper = [k for k in pool if before[0] is None or pool[k][0] < before[0]]
        if not cheaper or idle >= PATIENCE:
            return
        which = 1 + step % 2            # guessed and modelled peaks in turn
        ckpts = min(cheaper, key=lambda k: (pool[k][which], pool[k][0]))
        flops = pool.pop(ckpts)[0]
        tried[ckpts] = (analysis.peak(ckpts), flops)
        add_neighbours(ckpts)
        after = score()
        idle = 0 if after[0] != before[0] or (after[0] is None and after[1] < before[1]) else idle + 1


def _neighbours(chosen, n) -> list:
    """Sorted index lists one move away from ``chosen`` (see ``_improve``)."""
    have, out = set(chosen), []
    for k in chosen:
        out.append(sorted(have - {k}))
        for step in range(-MOVE, MOVE + 1):
            if step and 0 <= k + step < n and k + step not in have:
                out.append(sorted(have - {k} | {k + step}))
    out.extend(sorted(have | {k}) for k in range(n) if k not in have)
    return out


def _names(model, chosen) -> tuple:
    return tuple(model.cands[k].name for k in chosen)


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


def _smallest_peak(analysis, model, tried) -> tuple:
    """(checkpoint names, exact peak) of the lowest exact peak among the sets built and the set
    the model rates lowest (found by bisecting its budget)."""
    lo, hi = model.base, model.peak([])
    chosen = []
    while hi - lo > max(1, hi // 1000):
        mid = (lo + hi) // 2
        found = model.search(mid)
        if found is None:
            lo = mid
        else:
            hi, chosen = mid, found
    ckpts = tuple(model.cands[k].name for k in chosen)
    if ckpts not in tried:
        tried[ckpts] = (analysis.peak(ckpts), model.flops(chosen))
    return min(((peak, ckpts) for ckpts, (peak, _) in tried.items()), default=(None, ()))[::-1]
