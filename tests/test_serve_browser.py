"""The page in real headless Chromium, against the app served by waitress on 127.0.0.1.

Skipped only where Chromium is missing outside CI; under CI (the CI variable
set, as .ci/run sets it) a missing browser is a failure, never a skip.
"""

import contextlib
import json
import math
import os
import random
import re
import threading

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from server.app import create_app
from server.model_slot import ModelSlot, read_examples
from server.graceful_server import GracefulServer

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
def serving(translator, wrap=None, lab_dir=None, **app_options):
    """The app over `translator`, served by waitress on a free port; yields its URL.

    Args:
      wrap: a function of the WSGI app that returns the WSGI app to serve.
      lab_dir: where the page's lab examples come from (ModelSlot's).
      app_options: create_app's keyword arguments.
    """
    app = create_app(ModelSlot(translator, lab_dir=lab_dir), translator.config, **app_options)
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
def sentence(translator):
    """The longest held-out sentence of at most 12 source tokens: one every decoder serves."""
    fitting = [text for text in read_examples(translator.config, limit=50)
               if len(translator.tokenize(text)) <= 12]
    assert fitting, "no held-out sentence of at most 12 tokens"
    return max(fitting, key=len)


@pytest.fixture(scope="module")
def page_url(translator):
    with serving(translator) as url:
        yield url


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    """One headless Chromium for a module's tests: starting one takes a second or more."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail("CI must run the browser test, but %s or %s is missing"
                        % (CHROMIUM, CHROMEDRIVER))
        pytest.skip("Chromium is not installed (apt-get install chromium chromium-driver); "
                    "CI installs it and runs this test")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument("--user-data-dir=%s" % tmp_path_factory.mktemp("chromium-profile"))
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path: Selenium Manager is never asked to download anything.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture
def browser(chromium):
    """The module's Chromium on a blank page, its console log emptied of earlier tests'."""
    chromium.get("about:blank")
    chromium.get_log("browser")
    return chromium


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
    """The (text, score) of each hypothesis a column lists; the text exactly as in the page."""
    return [(item.find_element(By.CLASS_NAME, "text").get_attribute("textContent"),
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


def test_a_person_compares_the_two_beam_searches(browser, page_url, translator, sentence):
    wait = open_page(browser, page_url)
    checked = [box.get_attribute("value")
               for box in browser.find_elements(By.CSS_SELECTOR, "#decoders input:checked")]
    assert checked == ["while_loop", "unrolled"]
    browser.find_element(By.ID, "text").send_keys(sentence)
    set_number(browser, "beam_width", 4)
    set_number(browser, "n_best", 3)
    browser.find_element(By.ID, "translate").click()
    for decoder in ("unrolled", "while_loop"):
        wait.until(expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, 'section.decoder[data-decoder="%s"] .elapsed' % decoder)))
    wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))

    expected = {}
    for decoder in ("unrolled", "while_loop"):
        [expected[decoder]] = translator.translate([sentence], decoder=decoder,
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
    # The longest example every decoder serves (the unrolled one: up to 16 source tokens).
    index = max((i for i, text in enumerate(examples) if len(translator.tokenize(text)) <= 16),
                key=lambda i: len(examples[i]))
    browser.find_element(By.ID, "text").send_keys("replaced by the example")
    chips[index].click()
    assert browser.find_element(By.ID, "text").get_attribute("value") == examples[index]
    for decoder in ("unrolled", "while_loop"):
        wait.until(expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, 'section.decoder[data-decoder="%s"] .elapsed' % decoder)))
    wait.until(expected_conditions.element_to_be_clickable((By.CSS_SELECTOR, "#examples button")))

    for decoder in ("unrolled", "while_loop"):
        [expected] = translator.translate([examples[index]], decoder=decoder)
        assert column_hypotheses(browser, decoder) == [
            (expected.text, pytest.approx(expected.score, abs=1e-3))]
        source = browser.find_element(
            By.CSS_SELECTOR, 'section.decoder[data-decoder="%s"] .source' % decoder).text
        assert source == examples[index]
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

    def translate_tokens(self, token_ids, request, originals=None):
        return [translation._replace(score=-math.inf) for translation
                in self._translator.translate_tokens(token_ids, request, originals=originals)]


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

    def translate_tokens(self, token_ids, request, originals=None):
        translations = self._translator.translate_tokens(token_ids, request, originals=originals)
        if request.decoder != "unrolled":
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


# --- The search view (issue 11) and the unfamiliar warning (issue 12), on canned answers -------

def canned_trace(steps, beam, source_length, ranks, seed=0, finish_from=None):
    """A search trace in the docs/API.md format, self-consistent, from a seeded random search.

    Args:
      steps, beam: the steps the search ran and the slots of each.
      source_length: the source pieces (the last one the end token).
      ranks: the n-best hypotheses traced (the last step's first `ranks` slots).
      finish_from: the first step at which hypotheses may finish (default: a third of the way).
    Returns:
      The trace as plain Python.
    """
    rng = random.Random(seed)
    finish_from = steps // 3 if finish_from is None else finish_from
    trace_steps = []
    previous = {"finished": [False], "scores": [0.0]}
    for step in range(steps):
        parents = sorted(rng.randrange(len(previous["finished"])) for _ in range(beam))
        pieces, finished = [], []
        for slot, parent in enumerate(parents):
            done = previous["finished"][parent] or (step >= finish_from and rng.random() < 0.15)
            finished.append(done)
            pieces.append("</s>" if done else "\u2581w%d_%d" % (step, rng.randrange(50)))
        scores = sorted((round(-0.3 * (step + 1) - rng.random() * 3, 4) for _ in range(beam)),
                        reverse=True)
        trace_steps.append({"pieces": pieces, "parents": parents, "scores": scores,
                            "finished": finished})
        previous = trace_steps[-1]
    source = ["\u2581s%d" % index for index in range(source_length - 1)] + ["</s>"]
    n_best = []
    for rank in range(ranks):
        pieces, slot = [], rank
        for step in reversed(trace_steps):
            pieces.append(step["pieces"][slot])
            slot = step["parents"][slot]
        pieces.reverse()
        if "</s>" in pieces:
            pieces = pieces[:pieces.index("</s>") + 1]
        attention = []
        for _ in pieces:
            weights = [rng.random() ** 3 for _ in source]
            attention.append([weight / sum(weights) for weight in weights])
        n_best.append({"pieces": pieces, "attention": attention})
    return {"source_pieces": source, "steps": trace_steps, "n_best": n_best}


def spelled(pieces):
    return "".join(pieces).replace("\u2581", " ").strip()


def canned_translation(trace, unfamiliar=False):
    """A translation carrying `trace`, its n-best list the trace's."""
    last = trace["steps"][-1]["scores"]
    n_best = [{"text": spelled(hypothesis["pieces"]), "score": last[rank]}
              for rank, hypothesis in enumerate(trace["n_best"])]
    return {"text": n_best[0]["text"], "score": n_best[0]["score"], "n_best": n_best,
            "unfamiliar": unfamiliar, "trace": trace}


def canned_answer(decoder, translations):
    return {"translations": translations, "decoder": decoder, "beam_width": 3, "elapsed_ms": 2.0,
            "decode_ms": 1.0, "graphs_built": 0, "model": {"name": "tiny", "step": 1}}


def canned(answer, tracing=True, requests=None):
    """A wrap for `serving`: /v1/info says whether the server traces; POST /translate answers
    `answer(request)` (a JSON-able value) for every request body; `requests` collects the bodies."""

    def wrap(app):
        def wsgi(environ, start_response):
            if environ["PATH_INFO"] == "/v1/info":
                captured = {}
                body = b"".join(app(environ, lambda status, headers, *rest:
                                    captured.update(status=status)))
                value = dict(json.loads(body), tracing=tracing)
            elif environ["PATH_INFO"] == "/translate":
                request = json.loads(environ["wsgi.input"].read(
                    int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
                if requests is not None:
                    requests.append(request)
                value = answer(request)
            else:
                return app(environ, start_response)
            data = json.dumps(value).encode("utf-8")
            start_response("200 OK", [("Content-Type", "application/json"),
                                      ("Content-Length", str(len(data)))])
            return [data]
        return wsgi
    return wrap


def panel(browser, decoder):
    return browser.find_element(By.CSS_SELECTOR,
                                'section.search-panel[data-decoder="%s"]' % decoder)


def attributes(browser, element, selector, *names):
    """Each element under `element` that the CSS `selector` finds: its attributes `names`.

    One script call for them all, not one WebDriver round trip per attribute."""
    return browser.execute_script(
        "return Array.from(arguments[0].querySelectorAll(arguments[1]),"
        " node => arguments[2].map(name => name === 'textContent' ? node.textContent"
        " : node.getAttribute(name)));", element, selector, list(names))


def slots_drawn(browser, decoder, selector):
    """The (step, slot) of each tree node of `decoder`'s panel that `selector` finds."""
    return [(int(step), int(slot)) for step, slot in
            attributes(browser, panel(browser, decoder), selector, "data-step", "data-slot")]


def show_the_search(browser, wait, text="one", decoders=("while_loop", "unrolled")):
    browser.find_element(By.ID, "text").send_keys(text)
    browser.find_element(By.ID, "trace").click()
    translate_and_wait(browser, wait, decoders)


def heatmap(browser, decoder):
    """The heatmap drawn: (output pieces, source pieces, weights by row)."""
    svg = panel(browser, decoder).find_element(By.CSS_SELECTOR, "svg.attention")
    rows = [text for text, in attributes(browser, svg, ".output-piece", "textContent")]
    columns = [text for text, in attributes(browser, svg, ".source-piece", "textContent")]
    weights = [[None] * len(columns) for _ in rows]
    for row, column, weight in attributes(browser, svg, "rect.cell", "data-row", "data-column",
                                          "data-weight"):
        weights[int(row)][int(column)] = float(weight)
    return rows, columns, weights


def test_a_traced_request_draws_every_kept_slot_and_every_attention_weight(browser, translator):
    # 40 steps with beam 16: the tree is drawn whole, at full size, and scrolls.
    trace = canned_trace(steps=40, beam=16, source_length=12, ranks=3)
    requests = []
    with serving(translator, wrap=canned(lambda request: canned_answer(
            request["decoder"], [canned_translation(trace)]), requests=requests)) as url:
        wait = open_page(browser, url)
        show_the_search(browser, wait)
        assert [request.get("trace") for request in requests] == [True, True]
        assert all(request["texts"] == ["one"] for request in requests)
        for decoder in ("while_loop", "unrolled"):
            drawn = sorted(slots_drawn(browser, decoder, "svg.beam-tree g.node"))
            assert drawn == [(step, slot) for step in range(40) for slot in range(16)]
            # Every node's edge, one each.
            assert len(panel(browser, decoder).find_elements(By.CSS_SELECTOR, "path.edge")) == 640
            # The n-best paths highlighted: the paths back from the last step's first 3 slots.
            on_paths = set()
            for rank in range(3):
                slot = rank
                for step in range(39, -1, -1):
                    on_paths.add((step, slot))
                    slot = trace["steps"][step]["parents"][slot]
            assert set(slots_drawn(browser, decoder, "g.node.best")) == on_paths
            # Paths the search dropped end visibly: every slot no later slot extends.
            extended = {(step - 1, parent) for step in range(1, 40)
                        for parent in trace["steps"][step]["parents"]}
            dropped = set(slots_drawn(browser, decoder, "g.node.dropped"))
            assert dropped == {(step, slot) for step in range(39) for slot in range(16)} - extended
            assert len(panel(browser, decoder).find_elements(
                By.CSS_SELECTOR, "g.node.dropped path.end")) == len(dropped)
            assert set(slots_drawn(browser, decoder, "g.node.finished")) == {(step, slot) for step in range(40) for slot in range(16)
                                if trace["steps"][step]["finished"][slot]}
            # Readable: the boxes keep their size and the tree scrolls.
            box = panel(browser, decoder).find_element(By.CSS_SELECTOR, "g.node rect")
            assert box.get_attribute("width") == "92"
            scroll = panel(browser, decoder).find_element(By.CLASS_NAME, "tree-scroll")
            assert browser.execute_script(
                "return arguments[0].scrollWidth > arguments[0].clientWidth &&"
                " arguments[0].scrollHeight > arguments[0].clientHeight;", scroll)
            # One heatmap cell per (output piece, source piece), of the first hypothesis.
            rows, columns, weights = heatmap(browser, decoder)
            assert len(panel(browser, decoder).find_elements(By.CSS_SELECTOR, "rect.cell")) == \
                len(trace["n_best"][0]["pieces"]) * 12
            assert rows == [piece[:13] + "\u2026" if len(piece) > 14 else piece
                            for piece in trace["n_best"][0]["pieces"]]
            assert columns == trace["source_pieces"]
            assert weights == [pytest.approx(row) for row in trace["n_best"][0]["attention"]]
        agreement = browser.find_element(By.ID, "trace-agreement")
        assert agreement.text == "while_loop and unrolled kept the same hypotheses with the same " \
            "scores at every one of the 40 steps."
        assert status(browser) == "2 decoders done; the beam searches agree."
        assert not browser.find_element(By.ID, "error").is_displayed()
        severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
        assert severe == []


def test_choosing_another_hypothesis_redraws_the_heatmap(browser, translator):
    trace = canned_trace(steps=6, beam=4, source_length=5, ranks=3, seed=1)
    with serving(translator, wrap=canned(lambda request: canned_answer(
            request["decoder"], [canned_translation(trace)]))) as url:
        wait = open_page(browser, url)
        show_the_search(browser, wait)
        radios = panel(browser, "unrolled").find_elements(By.CSS_SELECTOR, ".nbest-choice input")
        assert [radio.is_selected() for radio in radios] == [True, False, False]
        radios[2].click()
        rows, columns, weights = heatmap(browser, "unrolled")
        assert rows == trace["n_best"][2]["pieces"] and columns == trace["source_pieces"]
        assert weights == [pytest.approx(row) for row in trace["n_best"][2]["attention"]]
        chosen = set(slots_drawn(browser, "unrolled", "g.node.chosen"))
        slot, path = 2, set()
        for step in range(5, -1, -1):
            path.add((step, slot))
            slot = trace["steps"][step]["parents"][slot]
        assert chosen == path
        # The other decoder's panel keeps its own choice.
        rows, _, _ = heatmap(browser, "while_loop")
        assert rows == trace["n_best"][0]["pieces"]


def test_the_search_view_works_from_the_keyboard(browser, translator):
    trace = canned_trace(steps=5, beam=3, source_length=4, ranks=1, seed=2)
    with serving(translator, wrap=canned(lambda request: canned_answer(
            request["decoder"], [canned_translation(trace)]))) as url:
        wait = open_page(browser, url)
        show_the_search(browser, wait, decoders=("while_loop",))
        tree = panel(browser, "while_loop")
        [stop] = tree.find_elements(By.CSS_SELECTOR, 'g.node[tabindex="0"]')
        assert (stop.get_attribute("data-step"), stop.get_attribute("data-slot")) == ("4", "0")
        browser.execute_script("arguments[0].focus();", stop)
        assert browser.switch_to.active_element == stop
        assert stop.get_attribute("aria-label").startswith("Step 5, slot 1: ")
        assert tree.find_element(By.CLASS_NAME, "tree-readout").text == \
            stop.get_attribute("aria-label")
        stop.send_keys(Keys.ARROW_LEFT)  # to its parent
        parent = trace["steps"][4]["parents"][0]
        active = browser.switch_to.active_element
        assert (active.get_attribute("data-step"), active.get_attribute("data-slot")) == \
            ("3", str(parent))
        assert active.get_attribute("tabindex") == "0" and stop.get_attribute("tabindex") == "-1"
        assert tree.find_element(By.CLASS_NAME, "tree-readout").text.startswith(
            "Step 4, slot %d: " % (parent + 1))
        # The heatmap: a cell's value on focus, arrow keys between cells.
        [first] = tree.find_elements(By.CSS_SELECTOR, 'rect.cell[tabindex="0"]')
        browser.execute_script("arguments[0].focus();", first)
        first.send_keys(Keys.ARROW_RIGHT)
        active = browser.switch_to.active_element
        assert (active.get_attribute("data-row"), active.get_attribute("data-column")) == ("0", "1")
        weight = trace["n_best"][0]["attention"][0][1]
        assert tree.find_element(By.CLASS_NAME, "heat-readout").text == \
            "output 1 %s, source 2 %s: weight %.3f" % (trace["n_best"][0]["pieces"][0],
                                                        trace["source_pieces"][1], weight)
        assert browser.find_elements(By.CSS_SELECTOR, "[aria-live]") == \
            [browser.find_element(By.ID, "status")]


def test_searches_that_differ_are_marked_at_their_steps(browser, translator):
    trace = canned_trace(steps=8, beam=4, source_length=5, ranks=2, seed=3)
    altered = json.loads(json.dumps(trace))
    altered["steps"][4]["scores"][1] += 0.01

    def answer(request):
        chosen = altered if request["decoder"] == "unrolled" else trace
        return canned_answer(request["decoder"], [canned_translation(chosen)])

    with serving(translator, wrap=canned(answer)) as url:
        wait = open_page(browser, url)
        show_the_search(browser, wait)
        agreement = browser.find_element(By.ID, "trace-agreement")
        assert agreement.text == "\u2260 while_loop and unrolled differ at 1 step, first at step 5."
        for decoder in ("while_loop", "unrolled"):
            labels = [label.get_attribute("textContent") for label in panel(browser, decoder)
                      .find_elements(By.CSS_SELECTOR, ".step-label.differs")]
            assert labels == ["\u2260 step 5"]


def test_show_the_search_takes_one_sentence(browser, translator):
    requests = []
    with serving(translator, wrap=canned(lambda request: {}, requests=requests)) as url:
        open_page(browser, url)
        browser.find_element(By.ID, "text").send_keys("one\ntwo")
        browser.find_element(By.ID, "trace").click()
        browser.find_element(By.ID, "translate").click()
        assert browser.find_element(By.ID, "error").text == (
            "Show the search draws one sentence at a time; the text has 2 non-blank lines. "
            "Keep one, or clear Show the search.")
        assert requests == [] and browser.switch_to.active_element.get_attribute("id") == "text"


def test_a_trace_the_page_cannot_draw_is_reported_and_the_n_best_list_stays(browser, translator):
    trace = canned_trace(steps=4, beam=3, source_length=4, ranks=2, seed=4)
    broken = json.loads(json.dumps(trace))
    broken["n_best"][1]["attention"][0] = [1.0]
    with serving(translator, wrap=canned(lambda request: canned_answer(
            request["decoder"], [canned_translation(broken)]))) as url:
        wait = open_page(browser, url)
        show_the_search(browser, wait)
        for decoder in ("while_loop", "unrolled"):
            assert panel(browser, decoder).find_element(By.CLASS_NAME, "failed").text == \
                "the search could not be drawn (trace.n_best[1].attention is not one row of " \
                "source weights per piece)"
            assert [text for text, _ in column_hypotheses(browser, decoder)] == \
                [spelled(hypothesis["pieces"]) for hypothesis in trace["n_best"]]
        assert "while_loop: the search could not be drawn" in \
            browser.find_element(By.ID, "error").text
        assert browser.find_element(By.ID, "translate").is_enabled()


def test_a_server_that_does_not_trace_offers_no_search_view(browser, translator):
    with serving(translator, wrap=canned(lambda request: {}, tracing=False)) as url:
        open_page(browser, url)
        assert not browser.find_element(By.ID, "trace").is_enabled()


def test_an_unfamiliar_line_is_flagged_kindly(browser, translator):
    def answer(request):
        translations = []
        for index, text in enumerate(request["texts"]):
            translations.append({"text": "t%d" % index, "score": -1.0, "unfamiliar": index == 1,
                                 "n_best": [{"text": "t%d" % index, "score": -1.0}]})
        return canned_answer(request["decoder"], translations)

    with serving(translator, wrap=canned(answer)) as url:
        wait = open_page(browser, url)
        browser.find_element(By.ID, "text").send_keys("Monday\nHello, how are you?")
        translate_and_wait(browser, wait)
        for decoder in ("while_loop", "unrolled"):
            paragraphs = column(browser, decoder).find_elements(By.CSS_SELECTOR,
                                                                "p.source, p.unfamiliar")
            assert [(p.get_attribute("class"), p.text) for p in paragraphs] == [
                ("source", "Monday"), ("source", "Hello, how are you?"),
                ("unfamiliar", "\u26a0 This looks unlike the sentences the model learned from, so "
                               "take its translation with a pinch of salt.")]
        assert status(browser) == "2 decoders done; the beam searches agree; 1 of 2 sentences " \
            "look unlike what the model learned from."


def test_the_model_s_own_search_is_drawn(browser, page_url, translator, sentence):
    """The real server's traces, as the translator returns them, drawn whole."""
    text = sentence
    wait = open_page(browser, page_url)
    set_number(browser, "beam_width", 4)
    set_number(browser, "n_best", 2)
    show_the_search(browser, wait, text=text)
    for decoder in ("while_loop", "unrolled"):
        [expected] = translator.translate([text], decoder=decoder, beam_width=4, n_best=2,
                                          trace=True)
        trace = expected.trace
        assert sorted(slots_drawn(browser, decoder, "svg.beam-tree g.node")) == [
            (step, slot) for step, kept in enumerate(trace["steps"])
            for slot in range(len(kept["pieces"]))]
        rows, columns, weights = heatmap(browser, decoder)
        assert len(panel(browser, decoder).find_elements(By.CSS_SELECTOR, "rect.cell")) == \
            len(trace["n_best"][0]["pieces"]) * len(trace["source_pieces"])
        assert len(rows) == len(trace["n_best"][0]["pieces"])
        assert len(columns) == len(trace["source_pieces"])
        assert weights == [pytest.approx(row, abs=1e-6) for row in trace["n_best"][0]["attention"]]
        assert len(panel(browser, decoder).find_elements(By.CSS_SELECTOR, ".nbest-choice input")) \
            == len(expected.n_best)
    assert browser.find_element(By.ID, "trace-agreement").text.startswith(
        "while_loop and unrolled kept the same hypotheses with the same scores at every one of")
    assert not browser.find_element(By.ID, "error").is_displayed()
