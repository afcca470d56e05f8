"""Refusals as Temporal failures: a code and a sentence, and nothing of the worker behind them.

Temporal records an activity's failure in the run's history and shows an update's rejection in
the UI, each with the Python stack trace of where it was raised (file paths of the worker host
included). A refusal is not a bug: it carries its code, its sentence and its details, and no
trace. The SDK copies a failure error's own ``failure`` verbatim, so the refusal is built with
one that has no stack trace.
"""

from __future__ import annotations

from typing import Any

import temporalio.converter
from temporalio.api.enums.v1 import ApplicationErrorCategory as ApplicationErrorCategoryProto
from temporalio.api.failure.v1 import ApplicationFailureInfo, Failure
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from lockgate._errors import RefusedError

__all__ = ["Refusal"]


class Refusal(ApplicationError, RefusedError):
    """A non-retryable ``ApplicationError`` whose ``type`` is the code, without a stack trace.

    Example:
        >>> raise Refusal("FORBIDDEN", "The node 'publish' did not run: ...")  # doctest: +SKIP
    """

    def __init__(self, code: str, message: str, *details: Any, never_stored: bool = False) -> None:
        """Makes a refusal.

        Args:
            code: The error code (``ErrorCode`` value), the failure's type.
            message: The sentence a person reads.
            details: JSON data for programs (never holdings, tokens or secrets).
            never_stored: Raised only where nothing is written (an update validator): with
                payload encryption on, its sentence then stays readable for the caller, in the
                Temporal UI too, where every stored failure's message is encrypted.
        """
        self.never_stored = never_stored
        # Benign: a caller's mistake, not the worker's; the SDK logs it at DEBUG, not as an
        # error with its traceback, and keeps it out of the failure metrics.
        super().__init__(
            message,
            *details,
            type=code,
            non_retryable=True,
            category=ApplicationErrorCategory.BENIGN,
        )
        failure = Failure(
            message=message,
            application_failure_info=ApplicationFailureInfo(
                type=code,
                non_retryable=True,
                category=ApplicationErrorCategoryProto.APPLICATION_ERROR_CATEGORY_BENIGN,
            ),
        )
        if details:
            converter = temporalio.converter.default().payload_converter
            failure.application_failure_info.details.CopyFrom(
                converter.to_payloads_wrapper(details)
            )
        # FailureError.failure is what the SDK's failure converter copies as-is.
        self._failure = failure
