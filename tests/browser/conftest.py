"""The console in a real browser: headless Chromium (Debian's `chromium`) driven by Selenium through
Debian's `chromium-driver`, against Momor served over HTTP by the integration harness (fake
providers, DynamoDB Local). infra/setup.sh installs both; a missing browser fails the run rather
than skipping it, so CI cannot pass without having looked at the page.

Screenshots go to test-artifacts/console/ (MOMOR_TEST_ARTIFACTS overrides), kept after the run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import fake, fake_session, momor, momor_server  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def artifacts() -> Path:
    folder = Path(os.environ.get("MOMOR_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "console"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    if not binary or not driver_path:
        pytest.fail("Chromium and its driver are needed (Debian: chromium chromium-driver; infra/setup.sh "
                    "installs them).", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1440,900", "--force-color-profile=srgb", "--hide-scrollbars",
                     "--lang=en-US"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
