"""Issue 15 item 8: no message points to an API that does not exist.

Every string literal of a message in headrace/ (in a ``raise`` statement, or a warning or log
call) that names an API under ``paddle.``, ``fluid.``, ``static.`` or ``headrace.`` must resolve to
an attribute or module of headrace."""
import ast
import importlib
import pathlib
import re

import headrace
import headrace.fluid
import headrace.static

PACKAGE = pathlib.Path(headrace.__file__).parent
ROOTS = {"paddle": headrace, "fluid": headrace.fluid, "static": headrace.static, "headrace": headrace}
API = re.compile(r"\b(paddle|fluid|static|headrace)((?:\.[A-Za-z_]\w*)+)")


MESSAGE_CALLS = {"warn", "warning", "info", "error", "debug", "exception", "located"}


def _messages(tree):
    """The nodes holding messages: raise statements and warning/log calls."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            yield node.exc
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in MESSAGE_CALLS:
            yield node


def _references():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for message in _messages(tree):
            for node in ast.walk(message):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    for match in API.finditer(node.value):
                        yield match.group(0), f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"


def _resolves(reference) -> bool:
    root, *parts = reference.split(".")
    obj = ROOTS[root]
    for part in parts:
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        module = getattr(obj, "__name__", None)
        try:
            obj = importlib.import_module(f"{module}.{part}")
        except ImportError:
            return False
    return True


def test_every_api_named_in_a_message_exists():
    references = list(_references())
    assert len(references) > 8       # the scan finds the hints there are
    missing = sorted({f"{ref} ({where})" for ref, where in references if not _resolves(ref)})
    assert not missing, "messages name APIs headrace does not have:\n" + "\n".join(missing)


def test_the_scan_catches_a_missing_api():
    assert not _resolves("paddle.static.no_such_api") and _resolves("paddle.static.global_scope")
