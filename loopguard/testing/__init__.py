"""Policy tests: ``loopguard test`` runs YAML cases that replay steps through a policy and
check its decisions (see :mod:`loopguard.testing.runner` for the file format).

Public API::

    run_tests(paths=("policies/tests",), keyword=None) -> TestReport
    load_test_file(path) -> list[TestCase]        # raises TestFileError
    run_case(case) -> CaseResult
"""

from .runner import (
    DEFAULT_TEST_PATH,
    CaseResult,
    StepExpectation,
    TestCase,
    TestFileError,
    TestReport,
    find_test_files,
    load_test_file,
    run_case,
    run_tests,
)

__all__ = [
    "DEFAULT_TEST_PATH",
    "CaseResult",
    "StepExpectation",
    "TestCase",
    "TestFileError",
    "TestReport",
    "find_test_files",
    "load_test_file",
    "run_case",
    "run_tests",
]
