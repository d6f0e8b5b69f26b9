"""The sans-IO core: decisions, state, classification, backoff, denial cache, report accumulation
and the local fallback's budget and breaker. No sockets, no threads, no clock: time is passed in
(epoch milliseconds)."""

from .backoff import backoff_delay, parse_retry_after
from .breaker import BreakerMachine, BreakerRecord
from .call import Call, after_verdict, budget_wait, give_up_before_asking, retry_ask, wait_before_asking
from .classification import Classifier, Failure, classify, is_dependency_failure, retry_denial
from .link import CoordinatorLink
from .local import BreakerFacts, LocalGuard, Verdict
from .policy import BackoffPolicy, BreakerPolicy, DependencyPolicy, RetryBudgetPolicy, policy_from_json
from .state import DependencyState, HeldDenial
from .window import SlidingWindow, retry_budget_limit

__all__ = [
    "BackoffPolicy",
    "BreakerFacts",
    "BreakerMachine",
    "BreakerPolicy",
    "BreakerRecord",
    "Call",
    "Classifier",
    "CoordinatorLink",
    "DependencyPolicy",
    "DependencyState",
    "Failure",
    "HeldDenial",
    "LocalGuard",
    "RetryBudgetPolicy",
    "SlidingWindow",
    "Verdict",
    "after_verdict",
    "backoff_delay",
    "budget_wait",
    "classify",
    "give_up_before_asking",
    "is_dependency_failure",
    "parse_retry_after",
    "policy_from_json",
    "retry_ask",
    "retry_budget_limit",
    "retry_denial",
    "wait_before_asking",
]
