"""The page's decoding options, sample, exact and MBR columns, "Try your own translation" (and
its continuation of a person's words, holding the phrases it must contain), the beam-width chart
and the decoding lab's examples, in real headless Chromium against the app on 127.0.0.1 (the tiny
model).
"""

import io
import json
import typing

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select

from seq2seq.decoding_options import OPTIONS, SAMPLERS, DecodingOptions, uses
from tests.test_serve_browser import (browser, canned, canned_answer, chromium,  # noqa: F401
                                      column, column_hypotheses, open_page, serving, set_number,
                                      translate_and_wait)

SENTENCE = "I paid three hundred and five euros on Monday"
SCORING = ["length_penalty", "length_penalty_kind", "coverage_penalty", "no_repeat_ngram_size",
           "min_length"]
BEAM_ONLY = ["diverse_beam_groups", "diverse_beam_strength", "placeholders"]
SAMPLING_OPTIONS = [name for name in OPTIONS if uses(name).decoders == SAMPLERS]


def is_choice(name):
    return typing.get_origin(DecodingOptions.model_fields[name].annotation) is typing.Literal


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    from decode.translator import Translator
    return Translator(tiny_model_dir)


@pytest.fixture(scope="module")
def page_url(translator):
    with serving(translator) as url:
        yield url


def choose_decoders(browser, *decoders):
    for box in browser.find_elements(By.CSS_SELECTOR, "#decoders input"):
        if box.is_selected() != (box.get_attribute("value") in decoders):
            box.click()


def set_option(browser, name, value):
    if is_choice(name):
        Select(browser.find_element(By.ID, "option-" + name)).select_by_value(value)
    else:
        set_number(browser, "option-" + name, value)


def shown_options(browser):
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('#decoding-options .option'))"
        ".filter(row => !row.hidden).map(row => row.dataset.option);")


def text_of(browser, element_id):
    return browser.find_element(By.ID, element_id).text


def translate_one(browser, wait, text, decoders):
    box = browser.find_element(By.ID, "text")
    box.clear()
    box.send_keys(text)
    translate_and_wait(browser, wait, decoders)


def test_the_options_appear_with_their_hints_for_the_decoders_that_use_them(browser, page_url,
                                                                             translator):
    open_page(browser, page_url)
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('#decoding-options .option'), row => {"
        " const control = row.querySelector('input, select');"
        " const hint = document.getElementById(control.getAttribute('aria-describedby'));"
        " return [row.dataset.option, row.querySelector('label').textContent, control.value,"
        "         hint.textContent, row.querySelector('.option-decoders').textContent]; });")
    decode_params = translator.config["decode"]
    assert [row[0] for row in rows] == list(OPTIONS)
    for name, label, value, hint, decoders in rows:
        assert label == name and hint == DecodingOptions.model_fields[name].description
        assert (value if is_choice(name) else float(value)) == decode_params[name]
        assert decoders == ("sample, mbr" if name in SAMPLING_OPTIONS else "exact" if name ==
                            "max_expansions" else "not exact" if name == "coverage_penalty"
                            else "while_loop, unrolled" if name in BEAM_ONLY else "mbr"
                            if name.startswith("mbr_") else "")
    assert shown_options(browser) == SCORING + BEAM_ONLY, "the beam searches' options"
    choose_decoders(browser, "while_loop", "sample")
    assert shown_options(browser) == [name for name in OPTIONS  # in the table's order
                                      if name in SCORING + BEAM_ONLY + list(SAMPLING_OPTIONS)]
    choose_decoders(browser, "exact")
    assert shown_options(browser) == [name for name in SCORING if name != "coverage_penalty"] + [
        "max_expansions"]
    choose_decoders(browser, "mbr")
    assert shown_options(browser) == SCORING + list(SAMPLING_OPTIONS) + [
        "mbr_candidates", "mbr_utility"]
    choose_decoders(browser)
    assert not browser.find_element(By.ID, "decoding").is_displayed()


def test_the_options_are_sent_and_change_the_answer(browser, page_url, translator):
    wait = open_page(browser, page_url)
    choose_decoders(browser, "sample")
    set_option(browser, "temperature", 0)  # the sample decoder's: not checked or sent without it
    choose_decoders(browser, "while_loop")
    set_option(browser, "min_length", 20)
    set_option(browser, "length_penalty_kind", "none")
    translate_one(browser, wait, SENTENCE, ["while_loop"])
    options = {"min_length": 20, "length_penalty_kind": "none"}
    [expected] = translator.translate([SENTENCE], options=options)
    [plain] = translator.translate([SENTENCE])
    assert expected.text != plain.text
    assert column_hypotheses(browser, "while_loop") == [
        (expected.text, pytest.approx(expected.score, abs=1e-3))]
    assert column(browser, "while_loop").find_element(By.CLASS_NAME, "settings").text == \
        "beam 3 \u00b7 n-best 1 \u00b7 length penalty %s \u00b7 length_penalty_kind none \u00b7 " \
        "min_length 20 \u00b7 step %d" % (translator.config["decode"]["length_penalty"],
                                           translator.step)


@pytest.mark.parametrize("decoders, name, value, message", [
    (("sample",), "temperature", "0", "temperature must be a number of at least 0.000001, not 0."),
    (("sample",), "top_p", "1.5", "top_p must be a number above 0 and at most 1, not 1.5."),
    (("while_loop",), "min_length", "65",
     "min_length must be a whole number in 0\u201364, not 65."),
    (("while_loop",), "coverage_penalty", "", "coverage_penalty must be a number in 0\u201310."),
    (("exact",), "max_expansions", "2.5",
     "max_expansions must be a whole number in 1\u201320000, not 2.5."),
    (("mbr",), "epsilon", "1", "epsilon must be a number of at least 0 and below 1, not 1."),
    (("unrolled",), "diverse_beam_groups", "0",
     "diverse_beam_groups must be a whole number of at least 1, not 0."),
], ids=["temperature 0", "top_p over 1", "min_length over the limit", "empty coverage penalty",
        "fractional max_expansions", "epsilon 1", "no diverse group"])
def test_a_bad_option_is_refused_before_any_request(browser, page_url, decoders, name, value,
                                                    message):
    open_page(browser, page_url)
    choose_decoders(browser, *decoders)
    browser.find_element(By.ID, "text").send_keys("one")
    set_option(browser, name, value)
    browser.find_element(By.ID, "translate").click()
    assert text_of(browser, "error") == message
    assert browser.find_elements(By.CSS_SELECTOR, "section.decoder") == [], "nothing was sent"
    control = browser.find_element(By.ID, "option-" + name)
    assert control.get_attribute("aria-invalid") == "true"
    assert browser.switch_to.active_element == control


def test_the_sample_decoder_s_column_lists_its_samples_beside_the_search(browser, page_url,
                                                                         translator):
    wait = open_page(browser, page_url)
    choose_decoders(browser, "while_loop", "sample")
    options = {"num_samples": 3, "seed": 5, "temperature": 0.8}
    for name, value in options.items():
        set_option(browser, name, value)
    translate_one(browser, wait, SENTENCE, ["while_loop", "sample"])
    [expected] = translator.translate([SENTENCE], decoder="sample", n_best=3, options=options)
    assert column_hypotheses(browser, "sample") == [
        (hypothesis.text, pytest.approx(hypothesis.score, abs=1e-3))
        for hypothesis in expected.n_best]
    assert column(browser, "sample").find_element(By.CLASS_NAME, "settings").text == \
        "3 samples \u00b7 length penalty %s \u00b7 temperature 0.8 \u00b7 seed 5 \u00b7 step %d" % (
            translator.config["decode"]["length_penalty"], translator.step)
    [beam] = translator.translate([SENTENCE])
    assert column_hypotheses(browser, "while_loop") == [
        (beam.text, pytest.approx(beam.score, abs=1e-3))], "the search's options unchanged"


def against_exact(browser):
    return [item.text for item in column(browser, "exact").find_elements(
        By.CSS_SELECTOR, ".against-exact li")]


def test_the_exact_answer_says_proven_or_cap_reached_beside_the_beam(browser, page_url,
                                                                     translator):
    wait = open_page(browser, page_url)
    choose_decoders(browser, "while_loop", "exact")
    translate_one(browser, wait, "one", ["while_loop", "exact"])
    [exact] = translator.translate(["one"], decoder="exact")
    [beam] = translator.translate(["one"])
    assert exact.proven is True
    assert column_hypotheses(browser, "exact") == [(exact.text, pytest.approx(exact.score,
                                                                              abs=1e-3))]
    assert column(browser, "exact").find_element(By.CLASS_NAME, "exact-status").text == \
        "\u2713 proven: no translation scores higher (%d expansion%s)" % (
            exact.expansions, "" if exact.expansions == 1 else "s")
    if beam.text == exact.text:
        assert against_exact(browser) == ["while_loop found the same translation"]
    else:
        assert against_exact(browser) == ["while_loop\u2019s best scores %.3f lower: a search "
                                          "error" % (exact.score - beam.score)]

    set_option(browser, "max_expansions", 5)
    translate_one(browser, wait, SENTENCE, ["while_loop", "exact"])
    [capped] = translator.translate([SENTENCE], decoder="exact", options={"max_expansions": 5})
    assert (capped.proven, capped.expansions) == (False, 5)
    assert column(browser, "exact").find_element(By.CLASS_NAME, "exact-status").text == \
        "cap reached after 5 expansions: the best found, not proven"
    assert column(browser, "exact").find_element(By.CLASS_NAME, "settings").text.startswith(
        "exact search \u00b7 length penalty ")
    assert "max_expansions 5" in column(browser, "exact").find_element(
        By.CLASS_NAME, "settings").text


def score_own(browser, wait, target):
    box = browser.find_element(By.ID, "own-text")
    box.clear()
    box.send_keys(target)
    browser.find_element(By.ID, "own-score").click()
    wait.until(expected_conditions.visibility_of_element_located((By.ID, "own-meaning")))
    return text_of(browser, "own-result"), text_of(browser, "own-meaning")


def test_try_your_own_translation_scores_it_beside_the_search_s_best(browser, page_url,
                                                                     translator):
    wait = open_page(browser, page_url)
    choose_decoders(browser, "while_loop", "greedy")
    assert not browser.find_element(By.ID, "own").is_displayed()
    translate_one(browser, wait, "forty two", ["while_loop", "greedy"])
    assert browser.find_element(By.ID, "own").is_displayed()
    assert text_of(browser, "own-source") == "forty two"
    found = {decoder: translator.translate(["forty two"], decoder=decoder)[0]
             for decoder in ("while_loop", "greedy")}
    decoder = max(found, key=lambda name: found[name].score)
    best = found[decoder]
    own = "zzz zzz zzz"
    [score] = translator.score(["forty two"], [own])
    assert score["score"] < best.score - 1e-4
    result, meaning = score_own(browser, wait, own)
    assert result == "Yours scores %.3f; the search's best, %s\u2019s \u201c%s\u201d, " \
        "scores %.3f." % (score["score"], decoder, best.text, best.score)
    assert meaning == "Yours scores lower: the model prefers its own translation. If yours is " \
        "the better one, that is a model error, not a search error."
    assert text_of(browser, "own-scored") == "Scored: your text as the model's tokenizer splits it."
    assert text_of(browser, "own-pieces") == pieces_line(score["pieces"])
    # The search's own best, typed in: its pieces are scored, as the search found them.
    assert score_own(browser, wait, best.text)[1] == \
        "The same score: to the model, yours is as good as the search's best."
    first = next(name for name in ("while_loop", "greedy") if found[name].text == best.text)
    assert text_of(browser, "own-scored") == "Scored: the pieces %s\u2019s search produced for " \
        "this text (tokenized again, it could split otherwise)." % first
    [own_best] = translator.score(["forty two"], None, target_pieces=[found[first].pieces])
    assert [piece["piece"] for piece in own_best["pieces"]] == found[first].pieces
    assert text_of(browser, "own-pieces") == pieces_line(own_best["pieces"])


def pieces_line(pieces):
    return "Its pieces and their log-probabilities: " + " \u00b7 ".join(
        "%s %.2f" % (piece["piece"], piece["log_prob"]) for piece in pieces)


def recording(exchanges):
    """A wrap for `serving`: the app, each POST /translate's (request body, status, answer body)
    appended to `exchanges` as the page sent and the server answered them."""

    def wrap(app):
        def wsgi(environ, start_response):
            if environ["PATH_INFO"] != "/translate":
                return app(environ, start_response)
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            status = []

            def start(line, headers, *rest):
                status.append(int(line.split()[0]))
                return start_response(line, headers, *rest)
            answer = b"".join(app(environ, start))
            exchanges.append((json.loads(body), status[0], json.loads(answer)))
            return [answer]
        return wsgi
    return wrap


def continue_own(browser, wait, words, must_contain, done):
    """Types the panel's words and phrases, clicks Continue from my words and waits until the
    completion starts with `done`; returns it."""
    for element_id, text in (("own-text", words), ("own-contain", must_contain)):
        box = browser.find_element(By.ID, element_id)
        box.clear()
        box.send_keys(text)
    browser.find_element(By.ID, "own-continue").click()
    wait.until(lambda _: text_of(browser, "own-completion").startswith(done))
    return text_of(browser, "own-completion")


def test_continue_from_my_words_forces_them_holds_what_it_must_contain_and_scores_it_as_searched(
        browser, translator):
    exchanges = []
    with serving(translator, wrap=recording(exchanges)) as url:
        wait = open_page(browser, url)
        choose_decoders(browser, "while_loop")
        translate_one(browser, wait, SENTENCE, ["while_loop"])
        [plain] = translator.translate([SENTENCE])
        words = "quarenta"
        assert not plain.text.startswith(words), "a prefix the search would not choose"
        shown = continue_own(browser, wait, words, "", "while_loop continues")
        [completed] = translator.translate([SENTENCE], target_prefixes=[words])
        assert completed.text.startswith(words)
        assert shown == "while_loop continues \u201c%s\u201d: \u201c%s\u201d, scoring %.3f " \
            "(your words included)." % (words, completed.text, completed.score)
        assert "constraints" not in exchanges[-1][0], "an empty must-contain: none sent"
        assert score_own(browser, wait, completed.text)[0].startswith(
            "Yours scores %.3f;" % completed.score), "the completion, scored as it was searched"
        assert text_of(browser, "own-scored").startswith(
            "Scored: the pieces while_loop\u2019s search")

        phrase = "dez"  # a number word of the tiny corpus the model does not write here
        assert phrase not in plain.text
        shown = continue_own(browser, wait, "", "\n %s \n\n" % phrase,
                             "while_loop continues from nothing, containing")
        request, status, answer = exchanges[-1]
        assert (request["constraints"], request["target_prefix"], status) == ([phrase], "", 200)
        [held] = answer["translations"]
        assert phrase in held["text"]
        assert shown == "while_loop continues from nothing, containing \u201c%s\u201d: " \
            "\u201c%s\u201d, scoring %.3f (your words included)." % (phrase, held["text"],
                                                                    held["score"])

        too_long = " ".join([phrase] * translator.config["data"]["max_target_length"])
        shown = continue_own(browser, wait, "", too_long, "Cannot continue it")
        request, status, answer = exchanges[-1]
        assert (request["constraints"], status) == ([too_long], 400)
        assert answer["error"]["message"].startswith("constraints[0]: ")
        assert shown == "Cannot continue it: %s." % answer["error"]["message"]


def test_a_translation_the_search_missed_is_called_a_search_error(browser, translator):
    missed = {"text": "nada", "score": -1000.0, "unfamiliar": False,
              "n_best": [{"text": "nada", "score": -1000.0}]}
    with serving(translator, wrap=canned(lambda request: canned_answer(
            request["decoder"], [missed]))) as url:
        wait = open_page(browser, url)
        choose_decoders(browser, "while_loop")
        translate_one(browser, wait, "forty two", ["while_loop"])
        [score] = translator.score(["forty two"], ["quarenta e dois"])
        result, meaning = score_own(browser, wait, "quarenta e dois")
        assert result == "Yours scores %.3f; the search's best, while_loop\u2019s " \
            "\u201cnada\u201d, scores -1000.000." % score["score"]
        assert meaning == "Yours scores higher: the model prefers your translation, but the " \
            "search missed it. That is a search error."


def test_the_beam_width_chart_shows_where_a_wider_beam_changes_the_translation(
        browser, page_url, translator):
    wait = open_page(browser, page_url)
    choose_decoders(browser, "while_loop")
    browser.find_element(By.ID, "chart").click()
    translate_one(browser, wait, SENTENCE, ["while_loop"])
    widths = [1, 2, 4, 8]
    assert translator.config["decode"]["max_beam_width"] == 8
    best = [translator.translate([SENTENCE], beam_width=width)[0] for width in widths]
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('#widths tbody tr'), row =>"
        " [row.dataset.width, row.className, ...Array.from(row.cells, cell => cell.textContent)]);")
    changed = [index > 0 and best[index].text != best[index - 1].text for index in range(4)]
    assert [(int(width), name == "changed", int(shown_width), float(score), text)
            for width, name, shown_width, score, text in rows] == [
        (width, change, width, pytest.approx(found.score, abs=1e-3), found.text or "(empty)")
        for width, change, found in zip(widths, changed, best)]
    points = browser.execute_script(
        "return Array.from(document.querySelectorAll('#widths svg circle.point'),"
        " dot => [dot.dataset.width, dot.classList.contains('changed')]);")
    assert points == [[str(width), change] for width, change in zip(widths, changed)]
    changes = [str(width) for width, change in zip(widths, changed) if change]
    summary = text_of(browser, "widths-summary")
    if changes:
        assert summary.startswith("The best translation changes at width %s; its score goes from "
                                  "%.3f at width 1 to %.3f at width 8." % (
                                      ", ".join(changes), best[0].score, best[-1].score))
    else:
        assert summary.startswith("Every width from 1 to 8 finds the same translation.")
    assert text_of(browser, "status") == "1 decoder done."


def test_the_mbr_column_shows_its_candidates_and_their_utilities(browser, page_url, translator):
    wait = open_page(browser, page_url)
    choose_decoders(browser, "mbr")
    options = {"num_samples": 4, "seed": 3, "mbr_utility": "bleu"}
    for name, value in options.items():
        set_option(browser, name, value)
    translate_one(browser, wait, SENTENCE, ["mbr"])
    [expected] = translator.translate([SENTENCE], decoder="mbr", options=options)
    mbr = column(browser, "mbr")
    assert mbr.find_element(By.CLASS_NAME, "settings").text.startswith(
        "MBR over 4 samples \u00b7 length penalty ")
    assert column_hypotheses(browser, "mbr") == [(expected.text, pytest.approx(expected.score,
                                                                             abs=1e-3))]
    rows = browser.execute_script(
        "return Array.from(arguments[0].querySelectorAll('.mbr-candidates tbody tr'), row =>"
        " [row.className, ...Array.from(row.cells, cell => cell.textContent)]);", mbr)
    assert rows == [["candidate" + (" chosen" if rank == 0 else ""), str(rank + 1),
                     candidate.text or "(empty)", "%.1f" % candidate.expected_utility,
                     "%.3f" % candidate.score]
                    for rank, candidate in enumerate(expected.candidates)]
    likeliest = max(range(4), key=lambda rank: expected.candidates[rank].score)
    assert mbr.find_element(By.CLASS_NAME, "mbr-likeliest").text == (
        "It is also the candidate the model scores highest." if likeliest == 0 else
        "The model scores candidate %d highest: MBR traded model score for agreement."
        % (likeliest + 1))
    cells = browser.execute_script(
        "return Array.from(arguments[0].querySelectorAll('.utility-matrix tr'), row =>"
        " Array.from(row.querySelectorAll('td'), cell => cell.title)).filter(row => row.length);",
        mbr)
    order = [candidate.index for candidate in expected.candidates]
    assert cells == [["candidate %d against pseudo-reference %d: %.1f" % (
        rank + 1, column + 1, expected.utilities[row][order[column]])
        for column in range(4)] for rank, row in enumerate(order)]
    set_option(browser, "mbr_candidates", "beam")  # the beam's n-best, at the beam width typed
    translate_one(browser, wait, SENTENCE, ["mbr"])
    assert column(browser, "mbr").find_element(By.CLASS_NAME, "settings").text.startswith(
        "MBR over the n-best of beam 3 \u00b7 ")
    assert len(column(browser, "mbr").find_elements(By.CSS_SELECTOR, ".mbr-candidates tbody tr")) \
        == 3


LAB_EXAMPLES = [
    {"index": 6, "source": "forty two", "reference": "quarenta e dois",
     "kinds": ["search_error", "wider_beam_changes"], "note": "gnmt 0.6: beam 5 ..."},
    {"index": 2, "source": "one", "reference": "um", "kinds": ["reference_better"],
     "note": "beam 5 (score -1.000): x / reference (score -0.500)"},
]


def test_the_lab_s_examples_open_the_search_view(browser, translator, tmp_path):
    (tmp_path / "lab.json").write_text(json.dumps({"examples": LAB_EXAMPLES}), encoding="utf-8")
    with serving(translator, lab_dir=str(tmp_path)) as url:
        wait = open_page(browser, url)
        groups = browser.execute_script(
            "return Array.from(document.querySelectorAll('#lab-groups .lab-group'), group =>"
            " [group.dataset.kind, ...Array.from(group.querySelectorAll('button'),"
            " chip => chip.textContent)]);")
        assert groups == [["search_error", "forty two"], ["wider_beam_changes", "forty two"],
                          ["reference_better", "one"]]
        browser.find_element(By.CSS_SELECTOR,
                             '.lab-group[data-kind="search_error"] button').click()
        wait.until(expected_conditions.visibility_of_element_located(
            (By.CSS_SELECTOR, '#panels .search-panel[data-decoder="while_loop"]')))
        wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))
        assert browser.find_element(By.ID, "text").get_attribute("value") == "forty two"
        assert [column.get_attribute("data-decoder") for column in browser.find_elements(
            By.CSS_SELECTOR, "section.decoder")] == ["while_loop", "exact"]
        assert browser.find_element(By.ID, "widths").is_displayed(), "a wider beam: the chart"
        assert text_of(browser, "lab-note") == (
            "Decoding lab, test sentence 7: The beam misses the translation the model scores "
            "highest (a search error); A wider beam changes the translation. Reference: "
            "\u201cquarenta e dois\u201d. The lab's run: gnmt 0.6: beam 5 ....")


def test_the_chart_takes_one_sentence(browser, page_url):
    open_page(browser, page_url)
    browser.find_element(By.ID, "text").send_keys("one\ntwo")
    browser.find_element(By.ID, "chart").click()
    browser.find_element(By.ID, "translate").click()
    assert text_of(browser, "error") == "Chart beam widths takes one sentence; the text has 2 " \
        "non-blank lines. Keep one, or clear Chart beam widths."
    assert browser.find_elements(By.CSS_SELECTOR, "section.decoder") == []
