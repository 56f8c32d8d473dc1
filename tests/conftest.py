import os

# Every kernel output is checked against its inferred shape and dtype while testing.
os.environ.setdefault("HEADRACE_CHECK_KERNELS", "1")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, database=None, max_examples=40)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from headrace.core import context, names  # noqa: E402
from headrace.core.program import Program  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_programs():
    """Each test builds into fresh default programs with fresh unique names, in static mode."""
    main, startup = Program(), Program()
    old_main = context.switch_main_program(main)
    old_startup = context.switch_startup_program(startup)
    old_names = names.switch()
    with context.static_mode_guard(True):
        from headrace.runtime.scope import Scope, scope_guard
        with scope_guard(Scope()):
            yield
    names.switch(old_names)
    context.switch_main_program(old_main)
    context.switch_startup_program(old_startup)
