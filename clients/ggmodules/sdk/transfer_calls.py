"""Plans for the Transfer RPCs: a transition along an FSM edge, an exec into another profile, a look-up."""

from __future__ import annotations

from typing import Any

import grpc

from ggmodules.sdk import decode
from ggmodules.sdk.errors import InvalidFieldError
from ggmodules.sdk.plans import Plan, mutation, read
from ggmodules.sdk.results import Instance, Transfer
from ggmodules.transfer.v1 import transfer_service_pb2 as pb


def transition(run_id: str, agent_id: str, to_state: str) -> Plan[Transfer[Any]]:
    """Takes the FSM edge from the agent's state to `to_state`: the edge's kinds (and the run's board) are
    carried, the rest dropped or started fresh (R19). Retries reuse the request id (R27)."""
    request = pb.TransitionRequest(run_id=run_id, agent_id=agent_id, to_state=to_state)
    return mutation("transfer", "Transition", request, lambda resp: decode.transfer(resp.transfer))


def exec_profile(
    run_id: str, agent_id: str, profile: str, *, leave_fsm: bool = False
) -> Plan[Transfer[Any]]:
    """Hands the agent's modules to a successor running `profile`: what both profiles have is carried, what
    only the successor has starts fresh, the rest is dropped (R20). The successor keeps the agent's FSM
    state, so `profile` must enable every kind that state's edges carry (else `ExecLacksEdgeKindsError`,
    nothing changed); `leave_fsm=True` runs the successor outside the FSM instead. Retries reuse the
    request id (R27)."""
    return _exec(run_id, agent_id, profile, "", leave_fsm)


def _exec(
    run_id: str, agent_id: str, profile: str, kept_state: str, leave_fsm: bool
) -> Plan[Transfer[Any]]:
    request = pb.ExecRequest(run_id=run_id, agent_id=agent_id, profile=profile, leave_fsm=leave_fsm)
    kept_state = "" if leave_fsm else kept_state
    return mutation("transfer", "Exec", request,
                    lambda resp: decode.transfer(resp.transfer, kept_state=kept_state))


def get_transfer(run_id: str, *, transfer_id: str = "", request_id: str = "") -> Plan[Transfer[Any]]:
    """A transfer by its id or by the request id it was asked with (for a caller that lost the answer)."""
    if bool(transfer_id) == bool(request_id):
        raise InvalidFieldError(grpc.StatusCode.INVALID_ARGUMENT, InvalidFieldError.REASON,
                                "get_transfer: give exactly one of transfer_id and request_id",
                                {"field": "transfer_id"})
    request = pb.GetTransferRequest(run_id=run_id, transfer_id=transfer_id, request_id=request_id)
    return read("transfer", "GetTransfer", request, lambda resp: decode.transfer(resp.transfer))


def agent_transition(agent: Instance, to_state: str) -> Plan[Transfer[Any]]:
    """Takes the FSM edge from this agent's state to `to_state` (R19); see `transfer.successor`."""
    return transition(agent.run_id, agent.agent_id, to_state)


def agent_exec(agent: Instance, profile: str, *, leave_fsm: bool = False) -> Plan[Transfer[Any]]:
    """Hands this agent's modules to a successor running `profile` (R20); see `transfer.successor`. In an
    FSM state, `profile` must enable every kind the state's edges carry, or pass `leave_fsm=True`."""
    return _exec(agent.run_id, agent.agent_id, profile, agent.fsm_state, leave_fsm)
