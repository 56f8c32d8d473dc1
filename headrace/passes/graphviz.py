"""Graphviz dumps of programs (``BuildStrategy.debug_graphviz_path``).

Contract
--------
``to_dot(programs)`` returns ``digraph G { ... }`` text: ops are boxes labelled with their type,
variables ellipses labelled with their name, shape and dtype (parameters and persistables filled
grey), edges variable -> op (input) and op -> variable (output).  Several programs (one per
place) become one cluster each.  Nothing is modified.

``dump(path, stage, programs)`` writes ``<path>_<stage>_graph`` (dot text, the reference's file
names) and, when the ``dot`` program is installed, also ``<path>_<stage>_graph.svg``.
"""
from __future__ import annotations

import shutil
import subprocess


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _program_lines(program, prefix: str) -> list:
    lines = []
    block = program.global_block()
    seen = set()
    for i, op in enumerate(block.ops):
        op_node = f"{prefix}op{i}"
        lines.append(f"  {op_node} [label={_quote(op.type)}, shape=box, style=rounded];")
        for names, outgoing in ((op.input_arg_names, False), (op.output_arg_names, True)):
            for name in names:
                var_node = _quote(prefix + name)
                if name not in seen:
                    seen.add(name)
                    var = block._find_var_recursive(name)
                    label = name if var is None else f"{name}\\n{list(var.shape) if var.shape is not None else '?'} {var.dtype}"
                    fill = ", style=filled, fillcolor=lightgrey" if var is not None and var.persistable else ""
                    lines.append(f"  {var_node} [label=\"{label}\", shape=ellipse{fill}];")
                lines.append(f"  {op_node} -> {var_node};" if outgoing else f"  {var_node} -> {op_node};")
    return lines


def to_dot(programs) -> str:
    if not isinstance(programs, (list, tuple)):
        programs = [programs]
    lines = ["digraph G {"]
    if len(programs) == 1:
        lines += _program_lines(programs[0], "")
    else:
        for k, program in enumerate(programs):
            lines.append(f"  subgraph cluster_place{k} {{")
            lines.append(f"  label=\"place {k}\";")
            lines += _program_lines(program, f"p{k}_")
            lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def dump(path: str, stage: str, programs) -> str:
    """Write ``<path>_<stage>_graph`` (+ ``.svg`` when ``dot`` exists); return the file name."""
    target = f"{path}_{stage}_graph"
    text = to_dot(programs)
    with open(target, "w") as handle:
        handle.write(text)
    dot = shutil.which("dot")
    if dot is not None:
        subprocess.run([dot, "-Tsvg", target, "-o", target + ".svg"], check=False,
                       capture_output=True, timeout=60)
    return target
