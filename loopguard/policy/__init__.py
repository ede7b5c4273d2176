"""The loopguard.yml language: load, validate, compile and explain policies.

Typical use::

    from loopguard.policy import load_policy, PolicyError

    policy = load_policy("loopguard.yml", profile="prod")   # or "builtin:default"

``profile=None`` applies ``$LOOPGUARD_PROFILE`` when it is set.
"""

from .compile import CompiledPolicy, CompiledRule, compile_policy
from .errors import CODES, PolicyError, PolicyFileWarning, PolicyIOError, Problem
from .load import (
    PROFILE_ENV,
    CheckResult,
    Explanation,
    Origin,
    builtin_policies,
    check_policy,
    check_policy_text,
    default_policy_path,
    explain_policy,
    list_profiles,
    load_policy,
    load_policy_text,
    resolve_source,
)
from .schema import Policy

__all__ = [
    "CODES",
    "PROFILE_ENV",
    "CheckResult",
    "CompiledPolicy",
    "CompiledRule",
    "Explanation",
    "Origin",
    "Policy",
    "PolicyError",
    "PolicyFileWarning",
    "PolicyIOError",
    "Problem",
    "builtin_policies",
    "check_policy",
    "check_policy_text",
    "compile_policy",
    "default_policy_path",
    "explain_policy",
    "list_profiles",
    "load_policy",
    "load_policy_text",
    "resolve_source",
]
