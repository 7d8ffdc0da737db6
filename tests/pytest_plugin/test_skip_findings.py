"""A skip or an xfail never hides a finding (issue 21 section 4).

Trial clones already failed their group when one clone recorded UNSAFE and another
skipped; a plain test that records UNSAFE and then calls ``pytest.skip()`` or
``pytest.xfail()`` was reported skipped/xfailed and the run exited 0.
"""

from __future__ import annotations

import pytest

from tests.pytest_plugin.conftest import NO_ASYNCIO, write_ini

TRIO = """
import pytest

@pytest.fixture
def anyio_backend():
    return "trio"
"""


@pytest.mark.parametrize("call", ["skip", "xfail"])
@pytest.mark.parametrize("kind", ["def", "async def", "async def on trio"])
def test_a_plain_test_that_recorded_unsafe_fails(
    pytester: pytest.Pytester, call: str, kind: str
) -> None:
    write_ini(pytester)
    library = "trio" if kind.endswith(" on trio") else "asyncio"
    if library == "trio":
        pytester.makeconftest(TRIO)
        kind = kind.removesuffix(" on trio")
    pytester.makepyfile(
        f"""
        import pytest
        import sniffio
        from rampart import Result, SafetyStatus, record_result

        {kind} test_leaks():
            if {kind == "async def"}:
                assert sniffio.current_async_library() == "{library}"
            record_result(Result(status=SafetyStatus.UNSAFE, summary="leaked the key"))
            pytest.{call}("flaky agent today")
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [f"*1 UNSAFE result(s) recorded before the test called pytest.{call}()*"]
    )


@pytest.mark.parametrize(("call", "outcome"), [("skip", "skipped"), ("xfail", "xfailed")])
def test_a_plain_test_without_a_finding_still_skips(
    pytester: pytest.Pytester, call: str, outcome: str
) -> None:
    """SAFE results do not turn a skip into a failure: only a finding does."""
    write_ini(pytester)
    pytester.makepyfile(
        f"""
        import pytest
        from rampart import Result, SafetyStatus, record_result

        def test_fine():
            record_result(Result(status=SafetyStatus.SAFE, summary="defended"))
            pytest.{call}("not today")
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(**{outcome: 1})
