"""The page's training panel and a model switch, in real headless Chromium against serve.py.

Training is played by the test: it writes the status file (the trainer's contract, docs/API.md
"HTTP API", GET /v1/training) and copies checkpoints of the tiny model in as training would.
"""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from tests.test_serve_browser import browser, chromium  # noqa: F401 (the fixtures)
from tests.test_serve_process import ServerProcess
from tests.test_serve_reload import (WATCH_S, copied, copy_model_files, install_best,
                                     install_latest, write_status)

WAIT_S = 60
SOURCES = ("twenty one", "the first of May", "Monday")


def evaluation(step, bleu, translations):
    return {"step": step, "loss": 40.0 / bleu, "dev_bleu": bleu, "dev_perplexity": 100.0 / bleu,
            "examples": [{"source": source, "translation": translation}
                         for source, translation in zip(SOURCES, translations)]}


def text(browser, element_id):
    return browser.find_element(By.ID, element_id).text


def translate(browser, wait, sentence):
    """Translates `sentence` with while_loop alone; returns its column's settings line."""
    for box in browser.find_elements(By.CSS_SELECTOR, "#decoders input"):
        if box.is_selected() != (box.get_attribute("value") == "while_loop"):
            box.click()
    box = browser.find_element(By.ID, "text")
    box.clear()
    box.send_keys(sentence)
    browser.find_element(By.ID, "translate").click()
    wait.until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, 'section.decoder[data-decoder="while_loop"] .elapsed')))
    wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))
    return browser.find_element(By.CSS_SELECTOR, "section.decoder .settings").text


def charts(browser):
    """{chart key: [(step, cy) of each point]} as drawn."""
    return browser.execute_script("""
        const charts = {};
        for (const figure of document.querySelectorAll('#training-charts figure')) {
          charts[figure.dataset.key] = [...figure.querySelectorAll('circle.point')].map(
            (dot) => [Number(dot.dataset.step), Number(dot.getAttribute('cy'))]);
        }
        return charts;""")


def examples_table(browser):
    """The examples table as rows of cell texts (the header first), and the changed cells."""
    return browser.execute_script("""
        const table = document.querySelector('#training-examples table');
        return [[...table.rows].map((row) => [...row.cells].map((cell) => cell.textContent)),
                [...table.querySelectorAll('td.changed')].map((cell) => cell.textContent)];""")


@pytest.fixture
def server(tiny_model_dir, tmp_path):
    model_dir = str(tmp_path / "model")
    copy_model_files(tiny_model_dir, model_dir)
    write_status(model_dir, step=4, steps_per_second=2.0)
    process = ServerProcess(model_dir, str(tmp_path / "serve.log"), watch_interval_s=WATCH_S)
    process.model_dir = model_dir
    yield process
    process.stop()


def test_the_training_panel_follows_training_and_the_page_switches_models(
        browser, server, tiny_model_dir):  # noqa: F811 (the fixture)
    wait = WebDriverWait(browser, WAIT_S)
    model_dir = server.model_dir
    browser.get("http://127.0.0.1:%d/" % server.port)
    # Before the first checkpoint: what training does and when the first model comes, no error.
    wait.until(lambda _: "Training has started (step 4 of 400)" in text(browser, "model"))
    assert "the first model will be ready in about 3 s (step 10)" in text(browser, "model")
    wait.until(lambda _: browser.find_element(By.ID, "training").is_displayed())
    assert text(browser, "training-summary").startswith("Training has started: step 4;")
    assert text(browser, "training-steps") == "step 4 of 400"
    assert not browser.find_element(By.ID, "error").is_displayed()
    assert not browser.find_element(By.ID, "translate").is_enabled()

    # The first checkpoint and its evaluation: the page translates with it.
    install_latest(tiny_model_dir, model_dir, 380)
    first = evaluation(380, 12.0, ["vinte", "maio", "segunda"])
    write_status(model_dir, step=385, steps_per_second=2.0, eta_seconds=7.5, evaluations=[first])
    wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))
    wait.until(lambda _: text(browser, "training-summary") ==
               "The model is still learning: step 385, dev BLEU 12.0 (serving step 380).")
    assert text(browser, "training-steps") == "step 385 of 400 \u00b7 about 8 s left"
    assert {key: [step for step, _ in points] for key, points in charts(browser).items()} == {
        "loss": [380], "dev_bleu": [380], "dev_perplexity": [380]}
    assert "step 380" in translate(browser, wait, "twenty one")

    # A better checkpoint: the page's next translation comes from it, the panel says so.
    install_best(model_dir, copied(tiny_model_dir, 390))
    second = evaluation(390, 99.95, ["vinte e um", "maio", "segunda-feira"])  # not "100.0"
    write_status(model_dir, step=395, steps_per_second=2.0, eta_seconds=2.5,
                 evaluations=[first, second])
    wait.until(lambda _: text(browser, "training-summary") ==
               "The model is still learning: step 395, dev BLEU 99.95 (serving step 390).")
    wait.until(lambda _: "at step 390" in text(browser, "model"))
    drawn = charts(browser)
    assert [step for step, _ in drawn["dev_bleu"]] == [380, 390]
    assert drawn["dev_bleu"][1][1] < drawn["dev_bleu"][0][1], "a higher BLEU is drawn higher"
    assert drawn["loss"][1][1] > drawn["loss"][0][1], "a lower loss is drawn lower"
    assert browser.find_element(By.CSS_SELECTOR, 'figure[data-key="dev_bleu"] figcaption').text \
        == "Dev BLEU 99.95 at step 390"
    rows, changed = examples_table(browser)
    assert rows == [["Source", "step 380 \u00b7 BLEU 12.0", "step 390 \u00b7 BLEU 99.95"],
                    ["twenty one", "vinte", "vinte e um"], ["the first of May", "maio", "maio"],
                    ["Monday", "segunda", "segunda-feira"]]
    assert changed == ["vinte e um", "segunda-feira"]
    assert "step 390" in translate(browser, wait, "twenty one")

    # Training ends: the panel says how and what is served.
    write_status(model_dir, running=False, step=400, stopped="early_stopping",
                 evaluations=[first, second])
    wait.until(lambda _: text(browser, "training-summary") ==
               "Training finished at step 400: stopped early, as dev BLEU stopped improving; "
               "serving the best checkpoint, step 390.")
    assert text(browser, "training-steps") == "step 400 of 400"
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"
              and "status of 503" not in entry["message"]]  # /v1/info before the first model
    assert severe == [], "the page logged errors: %s" % severe
