"""Sluice: fleet-wide retry budgets and circuit breakers for Python.

Example::

    from sluice import Sluice, GiveUpError, BreakerOpenError

    with Sluice(base_urls=["http://127.0.0.1:8080"], namespace="shop", token=token) as sluice:
        receipt = sluice.dependency("payments-api").call(lambda: charge(order), idempotent=True)
"""

from .client import Dependency, Response, Sluice
from .context import IncomingRequest, current_attempt, incoming_request, outgoing_headers, request_from_headers, serving
from .core.classification import Classifier, Failure, classify
from .core.policy import BackoffPolicy
from .errors import (
    BreakerOpenError,
    ConfigError,
    CoordinatorUnavailableError,
    DeadlineExceededError,
    GiveUpError,
    HttpStatusError,
    LimitedError,
    SluiceError,
)
from .hooks import BreakerChange, ConfigErrorEvent, FallbackChange, GiveUpEvent, RetryEvent

__version__ = "0.1.0"

__all__ = [
    "BackoffPolicy",
    "BreakerChange",
    "BreakerOpenError",
    "Classifier",
    "ConfigError",
    "ConfigErrorEvent",
    "CoordinatorUnavailableError",
    "DeadlineExceededError",
    "Dependency",
    "FallbackChange",
    "Failure",
    "GiveUpError",
    "GiveUpEvent",
    "HttpStatusError",
    "IncomingRequest",
    "LimitedError",
    "Response",
    "RetryEvent",
    "Sluice",
    "SluiceError",
    "classify",
    "current_attempt",
    "incoming_request",
    "outgoing_headers",
    "request_from_headers",
    "serving",
]
