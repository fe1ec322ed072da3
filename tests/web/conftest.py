"""The web console under test: the four services and `ggmodules web` as separate OS processes, and Debian's
chromium (never a downloaded browser) driven by playwright."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from ggmodules.sdk import Client
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc
from ggmodules.transfer.v1 import transfer_service_pb2_grpc
from tests.harness import ROOT, ServiceProcess, open_channel, processes
from tests.harness import stubs as harness_stubs
from tests.harness.console import Run, Stubs

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
# Where the screenshots shown in README.md live; the tests write them there when
# GGMODULES_UPDATE_SCREENSHOTS=1 (`make screenshots`), else into the test's own directory.
SCREENSHOTS = ROOT / "services" / "ggmodules" / "web" / "screenshots"


class WebConsole:
    """`ggmodules web --port 0` as its own process; its address from its ready line."""

    def __init__(self, telemetry: str, *extra: str, env: dict[str, str] | None = None) -> None:
        self._log = tempfile.NamedTemporaryFile(prefix="web-", suffix=".log", delete=False)  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ggmodules.cli.main", "web", "--port", "0",
             "--telemetry-address", telemetry, *extra],
            stdout=subprocess.PIPE, stderr=self._log, text=True, cwd=ROOT,
            env={**{k: v for k, v in os.environ.items() if k != "GGMODULES_TOKEN"}, **(env or {})},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("ready web http://"):
            self.proc.kill()
            raise RuntimeError(f"the web console did not start: {line!r}\n{Path(self._log.name).read_text()}")
        self.url = line.split()[2]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)


@dataclass(frozen=True)
class Suite:
    ms: ServiceProcess
    reg: ServiceProcess
    tr: ServiceProcess
    tel: ServiceProcess
    web: WebConsole
    stubs: Stubs

    def client(self) -> Client:
        return Client(self.reg.address, self.ms.address, self.tr.address)

    def settle(self, run_id: str) -> Run:
        """Waits until Telemetry holds every event of the run ModuleStore and Registry have sent."""
        run = Run(run_id, self.stubs)
        run.settle()
        return run


@pytest.fixture(scope="module")
def web_suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    db = tmp_path_factory.mktemp("web").as_posix()
    with processes(("modulestore", ("--database-url", f"sqlite:///{db}/ms.db"))) as (ms,), processes(
        ("registry", ("--database-url", f"sqlite:///{db}/reg.db", "--modulestore-address", ms.address)),
    ) as (reg,), processes(
        ("transfer", ("--database-url", f"sqlite:///{db}/tr.db", "--modulestore-address", ms.address,
                      "--registry-address", reg.address)),
        ("telemetry", ("--database-url", f"sqlite:///{db}/tel.db", "--modulestore-address", ms.address,
                       "--registry-address", reg.address)),
    ) as (tr, tel):
        stubs = Stubs(
            harness_stubs(open_channel(reg.address), "registry"),  # public and internal RPCs
            harness_stubs(open_channel(ms.address), "modulestore"),
            transfer_service_pb2_grpc.TransferServiceStub(open_channel(tr.address)),
            telemetry_service_pb2_grpc.TelemetryServiceStub(open_channel(tel.address)),
        )
        web = WebConsole(tel.address)
        try:
            yield Suite(ms, reg, tr, tel, web, stubs)
        finally:
            web.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `make chromium` installs Debian's chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1360, "height": 860})
    p = context.new_page()
    p.set_default_timeout(20_000)
    try:
        yield p
    finally:
        context.close()


def screenshot(page: Page, name: str, tmp_path: Path) -> Path:
    where = SCREENSHOTS if os.environ.get("GGMODULES_UPDATE_SCREENSHOTS") == "1" else tmp_path
    path = where / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path
