"""`quipu serve` in a real browser: headless Chromium (Debian's package) driven by Selenium through
the system chromedriver. A person accepts one review item, rejects another and undoes a
supersession from the audit log; the store's history then holds exactly those commits. A hostile
store runs no script. Skips when no browser is installed."""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quipu.curate import review
from quipu.store.store import Store
from testing.fixtures import REPO_ROOT, git
from testing.serve import PAYLOADS, Served, hostile_store, reviewed_store, serving

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[test]')")
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
SCREENSHOT_ENV = "QUIPU_SERVE_SCREENSHOT"  # where to save the review page's screenshot (docs/serve.png)

pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None,
                                reason="no headless browser: apt-get install chromium chromium-driver")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager, were it asked, may not go online
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1000", "--no-first-run", "--disable-extensions"):
        options.add_argument(flag)
    # The system chromedriver, named: Selenium Manager never runs (it would download a driver).
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def open_viewer(driver: Any, served: Served) -> None:
    driver.get(f"{served.base}/review?token={served.token}")
    WebDriverWait(driver, 30).until(lambda d: d.current_url == f"{served.base}/review")


def submit(driver: Any, css: str, *, confirm: bool = False) -> None:
    old = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.CSS_SELECTOR, css).click()
    if confirm:
        WebDriverWait(driver, 10).until(expected_conditions.alert_is_present()).accept()
    WebDriverWait(driver, 30).until(expected_conditions.staleness_of(old))


def test_accept_reject_and_undo_in_the_browser_leave_exactly_those_commits(browser: Any, tmp_path: Path) -> None:
    store, source = reviewed_store(tmp_path / "store")
    items = {i.memory: i for i in review.items(store)}
    before = git(store.root, "rev-parse", "HEAD").strip()
    applied = git(store.root, "log", "--format=%H", "-1", "--grep", "^quipu: supersede vpn-old by vpn-new").strip()
    with serving(store) as served:
        open_viewer(browser, served)
        accepted, rejected = items["atlas-cdn"].review_id, items["perm-rule"].review_id
        card = browser.find_element(By.ID, accepted)
        assert "old (loser): atlas-cdn" in card.text and "new (winner): beacon-release" in card.text
        assert "fail overlap" in card.text and "confidence 0.88" in card.text
        assert card.find_elements(By.CSS_SELECTOR, "del") and card.find_elements(By.CSS_SELECTOR, "ins")
        _screenshot(browser, tmp_path)

        submit(browser, f'#{accepted} button.accept')
        assert browser.current_url.startswith(f"{served.base}/log"), browser.page_source[:3000]
        assert "Done:" in browser.find_element(By.CSS_SELECTOR, ".notice").text

        browser.get(f"{served.base}/review")
        submit(browser, f'#{rejected} button.reject')
        browser.get(f"{served.base}/review")
        assert not browser.find_elements(By.ID, rejected) and not browser.find_elements(By.ID, accepted)

        browser.get(f"{served.base}/log?action=supersede")
        entry = f'li[data-commit="{applied}"]'
        details = browser.find_element(By.CSS_SELECTOR, f"{entry} details")
        details.find_element(By.TAG_NAME, "summary").click()  # the diff, fetched by app.js
        WebDriverWait(browser, 30).until(lambda d: "events/vp/vpn-old/" in details.text)
        submit(browser, f"{entry} button.undo", confirm=True)
        notice = browser.find_element(By.CSS_SELECTOR, ".notice").text
        assert "Undid" in notice and "supersede vpn-old by vpn-new" in notice and "made" in notice

    subjects = git(store.root, "log", "--format=%s", f"{before}..HEAD").splitlines()
    assert subjects == [
        "quipu: undo supersede vpn-old by vpn-new",
        f"quipu: review {rejected} rejected: perm-rule tension",
        f"quipu: supersede atlas-cdn by beacon-release (review {accepted} accepted)",
    ], source
    assert f"Quipu-Reverts: {applied}" in git(store.root, "log", "-1", "--format=%B")


def _screenshot(driver: Any, tmp_path: Path) -> None:
    shot = tmp_path / "serve.png"
    driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    target = os.environ.get(SCREENSHOT_ENV)
    if target:
        shutil.copyfile(shot, REPO_ROOT / target if not os.path.isabs(target) else Path(target))


def _no_script_ran(driver: Any) -> None:
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    with pytest.raises(NoAlertPresentException):
        _ = driver.switch_to.alert.text


def test_a_hostile_store_runs_nothing_in_the_browser(browser: Any, tmp_path: Path) -> None:
    store: Store = hostile_store(tmp_path / "store", tmp_path / "claude" / "projects")
    with serving(store) as served:
        open_viewer(browser, served)
        for path in ("/review", "/log", "/memories", "/memories?q=window", "/memories/hostile-one",
                     "/memories/hostile-one?prompt=window+pwned", "/history?q=escape",
                     "/history/turn?session=7e57e57e&turn=0", "/health"):
            browser.get(served.base + path)
            _no_script_ran(browser)
            text = browser.find_element(By.TAG_NAME, "body").text
            assert PAYLOADS[0] in text or path in ("/log", "/health"), path  # shown, as text
            links = [a.get_attribute("href") or "" for a in browser.find_elements(By.TAG_NAME, "a")]
            assert all(link.startswith(served.base + "/") for link in links), (path, links)
            assert browser.find_elements(By.CSS_SELECTOR, "img, svg, iframe, quipu-memory") == []
        browser.get(served.base + "/log")
        for details in browser.find_elements(By.CSS_SELECTOR, "details"):
            details.find_element(By.TAG_NAME, "summary").click()
        WebDriverWait(browser, 30).until(lambda d: all(
            x.get_attribute("data-loaded") for x in d.find_elements(By.CSS_SELECTOR, "details")))
        _no_script_ran(browser)
        assert PAYLOADS[1] in browser.find_element(By.TAG_NAME, "body").text  # the commit's trailers, as text
