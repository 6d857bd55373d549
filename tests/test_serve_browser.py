"""The page in real headless Chromium, against the app served by waitress on 127.0.0.1.

Skipped only where Chromium is missing outside CI; under CI (the CI variable
set) a missing browser is a failure.
"""

import contextlib
import json
import math
import os
import re
import threading

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from server.app import create_app
from server.examples import read_examples
from server.graceful_server import GracefulServer
from server.model_slot import ModelSlot

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Nothing but the page: no first-run UI, no network beyond 127.0.0.1.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1280,900")
WAIT_S = 60


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    from decode.translator import Translator
    return Translator(tiny_model_dir)


@contextlib.contextmanager
def serving(translator, wrap=None, **app_options):
    """The app over `translator`, served by waitress on a free port; yields its URL.

    Args:
      wrap: a function of the WSGI app that returns the WSGI app to serve.
      app_options: create_app's keyword arguments.
    """
    app = create_app(ModelSlot(translator), translator.config, **app_options)
    server = GracefulServer(wrap(app) if wrap else app, "127.0.0.1", 0, threads=8,
                            max_body_bytes=translator.config["serve"]["max_body_bytes"])
    thread = threading.Thread(target=server.serve, name="waitress", daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.request_stop()
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def page_url(translator):
    with serving(translator) as url:
        yield url


@pytest.fixture
def browser(tmp_path):
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser test, but %s or %s is missing"
                        % (CHROMIUM, CHROMEDRIVER))
        pytest.skip("Chromium is not installed (apt-get install chromium chromium-driver); "
                    "CI installs it and runs this test")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument("--user-data-dir=%s" % (tmp_path / "chromium-profile"))
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path: Selenium Manager is never asked to download anything.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def open_page(browser, page_url):
    browser.get(page_url)
    wait = WebDriverWait(browser, WAIT_S)
    wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))
    return wait


def set_number(browser, element_id, value):
    field = browser.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(str(value))


def column_times(browser, decoder):
    """The (decoding, in the server) milliseconds a column shows, each with its label."""
    column = 'section.decoder[data-decoder="%s"]' % decoder
    decoding = browser.find_element(By.CSS_SELECTOR, column + " .decode-ms").text
    in_server = browser.find_element(By.CSS_SELECTOR, column + " .elapsed").text
    decoding_match = re.fullmatch(r"decoding (\d+\.\d\d) ms", decoding)
    in_server_match = re.fullmatch(r"in the server (\d+\.\d\d) ms", in_server)
    assert decoding_match and in_server_match, (decoding, in_server)
    return float(decoding_match.group(1)), float(in_server_match.group(1))


def column_hypotheses(browser, decoder):
    column = browser.find_element(By.CSS_SELECTOR, 'section.decoder[data-decoder="%s"]' % decoder)
    return [(item.find_element(By.CLASS_NAME, "text").text,
             float(item.find_element(By.CLASS_NAME, "score").text))
            for item in column.find_elements(By.CSS_SELECTOR, "li.hypothesis")]


def test_a_person_compares_the_two_beam_searches(browser, page_url, translator):
    wait = open_page(browser, page_url)
    checked = [box.get_attribute("value")
               for box in browser.find_elements(By.CSS_SELECTOR, "#decoders input:checked")]
    assert checked == ["while_loop", "unrolled"]
    browser.find_element(By.ID, "text").send_keys("I bought these two chairs.")
    set_number(browser, "beam_width", 4)
    set_number(browser, "n_best", 3)
    browser.find_element(By.ID, "translate").click()
    for decoder in ("unrolled", "while_loop"):
        wait.until(expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, 'section.decoder[data-decoder="%s"] .elapsed' % decoder)))
    wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))

    for decoder in ("unrolled", "while_loop"):
        [expected] = translator.translate(["I bought these two chairs."], decoder=decoder,
                                          beam_width=4, n_best=3)
        shown = column_hypotheses(browser, decoder)
        assert [text for text, _ in shown] == [hypothesis.text for hypothesis in expected.n_best]
        assert [score for _, score in shown] == pytest.approx(
            [hypothesis.score for hypothesis in expected.n_best], abs=1e-3)
        decoding, in_server = column_times(browser, decoder)
        assert 0 < decoding <= in_server
    assert not browser.find_element(By.ID, "error").is_displayed()
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == [], "the page logged errors (a blocked resource, a script error)"


def test_a_person_tries_an_example(browser, page_url, translator):
    wait = open_page(browser, page_url)
    chips = browser.find_elements(By.CSS_SELECTOR, "#examples button.example")
    examples = read_examples(translator.config)
    assert len(examples) == 8 and [chip.text for chip in chips] == examples
    browser.find_element(By.ID, "text").send_keys("replaced by the example")
    chips[3].click()
    assert browser.find_element(By.ID, "text").get_attribute("value") == examples[3]
    for decoder in ("unrolled", "while_loop"):
        wait.until(expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, 'section.decoder[data-decoder="%s"] .elapsed' % decoder)))
    wait.until(expected_conditions.element_to_be_clickable((By.CSS_SELECTOR, "#examples button")))

    for decoder in ("unrolled", "while_loop"):
        [expected] = translator.translate([examples[3]], decoder=decoder)
        assert column_hypotheses(browser, decoder) == [
            (expected.text, pytest.approx(expected.score, abs=1e-3))]
        source = browser.find_element(
            By.CSS_SELECTOR, 'section.decoder[data-decoder="%s"] .source' % decoder).text
        assert source == examples[3]
    assert not browser.find_element(By.ID, "error").is_displayed()


def test_errors_are_shown_in_the_page(browser, page_url):
    wait = open_page(browser, page_url)
    browser.find_element(By.ID, "text").send_keys("seven " * 100)
    browser.find_element(By.ID, "translate").click()
    wait.until(expected_conditions.visibility_of_element_located((By.ID, "error")))
    message = browser.find_element(By.ID, "error").text
    assert "characters; the limit is 500" in message
    assert "unrolled" in message and "while_loop" in message
    failed = browser.find_elements(By.CSS_SELECTOR, "section.decoder .failed")
    assert len(failed) == 2 and all("the limit is 500" in column.text for column in failed)


class MinusInfinityTranslator:
    """The real translator, every score -inf: Flask writes -Infinity, which is not JSON."""

    def __init__(self, translator):
        self._translator = translator

    def __getattr__(self, name):
        return getattr(self._translator, name)

    def translate_tokens(self, token_ids, **options):
        return [translation._replace(score=-math.inf)
                for translation in self._translator.translate_tokens(token_ids, **options)]


def test_an_answer_that_is_not_json_is_shown_and_the_page_stays_usable(browser, translator):
    with serving(MinusInfinityTranslator(translator)) as url:
        wait = open_page(browser, url)
        browser.find_element(By.ID, "text").send_keys("one")
        browser.find_element(By.ID, "translate").click()
        wait.until(expected_conditions.visibility_of_element_located((By.ID, "error")))
        assert "the server answered 200 without JSON" in browser.find_element(By.ID, "error").text
        wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))


def test_a_source_too_long_for_the_unrolled_decoder_fails_in_its_column_only(browser, translator):
    with serving(translator, max_unrolled_tokens=4) as url:
        wait = open_page(browser, url)
        assert "of up to 4 tokens" in browser.find_element(By.ID, "model").text
        browser.find_element(By.ID, "text").send_keys("I bought these two chairs.")
        browser.find_element(By.ID, "translate").click()
        wait.until(expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, 'section.decoder[data-decoder="while_loop"] .elapsed')))
        wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))
        unrolled = browser.find_element(By.CSS_SELECTOR, 'section.decoder[data-decoder="unrolled"]')
        assert "serves up to 4 source tokens here; use while_loop" in \
            unrolled.find_element(By.CLASS_NAME, "failed").text
        [expected] = translator.translate(["I bought these two chairs."])
        assert column_hypotheses(browser, "while_loop") == [
            (expected.text, pytest.approx(expected.score, abs=1e-3))]
        assert "unrolled: " in browser.find_element(By.ID, "error").text


def unexpected_translate_answers(app):
    """The app, except that POST /translate answers 200 with JSON that is no translation."""

    def wsgi(environ, start_response):
        if environ["PATH_INFO"] != "/translate":
            return app(environ, start_response)
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        body = json.dumps({"translations": "not a list"}).encode("utf-8")
        start_response("200 OK", [("Content-Type", "application/json"),
                                  ("Content-Length", str(len(body)))])
        return [body]
    return wsgi


def test_an_answer_of_unexpected_shape_is_shown_and_the_page_stays_usable(browser, translator):
    with serving(translator, wrap=unexpected_translate_answers) as url:
        wait = open_page(browser, url)
        browser.find_element(By.ID, "text").send_keys("one")
        browser.find_element(By.ID, "translate").click()
        wait.until(expected_conditions.visibility_of_element_located((By.ID, "error")))
        wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))
        columns = browser.find_elements(By.CSS_SELECTOR, "section.decoder")
        assert [column.get_attribute("data-decoder") for column in columns] == \
            ["while_loop", "unrolled"]
        for column in columns:
            assert "could not be shown" in column.find_element(By.CLASS_NAME, "failed").text
            assert "translating" not in column.text
        assert browser.find_element(By.CSS_SELECTOR, "#examples button").is_enabled()
