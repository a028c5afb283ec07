"""Fixtures of the browser tier: a real Zope, a headless Chromium, screenshots.

Owns, for the tests of ``tests/browser``:

``zope_instance`` (once for the tier)
    The ``make run`` demo (``plone_pgcatalog.demo.instance``: the classic-UI
    site ``Plone`` with the sample content of ``demo.content``) served by a
    subprocess on a free loopback port, on a fresh database
    ``pgcatalog_test_browser_<random>`` of the test server
    (``testing.server_dsn``: ``PGCATALOG_TEST_DSN`` or an embedded one).
    Stopped with SIGTERM and its database dropped when the tier is done.
``browser`` (once for the tier)
    Headless Chromium through Playwright's sync API.  Playwright's own
    browser download needs the internet, so the system's binary is
    launched: ``PGCATALOG_CHROMIUM``, else ``chromium`` on the PATH, else
    ``/usr/bin/chromium`` (``make test`` installs it on Debian/Ubuntu).
    Missing, the tier fails; it never skips.
``page``, ``admin_page``, ``basic_auth_page`` (per test)
    A page in a context of its own (no cookies shared between tests),
    1280x900, whose relative URLs are the instance's: anonymous; logged in
    as ``admin`` (the cookie of one login through Plone's login form,
    ``admin_login``; ``log_in(page, instance)`` logs a page in itself);
    sending ``admin``'s HTTP basic auth with every request.
``admin_restapi`` (once for the tier)
    ``admin_restapi(method, path, body=None)``: plone.restapi as ``admin``
    (HTTP basic auth), ``path`` relative to the site, for setting up content
    a test needs beyond the sample; returns the status and the JSON answer.
``screenshot`` (per test)
    ``screenshot(page, name)`` saves a full-page PNG
    ``<module>--<test>--<name>.png`` in the run's directory
    (``screenshot_directory``: ``PGCATALOG_SCREENSHOTS``, else
    ``test-output/screenshots`` of the repository) and returns its path.
    Every page a test opened must have been shot once the test passed, or
    the test errors; a page of a failed test is shot as
    ``<module>--<test>--failed.png``.

Zope runs in its own process: nothing here sets up Zope in the test
process or touches the plone.testing layers of ``tests/conftest.py``.  The
instance and the browser have package scope rather than session scope so
that both are gone before the other tiers of ``make test`` run.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from playwright.sync_api import Browser
from playwright.sync_api import Page
from playwright.sync_api import sync_playwright
from plone_pgcatalog import embedded
from plone_pgcatalog import testing
from typing import Any

import base64
import contextlib
import json
import os
import pytest
import re
import secrets
import shutil
import time
import urllib.error
import urllib.request

ROOT = Path(__file__).resolve().parents[2]
VIEWPORT = {"width": 1280, "height": 900}
#: The demo's site id and Zope root user (``demo.instance``).
SITE_ID = "Plone"
ADMIN_USER = "admin"
#: Bound on the instance's first start, which creates the site and content.
START_TIMEOUT = 300


@dataclass(frozen=True)
class ZopeInstance:
    """The served demo, as the tests reach it."""

    url: str  # http://localhost:PORT, the Zope root
    site_url: str  # the Plone site
    user: str  # a Manager at the Zope root
    password: str = field(repr=False)  # not in failure reports
    var: Path  # the instance's files, its output in serve.log
    dsn: str  # its database


def chromium_executable() -> str:
    """The Chromium binary to launch (see module docstring)."""
    path = (
        os.environ.get("PGCATALOG_CHROMIUM")
        or shutil.which("chromium")
        or "/usr/bin/chromium"
    )
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"no Chromium at {path}: install the package 'chromium' (Debian/"
            "Ubuntu: apt-get install chromium; `make test` does it as root) "
            "or set PGCATALOG_CHROMIUM=/path/to/chromium",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="package")
def zope_instance(tmp_path_factory) -> Iterator[ZopeInstance]:
    server = testing.server_dsn()
    name = f"pgcatalog_test_browser_{secrets.token_hex(4)}"
    # Kept after the run (pytest keeps the last three), for its serve.log.
    var = tmp_path_factory.mktemp("zope")
    try:
        dsn = embedded.ensure_database(server, name, fresh=True)
        port = testing.free_port()
        started = time.monotonic()
        with testing.serving_demo(var, dsn, port, timeout=START_TIMEOUT):
            print(f"\nZope served in {time.monotonic() - started:.1f} s, {var}")
            password = (var / "admin-password.txt").read_text().strip()
            # localhost, not 127.0.0.1: plone.app.theming leaves pages unthemed
            # on the host names of its hostnameBlacklist, 127.0.0.1 by default.
            url = f"http://localhost:{port}"
            yield ZopeInstance(
                url=url,
                site_url=f"{url}/{SITE_ID}",
                user=ADMIN_USER,
                password=password,
                var=var,
                dsn=dsn,
            )
    finally:
        testing.drop_database(server, name)


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    executable = chromium_executable()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="package")
def admin_restapi(zope_instance) -> Callable[..., tuple[int, Any]]:
    token = base64.b64encode(
        f"{zope_instance.user}:{zope_instance.password}".encode()
    ).decode()

    def call(method: str, path: str, body: dict | None = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{zope_instance.site_url}/{path.lstrip('/')}".rstrip("/"),
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Accept": "application/json",
                "Content-Type": "application/json",
                "Authorization": f"Basic {token}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, text = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        return status, json.loads(text) if text.strip() else None

    return call


# -- screenshots ------------------------------------------------------------------


@pytest.fixture(scope="session")
def screenshot_directory() -> Path:
    """The run's directory, without the screenshots of earlier runs (only
    files named as ``Screenshots`` names them are removed)."""
    configured = os.environ.get("PGCATALOG_SCREENSHOTS")
    path = Path(configured) if configured else ROOT / "test-output" / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("test_*--*.png"):
        old.unlink()
    return path


@dataclass
class Screenshots:
    """``screenshot(page, name)`` of one test; what it has shot."""

    prefix: str  # <test module>--<test>
    directory: Path
    pages: set[int] = field(default_factory=set)  # ids of the pages shot

    def __call__(self, page: Page, name: str) -> Path:
        path = self.directory / f"{self.prefix}--{_file_name(name)}.png"
        page.screenshot(path=str(path), full_page=True)
        self.pages.add(id(page))
        print(f"screenshot: {path}")
        return path


def _file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


@pytest.fixture
def screenshot(request, screenshot_directory) -> Screenshots:
    module = request.node.module.__name__.rsplit(".", 1)[-1]
    return Screenshots(
        f"{module}--{_file_name(request.node.name)}", screenshot_directory
    )


_REPORTS = pytest.StashKey[dict]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # Kept for the page fixtures' teardown: whether the test itself passed.
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


@contextlib.contextmanager
def _opened_page(
    request, browser: Browser, instance: ZopeInstance, shots: Screenshots, **options
) -> Iterator[Page]:
    """A page in a new context; on leaving, the screenshot rules of the
    module docstring."""
    context = browser.new_context(viewport=VIEWPORT, base_url=instance.url, **options)
    try:
        page = context.new_page()
        try:
            yield page
        except BaseException:  # in a fixture, before its test (a login)
            shots(page, "failed")
            raise
        call = request.node.stash.get(_REPORTS, {}).get("call")
        if call is not None and call.failed:
            shots(page, "failed")
        elif call is not None and call.passed and id(page) not in shots.pages:
            pytest.fail(
                f"{request.node.name} took no screenshot of its page "
                f"(last at {page.url}): call screenshot(page, name)",
                pytrace=False,
            )
    finally:
        context.close()


@pytest.fixture
def page(request, browser, zope_instance, screenshot) -> Iterator[Page]:
    """Anonymous."""
    with _opened_page(request, browser, zope_instance, screenshot) as opened:
        yield opened


def log_in(page: Page, instance: ZopeInstance) -> None:
    """Log in as the instance's admin through Plone's (classic) login form."""
    page.goto(f"{instance.site_url}/login")
    page.fill('input[name="__ac_name"]', instance.user)
    page.fill('input[name="__ac_password"]', instance.password)
    with page.expect_navigation():
        page.get_by_role("button", name="Log in").click()
    cookies = {cookie["name"] for cookie in page.context.cookies()}
    assert "__ac" in cookies, f"login as {instance.user} failed at {page.url}"


@pytest.fixture(scope="package")
def admin_login(browser, zope_instance, screenshot_directory) -> dict:
    """The cookies of one login as ``admin`` through the login form, for
    every ``admin_page`` (a login costs seconds: it renders two pages)."""
    context = browser.new_context(viewport=VIEWPORT, base_url=zope_instance.url)
    try:
        page = context.new_page()
        try:
            log_in(page, zope_instance)
        except BaseException:
            path = screenshot_directory / "test_login--admin_login--failed.png"
            page.screenshot(path=str(path), full_page=True)
            raise
        return context.storage_state()
    finally:
        context.close()


@pytest.fixture
def admin_page(
    request, browser, zope_instance, screenshot, admin_login
) -> Iterator[Page]:
    """Logged in as ``admin`` through the login form (its cookie)."""
    with _opened_page(
        request, browser, zope_instance, screenshot, storage_state=admin_login
    ) as opened:
        yield opened


@pytest.fixture
def basic_auth_page(request, browser, zope_instance, screenshot) -> Iterator[Page]:
    """Sending ``admin``'s HTTP basic auth with every request: no login
    step (the ZMI, also at the Zope root; ``admin_page``'s cookie opens
    those too)."""
    credentials = {"username": zope_instance.user, "password": zope_instance.password}
    with _opened_page(
        request, browser, zope_instance, screenshot, http_credentials=credentials
    ) as opened:
        yield opened
