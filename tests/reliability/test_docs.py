"""Issue 15: the README documents the NaN/Inf check mode and the consistency guarantees of data
parallel and of an interrupted run (the example code runs in tests/test_readme.py)."""
import pathlib

README = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_readme_documents_the_reliability_guarantees():
    section = " ".join(README.split("## Reliability", 1)[1].split("\n## ", 1)[0].split())
    for phrase in ("FLAGS_check_nan_inf=1", 'paddle.set_flags({"FLAGS_check_nan_inf": True})', "get_flags",
                   "FLAGS_check_nan_inf_level=1", "equals one place", "uneven split",
                   "consistency after a failure", "place 0's values", "KeyboardInterrupt",
                   "update phase of a step is never cut", "each variable whole", "PLAN_CACHE_SIZE", "exe.close()"):
        assert phrase in section, phrase
