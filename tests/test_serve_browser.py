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


def column(browser, decoder):
    return browser.find_element(By.CSS_SELECTOR, 'section.decoder[data-decoder="%s"]' % decoder)


def column_hypotheses(browser, decoder):
    return [(item.find_element(By.CLASS_NAME, "text").text,
             float(item.find_element(By.CLASS_NAME, "score-value").text))
            for item in column(browser, decoder).find_elements(By.CSS_SELECTOR, "li.hypothesis")]


def translate_and_wait(browser, wait, decoders=("while_loop", "unrolled")):
    """Clicks Translate and waits until every decoder's column is drawn and the page is idle."""
    browser.find_element(By.ID, "translate").click()
    for decoder in decoders:
        wait.until(expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, 'section.decoder[data-decoder="%s"] .elapsed' % decoder)))
    wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))


def status(browser):
    return browser.find_element(By.ID, "status").text


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

    expected = {}
    for decoder in ("unrolled", "while_loop"):
        [expected[decoder]] = translator.translate(["I bought these two chairs."], decoder=decoder,
                                                   beam_width=4, n_best=3)
        shown = column_hypotheses(browser, decoder)
        assert [text for text, _ in shown] == [h.text for h in expected[decoder].n_best]
        assert [score for _, score in shown] == pytest.approx(
            [h.score for h in expected[decoder].n_best], abs=1e-3)
        decoding, in_server = column_times(browser, decoder)
        assert 0 < decoding <= in_server
        # The settings that shape the n-best list, and the times as one call's.
        assert column(browser, decoder).find_element(By.CLASS_NAME, "settings").text == \
            "beam 4 \u00b7 n-best 3 \u00b7 length penalty %s \u00b7 step %d" % (
                translator.config["decode"]["length_penalty"], translator.step)
        assert column(browser, decoder).find_element(By.CLASS_NAME, "timing").text.startswith(
            "One call: decoding ")
    # The page's purpose: whether the two beam searches agree, said under the second one.
    assert [h.text for h in expected["unrolled"].n_best] == \
        [h.text for h in expected["while_loop"].n_best]
    delta = max(abs(a.score - b.score) for a, b in zip(expected["unrolled"].n_best,
                                                       expected["while_loop"].n_best))
    [agreement] = column(browser, "unrolled").find_elements(By.CLASS_NAME, "agreement")
    match = re.fullmatch(r"same n-best as while_loop \(max \|\u0394score\| (\S+)\)",
                         agreement.text)
    assert match, agreement.text
    assert float(match.group(1)) == pytest.approx(delta, abs=1e-6)
    assert column(browser, "while_loop").find_elements(By.CLASS_NAME, "agreement") == []
    assert browser.find_elements(By.CSS_SELECTOR, "li .mark") == []
    assert status(browser) == "2 decoders done; the beam searches agree."
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


def test_errors_are_shown_in_the_page_by_line_number(browser, page_url):
    wait = open_page(browser, page_url)
    # The page sends the non-blank lines only: the server's texts[1] is line 3 here.
    browser.find_element(By.ID, "text").send_keys("one\n\n" + "seven " * 100)
    browser.find_element(By.ID, "translate").click()
    wait.until(expected_conditions.visibility_of_element_located((By.ID, "error")))
    message = browser.find_element(By.ID, "error").text
    assert "line 3 has 599 characters; the limit is 500" in message
    assert "texts[" not in message
    assert "unrolled" in message and "while_loop" in message
    failed = browser.find_elements(By.CSS_SELECTOR, "section.decoder .failed")
    assert len(failed) == 2 and all("line 3 has 599 characters; the limit is 500" in column.text
                                    for column in failed)
    assert status(browser) == "0 decoders done, 2 failed."


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
        assert browser.find_elements(By.CLASS_NAME, "agreement") == [], "nothing to compare with"
        assert status(browser) == "1 decoder done, 1 failed."


def answering(path, value):
    """A wrap for `serving`: the app, except that `path` answers 200 with JSON `value`."""

    def wrap(app):
        def wsgi(environ, start_response):
            if environ["PATH_INFO"] != path:
                return app(environ, start_response)
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            body = json.dumps(value).encode("utf-8")
            start_response("200 OK", [("Content-Type", "application/json"),
                                      ("Content-Length", str(len(body)))])
            return [body]
        return wsgi
    return wrap


def test_an_answer_of_unexpected_shape_is_shown_and_the_page_stays_usable(browser, translator):
    with serving(translator, wrap=answering("/translate", {"translations": "not a list"})) as url:
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


# --- Graphs built on first use ------------------------------------------------------------------

def test_a_first_use_says_it_includes_building_graphs(browser, page_url):
    wait = open_page(browser, page_url)
    browser.find_element(By.ID, "text").send_keys("one")
    set_number(browser, "beam_width", 7)  # no other test of this module uses it
    translate_and_wait(browser, wait)
    for decoder in ("while_loop", "unrolled"):
        note = column(browser, decoder).find_element(By.CLASS_NAME, "first-use").text
        assert note == "First use: includes building 1 graph; translate again for the steady time."
    translate_and_wait(browser, wait)
    assert browser.find_elements(By.CLASS_NAME, "first-use") == []


# --- Whether the two beam searches agree -------------------------------------------------------

class AlteredUnrolledTranslator:
    """The real translator, except that the unrolled decoder's answers are altered.

    Args:
      rename_rank: the 1-based rank whose text the unrolled decoder changes, or None.
      add_to_scores: added to every score of the unrolled decoder's.
    """

    def __init__(self, translator, rename_rank=None, add_to_scores=0.0):
        self._translator = translator
        self._rename_rank = rename_rank
        self._add = add_to_scores

    def __getattr__(self, name):
        return getattr(self._translator, name)

    def translate_tokens(self, token_ids, **options):
        translations = self._translator.translate_tokens(token_ids, **options)
        if options["decoder"] != "unrolled":
            return translations
        altered = []
        for translation in translations:
            n_best = [hypothesis._replace(score=hypothesis.score + self._add)
                      for hypothesis in translation.n_best]
            if self._rename_rank:
                index = self._rename_rank - 1
                n_best[index] = n_best[index]._replace(text=n_best[index].text + " (altered)")
            altered.append(translation._replace(text=n_best[0].text, score=n_best[0].score,
                                                n_best=n_best))
        return altered


def test_differing_n_best_lists_are_marked_in_words(browser, translator):
    with serving(AlteredUnrolledTranslator(translator, rename_rank=2)) as url:
        wait = open_page(browser, url)
        browser.find_element(By.ID, "text").send_keys("one\ntwo")
        set_number(browser, "beam_width", 3)
        set_number(browser, "n_best", 3)
        translate_and_wait(browser, wait)
        agreements = column(browser, "unrolled").find_elements(By.CLASS_NAME, "agreement")
        assert [line.text for line in agreements] == ["\u2260 differs from while_loop at rank 2"] * 2
        for decoder in ("while_loop", "unrolled"):
            marks = [item.find_elements(By.CLASS_NAME, "mark") != [] for item in
                     column(browser, decoder).find_elements(By.CSS_SELECTOR, "li.hypothesis")]
            assert marks == [False, True, False] * 2, "\u2260 marks rank 2 of each sentence"
            mark = column(browser, decoder).find_element(By.CLASS_NAME, "mark")
            other = "unrolled" if decoder == "while_loop" else "while_loop"
            assert mark.get_attribute("textContent") == "\u2260 differs from " + other
        assert status(browser) == "2 decoders done; the beam searches differ on 2 of 2 sentences."


def test_scores_that_differ_beyond_the_contract_are_reported(browser, translator):
    with serving(AlteredUnrolledTranslator(translator, add_to_scores=0.02)) as url:
        wait = open_page(browser, url)
        browser.find_element(By.ID, "text").send_keys("one")
        translate_and_wait(browser, wait)
        [agreement] = column(browser, "unrolled").find_elements(By.CLASS_NAME, "agreement")
        assert agreement.text == "\u2260 same texts as while_loop, scores differ (max |\u0394score| 2e-2)"
        assert status(browser) == "2 decoders done; the beam searches differ on 1 of 1 sentence."


def test_greedy_is_not_compared_with_a_beam_search(browser, page_url):
    wait = open_page(browser, page_url)
    browser.find_element(By.CSS_SELECTOR, '#decoders input[value="unrolled"]').click()
    browser.find_element(By.CSS_SELECTOR, '#decoders input[value="greedy"]').click()
    browser.find_element(By.ID, "text").send_keys("one")
    translate_and_wait(browser, wait, decoders=("while_loop", "greedy"))
    assert browser.find_elements(By.CLASS_NAME, "agreement") == []
    assert status(browser) == "2 decoders done."


# --- Options checked before any request --------------------------------------------------------

def test_n_best_follows_the_beam_width(browser, page_url):
    open_page(browser, page_url)
    n_best = browser.find_element(By.ID, "n_best")
    set_number(browser, "beam_width", 4)
    set_number(browser, "n_best", 4)
    set_number(browser, "beam_width", 2)
    assert n_best.get_attribute("max") == "2", "the max follows every keystroke"
    n_best.click()  # the beam width box's change: the n-best box is clamped
    assert n_best.get_attribute("value") == "2"
    assert browser.find_element(By.ID, "beam_width").get_attribute("required") == "true"
    assert n_best.get_attribute("required") == "true"


@pytest.mark.parametrize("beam_width, n_best, message, invalid", [
    ("", "1", "Beam width is required: a whole number in 1\u20138.", "beam_width"),
    ("0", "1", "Beam width must be a whole number in 1\u20138, not 0.", "beam_width"),
    ("9", "1", "Beam width must be a whole number in 1\u20138, not 9.", "beam_width"),
    ("3", "", "N-best is required: a whole number in 1\u20133 (at most the beam width).", "n_best"),
    ("3", "5", "N-best must be a whole number in 1\u20133 (at most the beam width), not 5.",
     "n_best"),
], ids=["empty beam width", "beam width 0", "beam width over the limit", "empty n-best",
        "n-best over the beam width"])
def test_invalid_options_are_refused_before_any_request(browser, page_url, beam_width, n_best,
                                                        message, invalid):
    open_page(browser, page_url)
    browser.find_element(By.ID, "text").send_keys("one")
    set_number(browser, "beam_width", beam_width)
    set_number(browser, "n_best", n_best)
    browser.find_element(By.ID, "translate").click()
    assert browser.find_element(By.ID, "error").text == message
    assert browser.find_elements(By.CSS_SELECTOR, "section.decoder") == [], "nothing was sent"
    field = browser.find_element(By.ID, invalid)
    assert field.get_attribute("aria-invalid") == "true"
    assert browser.switch_to.active_element == field, "the focus is on what to fix"


def test_too_many_lines_are_refused_before_any_request(browser, page_url, translator):
    open_page(browser, page_url)
    limit = translator.config["serve"]["max_texts"]
    browser.execute_script("document.getElementById('text').value = arguments[0];",
                           "\n".join(["one"] * (limit + 1)))
    browser.find_element(By.ID, "translate").click()
    assert browser.find_element(By.ID, "error").text == \
        "The text has %d non-blank lines; the limit is %d." % (limit + 1, limit)
    assert browser.find_elements(By.CSS_SELECTOR, "section.decoder") == []


# --- Keyboard focus and screen readers ----------------------------------------------------------

def test_the_focus_returns_to_what_had_it(browser, page_url):
    wait = open_page(browser, page_url)
    browser.find_element(By.ID, "text").send_keys("one")
    translate_and_wait(browser, wait)
    assert browser.switch_to.active_element.get_attribute("id") == "translate"
    chip = browser.find_elements(By.CSS_SELECTOR, "#examples button.example")[1]
    chip.click()
    wait.until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, 'section.decoder[data-decoder="unrolled"] .elapsed')))
    wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))
    assert browser.switch_to.active_element == chip


def test_screen_readers_hear_a_short_status_and_labelled_scores(browser, page_url):
    wait = open_page(browser, page_url)
    browser.find_element(By.ID, "text").send_keys("one")
    translate_and_wait(browser, wait)
    status_line = browser.find_element(By.ID, "status")
    assert (status_line.get_attribute("role"), status_line.get_attribute("aria-live")) == \
        ("status", "polite")
    assert browser.find_elements(By.CSS_SELECTOR, "[aria-live]") == [status_line], \
        "the results are not read out whole"
    for decoder in ("while_loop", "unrolled"):
        assert column(browser, decoder).find_element(By.TAG_NAME, "h2").text == decoder
        score = column(browser, decoder).find_element(By.CLASS_NAME, "score")
        assert score.get_attribute("textContent").startswith("score -")


def contrast(first, second):
    """The WCAG contrast ratio of two CSS rgb() colours."""
    def luminance(color):
        channels = [int(value) / 255 for value in re.findall(r"\d+", color)[:3]]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    lighter, darker = sorted([luminance(first), luminance(second)], reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_fields_are_outlined_clearly(browser, page_url):
    open_page(browser, page_url)
    style = "return getComputedStyle(arguments[0])[arguments[1]];"
    form_background = browser.execute_script(style, browser.find_element(By.ID, "form"),
                                             "backgroundColor")
    for element_id in ("text", "beam_width", "n_best"):
        field = browser.find_element(By.ID, element_id)
        border = browser.execute_script(style, field, "borderTopColor")
        assert contrast(border, form_background) >= 3, "WCAG 1.4.11: %s's border" % element_id
    text = browser.find_element(By.ID, "text")
    text.click()
    assert browser.execute_script(style, text, "outlineStyle") == "solid"
    assert browser.execute_script(style, text, "outlineWidth") == "3px"


# --- A description the page cannot read -------------------------------------------------------

def test_a_description_of_unexpected_shape_is_reported(browser, translator):
    with serving(translator, wrap=answering("/v1/info", {"model": "tiny"})) as url:
        browser.get(url)
        WebDriverWait(browser, WAIT_S).until(lambda driver: "could not be read" in
                                             driver.find_element(By.ID, "model").text)
        assert browser.find_element(By.ID, "model").text == \
            "The server's description could not be read (decoders is missing)."
        assert not browser.find_element(By.ID, "translate").is_enabled()
