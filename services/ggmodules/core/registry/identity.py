"""The acting identity: who is asking. One place, so a run-scoped credential (R50) can fill it later."""

from __future__ import annotations

from dataclasses import dataclass

from ggmodules.core.errors import PermissionDenied, Reason


@dataclass(frozen=True)
class Caller:
    # The one run the caller's credential opens; None while callers are not authenticated.
    run_id: str | None = None

    def check_run(self, run_id: str) -> None:
        if self.run_id is not None and self.run_id != run_id:
            raise PermissionDenied(
                f"this credential opens run {self.run_id}, not run {run_id}",
                reason=Reason.WRONG_RUN,
                metadata={"run_id": run_id},
            )

    def sees_run(self, run_id: str) -> bool:
        return self.run_id is None or self.run_id == run_id
