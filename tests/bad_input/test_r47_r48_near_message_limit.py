"""R47, R48 near the message limit: one field of any RPC's request filled to just under the 16 MiB a service
receives (runtime/channels.py MAX_MESSAGE_BYTES) gets an answer or a specific refusal, and a refusal changes
nothing.

The fuzzer (test_r47_r48_fuzz.py) stays under 4 MiB a request and 300 kB a text, so what lies between, up to
the limit itself, was sent by no test: a text of 15.75 MiB in each string or bytes field, in turn, and
1,000,000 elements (200,000 for messages) in each repeated field, of every RPC of the public and internal
contracts (read from the descriptors, as the fuzzer does), the rest of the request naming a seeded run's
real run, agents and stores so it gets past the first check. Each such request is one case, on SQLite and
on PostgreSQL. Checked as the fuzzer checks: never INTERNAL or UNKNOWN (INTERNAL only as the R26 run ending),
every refusal a google.rpc.ErrorInfo in the suite's domain, ModuleStore's outbox unchanged by a refusal.
With runtime/errors.py's bounds on what a refusal quotes lifted, 5 of these cases fail (the refusal outgrows
the trailers a client reads) and the fuzzer passes.

A field that names the caller (a run or agent id the call's credential is minted for) is left out: its
credential would not fit in the headers a service accepts, and grpc refuses those before any of the suite's
code (test_r47_header_size.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from ggmodules.runtime.channels import MAX_MESSAGE_BYTES
from tests.bad_input._support.requests import Pools
from tests.bad_input._support.world import ERROR_DOMAIN, MAX_CREDENTIAL, World, every_method, full_name
from tests.harness import WALLET, error_info

F = FieldDescriptor
# A text as near the limit as a request around it allows.
NEAR = MAX_MESSAGE_BYTES - 256 * 1024
MANY = 1_000_000
DEPTH = 2


@dataclass(frozen=True)
class Filled:
    """One request: the field at `path` (names from the request down) filled near the limit."""

    service: str
    method: MethodDescriptor
    path: tuple[FieldDescriptor, ...]
    many: bool  # a repeated field given MANY elements, rather than one text of NEAR

    @property
    def key(self) -> str:
        fields = ".".join(f.name for f in self.path)
        return f"{self.service}:{self.method.containing_service.name}.{self.method.name}:{fields}" + (
            ":many" if self.many else ""
        )

    def request(self, pools: Pools, size: int = NEAR, count: int = MANY) -> Message:
        """The request, the field given a text of `size` or `count` elements (a fifth as many messages)."""
        message = GetMessageClass(self.method.input_type)()
        _name(message, pools, 0)
        target = message
        for f in self.path[:-1]:
            target = getattr(target, f.name).add() if f.is_repeated else getattr(target, f.name)
            _name(target, pools, 0)
        last = self.path[-1]
        if self.many:
            items = getattr(target, last.name)
            if last.message_type is not None:
                for _ in range(count // 5):
                    items.add()
            else:
                items.extend([_small(last)] * count)
        else:
            # Each case's text of its own: an id one case binds (a credential the WALLET then holds for
            # it) is not the id a later case names.
            text = f"{self.key} ".ljust(size, "x")
            value: str | bytes = text if last.type == F.TYPE_STRING else text.encode()
            if last.is_repeated:
                getattr(target, last.name).append(value)
            else:
                setattr(target, last.name, value)
        return message


def _plain(f: FieldDescriptor) -> bool:
    return f.message_type is None or not (
        f.message_type.GetOptions().map_entry or f.message_type.full_name.startswith("google.protobuf.")
    )


def _name(message: Message, pools: Pools, depth: int) -> None:
    """Every single name field of `message` (and of its single nested messages) set to a real name."""
    for f in message.DESCRIPTOR.fields:
        if f.is_repeated or not _plain(f):
            continue
        if f.type == F.TYPE_STRING and pools.names(f.name):
            setattr(message, f.name, pools.names(f.name)[0])
        elif f.message_type is not None and depth < DEPTH:
            _name(getattr(message, f.name), pools, depth + 1)


def _small(f: FieldDescriptor) -> object:
    if f.type == F.TYPE_STRING:
        return "a"
    if f.type == F.TYPE_BYTES:
        return b"a"
    if f.type == F.TYPE_BOOL:
        return True
    if f.type in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return 1.0
    return 1  # integers and enums (open in proto3: 1 need not be a named value)


def _paths(
    descriptor: Descriptor, above: tuple[FieldDescriptor, ...] = ()
) -> Iterator[tuple[tuple[FieldDescriptor, ...], bool]]:
    for f in descriptor.fields:
        if not _plain(f):
            continue
        path = (*above, f)
        if f.type in (F.TYPE_STRING, F.TYPE_BYTES):
            yield path, False
        if f.is_repeated:
            yield path, True
        if f.message_type is not None and len(above) < DEPTH:
            yield from _paths(f.message_type, path)


def _cases() -> list[Filled]:
    """Every field path of every RPC's request, those naming the caller left out (the module doc): a field
    whose 20,000 characters (or 1,000 elements) already make the credential too long."""
    cases = []
    for service, method in every_method():
        for path, many in _paths(method.input_type):
            case = Filled(service, method, path, many)
            sample = case.request(Pools(), size=20_000, count=1_000)
            if len(WALLET.credential_for(full_name(method), sample)) <= MAX_CREDENTIAL:
                cases.append(case)
    return cases


CASES = {case.key: case for case in _cases()}


def test_every_rpc_whose_request_has_a_text_or_a_list_gets_a_case() -> None:
    """No RPC drops out whole because each of its fields names the caller: the RPCs left without a case
    are those whose requests hold no text, bytes or list at all (numbers only, or nothing)."""
    covered = {(c.service, c.method.full_name) for c in CASES.values()}
    fillable = {(service, m.full_name) for service, m in every_method() if any(_paths(m.input_type))}
    assert covered == fillable, sorted(fillable - covered)


@pytest.mark.parametrize("key", sorted(CASES))
def test_r47_r48_a_request_near_the_message_limit_is_answered_or_refused_with_a_reason_changing_nothing(
    world: World, key: str
) -> None:
    case = CASES[key]
    request = case.request(world.pools)
    assert len(WALLET.credential_for(full_name(case.method), request)) <= MAX_CREDENTIAL, key
    before = world.outbox_head()
    code, status = world.call(case.service, case.method, request)
    waiting = code is grpc.StatusCode.DEADLINE_EXCEEDED and case.method.server_streaming  # a stream, open
    if code is grpc.StatusCode.OK or waiting:
        return
    info = error_info(status)
    what = f"{key} answered {code.name} ({status.message if status else 'no status'!r})"
    r26 = info is not None and info.reason == "RUN_INTERNAL_ERROR"  # the run ended, the one INTERNAL
    assert code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL) or r26, what
    assert info is not None and info.reason and info.domain == ERROR_DOMAIN, what
    if not r26:
        assert world.outbox_head() == before, f"a refusal changed ModuleStore: {what}"
