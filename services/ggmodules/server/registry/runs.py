"""Run operations: create (launch validation), get, list, finish, fail (R26)."""

from __future__ import annotations

from ggmodules.core.errors import NotFound, missing
from ggmodules.core.modules.limits import check_text
from ggmodules.core.registry.identity import Caller
from ggmodules.core.registry.paging import decode_token, encode_token, page_size
from ggmodules.core.registry.runs import new_run_id, require_running, validate_run
from ggmodules.core.vocabulary import RunStatus
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.server.registry.requests import request_key
from ggmodules.storage.registry import RegistryRepository, RegistryUnit, RunRecord
from ggmodules.storage.registry.repository import now_us
from ggmodules.wire.registry import fsm_input, profile_inputs, run_to_proto

RUNS_PAGE = "runs"


class Runs:
    def __init__(self, repo: RegistryRepository) -> None:
        self._repo = repo

    def create(self, request: pb.CreateRunRequest, caller: Caller) -> pb.CreateRunResponse:
        spec = validate_run(
            request.name,
            profile_inputs(request.profiles),
            request.board_enabled,
            fsm_input(request.fsm if request.HasField("fsm") else None),
        )
        key = request_key("CreateRun", request)

        def work(unit: RegistryUnit) -> pb.CreateRunResponse:
            if (answer := unit.claim(key)) is not None:
                return pb.CreateRunResponse.FromString(answer)
            run = RunRecord(new_run_id(), spec, RunStatus.RUNNING, "", now_us())
            unit.add_run(run)
            response = pb.CreateRunResponse(run=run_to_proto(run))
            unit.answer(key, response.SerializeToString())
            return response

        return self._repo.transact(work)

    def get(self, request: pb.GetRunRequest, caller: Caller) -> pb.GetRunResponse:
        _require(request.run_id, "run_id")
        caller.check_run(request.run_id)
        run = self._repo.transact(lambda unit: unit.run(request.run_id))
        return pb.GetRunResponse(run=run_to_proto(run))

    def exists(self, run_id: str) -> bool:
        def work(unit: RegistryUnit) -> bool:
            try:
                unit.run(run_id)
            except NotFound:
                return False
            return True

        return self._repo.transact(work)

    def list(self, request: pb.ListRunsRequest, caller: Caller) -> pb.ListRunsResponse:
        size = page_size(request.page_size)
        after = decode_token(request.page_token, RUNS_PAGE)
        runs = self._repo.transact(lambda unit: unit.list_runs(after, size + 1))
        more = len(runs) > size
        runs = runs[:size]
        return pb.ListRunsResponse(
            runs=[run_to_proto(r) for r in runs if caller.sees_run(r.run_id)],
            next_page_token=encode_token(RUNS_PAGE, runs[-1].seq) if more else "",
        )

    def finish(self, request: pb.FinishRunRequest, caller: Caller) -> pb.FinishRunResponse:
        _require(request.run_id, "run_id")
        caller.check_run(request.run_id)
        key = request_key("FinishRun", request)

        def work(unit: RegistryUnit) -> pb.FinishRunResponse:
            if (answer := unit.claim(key)) is not None:
                return pb.FinishRunResponse.FromString(answer)
            run = unit.run(request.run_id, lock=True)
            require_running(run.run_id, run.status, "only a running run can be finished")
            unit.set_run_status(run.run_id, RunStatus.FINISHED)
            response = pb.FinishRunResponse(run=run_to_proto(unit.run(run.run_id)))
            unit.answer(key, response.SerializeToString())
            return response

        return self._repo.transact(work)

    def fail(self, request: pb.FailRunRequest, caller: Caller) -> pb.FailRunResponse:
        """Ends a running run under internal_error (R26); the detail is its status_detail and event."""
        _require(request.run_id, "run_id")
        check_text("detail", request.detail, required=True)
        caller.check_run(request.run_id)
        key = request_key("FailRun", request)

        def work(unit: RegistryUnit) -> pb.FailRunResponse:
            if (answer := unit.claim(key)) is not None:
                return pb.FailRunResponse.FromString(answer)
            run = unit.run(request.run_id, lock=True)
            require_running(run.run_id, run.status, "only a running run can fail")
            unit.set_run_status(run.run_id, RunStatus.INTERNAL_ERROR, request.detail)
            response = pb.FailRunResponse(run=run_to_proto(unit.run(run.run_id)))
            unit.answer(key, response.SerializeToString())
            return response

        return self._repo.transact(work)


def _require(value: str, field: str) -> None:
    if not value:
        raise missing(field)
