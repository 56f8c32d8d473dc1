"""Program and Block: a model as plain data.

A Program is a list of Blocks; block 0 is the global block.  A Block owns its Variables (by name)
and an ordered list of Operators.  Every edit bumps ``Program._version``, which the Executor uses
to know when a cached plan is stale.  ``to_dict``/``from_dict`` are a lossless, JSON-safe round trip.
"""
from __future__ import annotations

import contextlib

from . import program_format, roles
from .callsite import user_callsite
from .errors import ProgramError
from .operator import Operator, attr_from_json, op_checker
from .random import Generator
from .variable import Parameter, Variable, normalize_shape


def _names_of(value, what: str, op_type: str) -> list:
    """Slot contents given as Variable(s) or name(s) -> list of names."""
    if value is None:
        return []
    if isinstance(value, (Variable, str)):
        value = [value]
    names = []
    for item in value:
        if isinstance(item, Variable):
            names.append(item.name)
        elif isinstance(item, str):
            names.append(item)
        else:
            raise TypeError(f"op `{op_type}` {what}: expected Variable or variable name, got {type(item).__name__}")
    return names


class Block:
    """A list of ops over a table of variables; ``parent_idx`` links nested blocks."""

    def __init__(self, program: "Program", idx: int, parent_idx: int = -1):
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.vars: dict[str, Variable] = {}
        self.ops: list[Operator] = []

    # --- variables ---------------------------------------------------------------------------
    def var(self, name: str) -> Variable:
        if not isinstance(name, str):
            raise TypeError(f"var() takes a variable name (str), got {type(name).__name__}")
        v = self.vars.get(name)
        if v is None:
            raise ValueError(f"var {name!r} is not in block {self.idx}")
        return v

    def has_var(self, name: str) -> bool:
        return name in self.vars

    def _find_var_recursive(self, name: str):
        block = self
        while block is not None:
            if name in block.vars:
                return block.vars[name]
            block = self.program.blocks[block.parent_idx] if block.parent_idx >= 0 else None
        return None

    def _var_recursive(self, name: str) -> Variable:
        v = self._find_var_recursive(name)
        if v is None:
            raise ValueError(f"var {name!r} is not in block {self.idx} or its parents")
        return v

    def create_var(self, name=None, shape=None, dtype=None, **kwargs) -> Variable:
        """Create a variable, or return the existing one of that name if it agrees."""
        from . import names as unique_name

        if name is None:
            name = unique_name.generate("_generated_var")
        existing = self.vars.get(name)
        if existing is not None:
            _check_same(existing, shape, dtype)
            for flag in ("persistable", "stop_gradient", "is_data", "need_check_feed"):
                if flag in kwargs and kwargs[flag] is not None:
                    setattr(existing, flag, bool(kwargs[flag]))
            return existing
        var = Variable(self, name, shape=shape, dtype=dtype, **kwargs)
        self.vars[name] = var
        self.program._bump()
        return var

    def create_parameter(self, name, shape, dtype="float32", **kwargs) -> Parameter:
        """Create a Parameter in the program's global block."""
        glob = self.program.global_block()
        if name in glob.vars:
            existing = glob.vars[name]
            if not isinstance(existing, Parameter):
                raise ValueError(f"cannot create parameter {name!r}: a non-parameter variable has that name")
            _check_same(existing, shape, dtype)
            return existing
        param = Parameter(glob, name, shape, dtype, **kwargs)
        glob.vars[name] = param
        self.program._bump()
        return param

    def _remove_var(self, name: str) -> None:
        self.vars.pop(name, None)
        self.program._bump()

    def _rename_var(self, old: str, new: str) -> Variable:
        var = self.var(old)
        if new in self.vars:
            raise ValueError(f"cannot rename {old!r} to {new!r}: the name is taken")
        del self.vars[old]
        var.name = new
        self.vars[new] = var
        for op in self.ops:
            op._rename_input(old, new)
            op._rename_output(old, new)
        self.program._bump()
        return var

    def all_parameters(self) -> list:
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def iter_parameters(self):
        return iter(self.all_parameters())

    # --- ops ---------------------------------------------------------------------------------
    def _make_op(self, type, inputs, outputs, attrs, callsite) -> Operator:
        if not isinstance(type, str):
            raise TypeError(f"op type must be a str, got {type!r}")
        ins = {slot: _names_of(v, f"input `{slot}`", type) for slot, v in (inputs or {}).items()}
        outs = {slot: _names_of(v, f"output `{slot}`", type) for slot, v in (outputs or {}).items()}
        return Operator(self, type, ins, outs, attrs, callsite or user_callsite())

    def _check(self, op: Operator) -> None:
        checker = op_checker()
        if checker is not None:
            checker(self, op)

    def append_op(self, type, inputs=None, outputs=None, attrs=None, callsite=None) -> Operator:
        """Append an op; attributes get their defaults and outputs their inferred shapes."""
        op = self._make_op(type, inputs, outputs, attrs, callsite)
        self._check(op)
        self.ops.append(op)
        self.program._bump()
        return op

    def _insert_op(self, index, type, inputs=None, outputs=None, attrs=None, callsite=None) -> Operator:
        op = self._make_op(type, inputs, outputs, attrs, callsite)
        self._check(op)
        self.ops.insert(index, op)
        self.program._bump()
        return op

    def _prepend_op(self, type, inputs=None, outputs=None, attrs=None, callsite=None) -> Operator:
        return self._insert_op(0, type, inputs, outputs, attrs, callsite)

    def _remove_op(self, index: int, sync: bool = True) -> None:
        del self.ops[index]
        self.program._bump()

    def to_string(self, throw_on_error=False, with_details=False) -> str:
        lines = [f"{{ // block_idx:{self.idx}  parent_idx:{self.parent_idx}"]
        for var in self.vars.values():
            lines.append("    " + var.to_string())
        lines.append("")
        for op in self.ops:
            lines.append("    " + op.to_string())
        lines.append("}")
        return "\n".join(lines)

    def __repr__(self):
        return self.to_string()


def _check_same(existing: Variable, shape, dtype) -> None:
    from .dtypes import convert_dtype

    if shape is not None and existing.shape is not None and normalize_shape(shape) != existing.shape:
        raise ValueError(f"variable {existing.name!r} already exists with shape {list(existing.shape)}, "
                         f"cannot redeclare it with shape {list(normalize_shape(shape))}")
    if dtype is not None and existing.dtype is not None and convert_dtype(dtype) != existing.dtype:
        raise ValueError(f"variable {existing.name!r} already exists with dtype {existing.dtype}, "
                         f"cannot redeclare it with dtype {convert_dtype(dtype)}")


class Program:
    """A whole model: blocks of variables and ops (block 0 is the global block)."""

    def __init__(self):
        self.blocks = [Block(self, 0)]
        self.current_block_idx = 0
        self._version = 0
        self._random_seed = 0
        self._generator = None
        self._appending_grad_times = 0
        self._is_test = False
        self._op_role = 0        # role given to ops appended now (see role_guard)
        self._op_role_var = []
        self._lineage = object()  # shared by a program and its clones (fetching across them is fine)
        # Pass results that are program state (ops carry the buffer plan, see roles.BUFFER_ATTR):
        # ops run in program order, not with updates hoisted (passes/schedule.py).
        self.strict_order = False
        # learning-rate variable name -> callable giving its rate; the executor writes each before
        # a run (optimizer/optimizer.py registers schedules and set_lr values here)
        self._lr_schedulers = {}

    @contextlib.contextmanager
    def role_guard(self, role, role_var=None):
        """Ops appended inside get ``op_role=role`` (and ``op_role_var`` when given)."""
        old = (self._op_role, self._op_role_var)
        self._op_role, self._op_role_var = int(role), list(role_var or [])
        try:
            yield
        finally:
            self._op_role, self._op_role_var = old

    def _bump(self) -> None:
        self._version += 1

    # --- blocks ------------------------------------------------------------------------------
    def global_block(self) -> Block:
        return self.blocks[0]

    def block(self, index: int) -> Block:
        if not 0 <= index < len(self.blocks):
            raise IndexError(f"program has {len(self.blocks)} block(s); there is no block {index}")
        return self.blocks[index]

    def current_block(self) -> Block:
        return self.blocks[self.current_block_idx]

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    def _create_block(self, parent_idx=None) -> Block:
        parent = self.current_block_idx if parent_idx is None else parent_idx
        block = Block(self, len(self.blocks), parent)
        self.blocks.append(block)
        self.current_block_idx = block.idx
        self._bump()
        return block

    def _rollback(self) -> None:
        self.current_block_idx = self.current_block().parent_idx

    def list_vars(self):
        for block in self.blocks:
            yield from block.vars.values()

    def all_parameters(self) -> list:
        return self.global_block().all_parameters()

    # --- randomness --------------------------------------------------------------------------
    @property
    def random_seed(self) -> int:
        return self._random_seed

    @random_seed.setter
    def random_seed(self, seed) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"Program.random_seed must be an int, got {type(seed).__name__}")
        self._random_seed = seed
        self._generator = None
        self._bump()

    def random_generator(self) -> Generator | None:
        """The program's own generator when ``random_seed`` is set, else ``None``."""
        if not self._random_seed:
            return None
        if self._generator is None:
            self._generator = Generator(self._random_seed)
        return self._generator

    # --- copies ------------------------------------------------------------------------------
    def clone(self, for_test: bool = False) -> "Program":
        """A deep copy. With ``for_test`` backward/optimize ops are dropped and every op that
        has an ``is_test`` attribute gets ``is_test=True``."""
        spec = self.to_dict()
        if for_test:
            spec = _inference_spec(spec)
        program = Program.from_dict(spec, validate=False)
        program._is_test = for_test
        program._lineage = self._lineage
        if not for_test:   # shared, so a later set_lr or schedule reaches the clone too
            program._lr_schedulers = self._lr_schedulers
        return program

    def to_dict(self) -> dict:
        """A JSON-safe description of the whole program (lossless: ``from_dict`` inverts it).
        The optimizer's learning-rate sources (``_lr_schedulers``: Python schedule objects) are
        not part of it; ``clone()`` carries them over."""
        return {
            "version": program_format.FORMAT_VERSION,
            "random_seed": self._random_seed,
            "strict_order": self.strict_order,
            "blocks": [
                {
                    "idx": b.idx,
                    "parent_idx": b.parent_idx,
                    "vars": [v._spec() for v in b.vars.values()],
                    "ops": [op._spec() for op in b.ops],
                }
                for b in self.blocks
            ],
        }

    @classmethod
    def from_dict(cls, spec: dict, validate: bool = True) -> "Program":
        """Build a Program from ``to_dict()``'s description.  With ``validate`` (the default) the
        description is checked first (``core/program_format.py``: its format version, fields and
        value types) and the built program after (op types, attributes, variables defined before
        use: the validator ``headrace.passes.verify`` installs); any fault is a ``ProgramError``
        naming the block, the op or variable index and the field.  ``clone()`` skips the checks:
        its description comes from a live program."""
        if validate:
            program_format.check_spec(spec)
        program = cls()
        program._random_seed = int(spec.get("random_seed", 0))
        program.strict_order = bool(spec.get("strict_order", False))
        program.blocks = []
        for bspec in spec["blocks"]:
            block = Block(program, bspec["idx"], bspec["parent_idx"])
            program.blocks.append(block)
            for i, vspec in enumerate(bspec["vars"]):
                try:
                    var = _var_from_spec(block, dict(vspec))
                except (TypeError, ValueError, KeyError, AttributeError) as exc:
                    raise ProgramError(f"program description, block {block.idx} variable {i} "
                                       f"({vspec.get('name')!r}): {exc}") from exc
                block.vars[var.name] = var
            for ospec in bspec["ops"]:
                attrs = {k: attr_from_json(v) for k, v in ospec["attrs"].items()}
                block.ops.append(Operator(block, ospec["type"], ospec["inputs"], ospec["outputs"],
                                          attrs, ospec.get("callsite")))
        validator = program_format.program_validator()
        if validate and validator is not None:
            validator(program)
        program._bump()
        return program

    # --- text --------------------------------------------------------------------------------
    def to_string(self, throw_on_error=False, with_details=False) -> str:
        return "\n".join(b.to_string(throw_on_error, with_details) for b in self.blocks)

    def __str__(self):
        return self.to_string()

    def __repr__(self):
        n_ops = sum(len(b.ops) for b in self.blocks)
        return f"<Program blocks={len(self.blocks)} ops={n_ops} version={self._version}>"


def _var_from_spec(block, vspec: dict) -> Variable:
    from . import variable as variable_module

    pspec = vspec.pop("parameter", None)
    if pspec is None:
        return Variable(block, vspec.pop("name"), **vspec)
    reg = pspec.get("regularizer")
    if reg is not None:
        if variable_module.regularizer_from_spec is None:
            raise ValueError(f"cannot restore the regularizer of {vspec['name']!r}")
        reg = variable_module.regularizer_from_spec(reg)
    var = Parameter(block, vspec.pop("name"), vspec.pop("shape"), vspec.pop("dtype"),
                    trainable=pspec["trainable"], optimize_attr=pspec["optimize_attr"],
                    regularizer=reg, do_model_average=pspec.get("do_model_average"),
                    need_clip=pspec["need_clip"], **_without(vspec, "stop_gradient"))
    var.stop_gradient = vspec.get("stop_gradient", var.stop_gradient)
    return var


def _without(mapping: dict, *keys) -> dict:
    return {k: v for k, v in mapping.items() if k not in keys}


def _inference_spec(spec: dict) -> dict:
    """Drop backward/optimize ops and the variables only they used; set ``is_test``."""
    for bspec in spec["blocks"]:
        kept = []
        for ospec in bspec["ops"]:
            role = int(ospec["attrs"].get(roles.ROLE_ATTR, 0))
            if roles.is_backward(role) or roles.is_optimize(role):
                continue
            if "is_test" in ospec["attrs"]:
                ospec["attrs"]["is_test"] = True
            kept.append(ospec)
        bspec["ops"] = kept
        used = {n for o in kept for slot in ("inputs", "outputs") for names in o[slot].values() for n in names}
        bspec["vars"] = [v for v in bspec["vars"]
                         if v["name"] in used or v["persistable"] or v["is_data"]]
    return spec
