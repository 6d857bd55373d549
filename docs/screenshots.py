"""Takes the README's screenshots with headless Chromium: the page's search view and training
panel, and TensorBoard.

    .venv/bin/python docs/screenshots.py --model_dir runs/default [--logdir D] [--graphs_logdir G]
        [--training_config C] [--training_evaluations N] [--out docs/img]

Serves MODEL_DIR with serve.py, and TensorBoard over LOGDIR (default: MODEL_DIR; its graph tab over
GRAPHS_LOGDIR, e.g. where the search graphs were written, default: LOGDIR), all on 127.0.0.1 only;
trains TRAINING_CONFIG (default: configs/default.yaml) into a scratch model directory while
serve.py serves it; and writes:
  page-search.png        the page's "Show the search" view: both beam searches' trees and attention
  page-lab.png           the page's decoding options, the sample and exact columns beside the
                         beam search, "Try your own translation" and the beam-width chart
  training-panel.png     the page's training panel mid-training, after N evaluations (default 3)
  tensorboard-graphs.png, tensorboard-images.png, tensorboard-histograms.png
                         TensorBoard's graph, images (attention heatmaps) and histograms tabs

Needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver) and
selenium (requirements-dev.txt). Stops every process it started, whatever happens.
"""

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--hide-scrollbars", "--force-device-scale-factor=1")
START_TIMEOUT_S = 600  # serve.py loads TensorFlow and the model; TensorBoard reads the events
TRAINING_TIMEOUT_S = 3600  # preparing the data and training up to the evaluations asked for
# TensorBoard's tabs, by the name in its URL, and the file each goes to.
TENSORBOARD_TABS = (("graphs", "tensorboard-graphs.png"), ("images", "tensorboard-images.png"),
                    ("histograms", "tensorboard-histograms.png"))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(url, process, timeout_s=START_TIMEOUT_S):
    """Waits until `url` answers 200; raises if `process` exits first or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("%s exited with %s before %s answered"
                               % (process.args[1], process.returncode, url))
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(1)
    raise RuntimeError("%s did not answer within %d s" % (url, timeout_s))


@contextlib.contextmanager
def started(command, ready_url, log_path):
    """Runs `command` (output to `log_path`) until the block ends; yields once `ready_url` answers."""
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=REPOSITORY, stdout=log, stderr=subprocess.STDOUT)
        try:
            try:
                wait_for(ready_url, process)
            except RuntimeError:
                log.flush()
                with open(log_path) as written:
                    sys.stderr.write("".join(written.readlines()[-20:]))
                raise
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def chromium(width, height, profile_dir):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument("--window-size=%d,%d" % (width, height))
    options.add_argument("--user-data-dir=%s" % profile_dir)
    # An explicit driver path: Selenium Manager is never asked to download anything.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def translate_and_wait(driver, wait):
    """Clicks Translate; done when the page is idle again with something in the status line."""
    driver.find_element(By.ID, "translate").click()
    wait.until(lambda _: driver.find_element(By.ID, "translate").is_enabled() and
               driver.find_element(By.ID, "status").text.endswith("."))
    error = driver.find_element(By.ID, "error")
    if error.is_displayed():
        raise RuntimeError("the page shows an error: " + error.text)


def page_screenshot(driver, url, text, beam_width, n_best, path):
    """Shows the search for `text` with both beam searches; saves the search view."""
    wait = WebDriverWait(driver, START_TIMEOUT_S)
    driver.get(url)
    wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))
    if not driver.find_element(By.ID, "trace").is_enabled():
        raise RuntimeError("the server does not trace (/v1/info has no \"tracing\": true)")
    for box in driver.find_elements(By.CSS_SELECTOR, "#decoders input"):
        if box.is_selected() != (box.get_attribute("value") in ("while_loop", "unrolled")):
            box.click()
    driver.find_element(By.ID, "text").send_keys(text)
    for field, value in (("beam_width", beam_width), ("n_best", n_best)):
        driver.find_element(By.ID, field).clear()
        driver.find_element(By.ID, field).send_keys(str(value))
    driver.find_element(By.ID, "trace").click()
    translate_and_wait(driver, wait)
    # A box of the best path focused: its path is traced and the readout says what it holds.
    driver.execute_script("document.querySelector('.search-panel g.node[tabindex=\"0\"]').focus();")
    search = driver.find_element(By.ID, "search")
    # The whole view in the shot: the window as tall as the page.
    height = driver.execute_script("return document.documentElement.scrollHeight;")
    driver.set_window_size(driver.get_window_size()["width"], height + 200)
    search.screenshot(path)


def lab_screenshot(driver, url, text, own_translation, path):
    """Translates `text` with while_loop, sample and exact, charts the beam widths, scores
    `own_translation`; saves the page from the options to the chart."""
    wait = WebDriverWait(driver, START_TIMEOUT_S)
    driver.get(url)
    wait.until(expected_conditions.element_to_be_clickable((By.ID, "translate")))
    for box in driver.find_elements(By.CSS_SELECTOR, "#decoders input"):
        if box.is_selected() != (box.get_attribute("value") in ("while_loop", "sample", "exact")):
            box.click()
    driver.find_element(By.ID, "text").send_keys(text)
    driver.find_element(By.ID, "chart").click()
    translate_and_wait(driver, wait)
    driver.find_element(By.ID, "own-text").send_keys(own_translation)
    driver.find_element(By.ID, "own-score").click()
    wait.until(expected_conditions.visibility_of_element_located((By.ID, "own-meaning")))
    # The training panel has a screenshot of its own.
    driver.execute_script("document.getElementById('training').style.display = 'none';")
    height = driver.execute_script("return document.documentElement.scrollHeight;")
    driver.set_window_size(driver.get_window_size()["width"], height + 200)
    driver.find_element(By.TAG_NAME, "main").screenshot(path)


def training_screenshot(config, evaluations, path, scratch):
    """Trains `config` into a scratch model directory while serve.py serves it; saves the page's
    training panel once it shows `evaluations` evaluations and a model is served."""
    model_dir = os.path.join(scratch, "training-model")
    port = free_port()
    url = "http://127.0.0.1:%d/" % port
    with open(os.path.join(scratch, "train.log"), "w") as log:
        trainer = subprocess.Popen([sys.executable, "train.py", "--config", config, "--model_dir",
                                    model_dir], cwd=REPOSITORY, stdout=log, stderr=subprocess.STDOUT)
    try:
        with started([sys.executable, "serve.py", "--model_dir", model_dir, "--host", "127.0.0.1",
                      "--port", str(port), "--warm_up_source_tokens", "0"],
                     url + "v1/training", os.path.join(scratch, "serve-training.log")), \
                chromium(1280, 900, os.path.join(scratch, "training-profile")) as driver:
            driver.get(url)

            def mid_training(_):
                if trainer.poll() is not None:
                    raise RuntimeError("train.py ended (exit %d) before %d evaluations; its log: %s"
                                       % (trainer.returncode, evaluations, log.name))
                shown = driver.find_elements(By.CSS_SELECTOR, "#training-examples thead th")
                return driver.find_element(By.ID, "translate").is_enabled() and \
                    len(shown) > evaluations  # a column per evaluation after the sources'
            WebDriverWait(driver, TRAINING_TIMEOUT_S, poll_frequency=5).until(mid_training)
            panel = driver.find_element(By.ID, "training")
            driver.set_window_size(1280, panel.size["height"] + 400)
            panel.screenshot(path)
    finally:
        trainer.terminate()
        trainer.wait(timeout=60)


def tensorboard_screenshot(driver, url, tab, path, settle_s):
    """Opens TensorBoard's `tab` and saves the window once it has drawn."""
    driver.get("%s/#%s" % (url, tab))
    # TensorBoard draws asynchronously inside its components: wait for its data requests to end.
    WebDriverWait(driver, START_TIMEOUT_S).until(
        lambda _: driver.execute_script("return document.readyState") == "complete")
    time.sleep(settle_s)
    if tab == "images":
        # Larger heatmaps: TensorBoard's "show actual image size" option, where it has one.
        driver.execute_script("""
          for (const box of document.querySelectorAll('*')) {
            const root = box.shadowRoot || box;
            for (const check of root.querySelectorAll('mat-checkbox, input[type=checkbox]')) {
              const text = check.textContent || check.getAttribute('aria-label') || '';
              if (/actual image size/i.test(text)) check.click();
            }
          }""")
        time.sleep(2)
    driver.save_screenshot(path)


def tensorboard_screenshots(logdir, shots, out, settle_s, scratch):
    """Serves `logdir` with TensorBoard; saves each (tab, file name) of `shots` it has data for."""
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    tensorboard = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    with started([tensorboard, "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port)],
                 url + "/data/runs", os.path.join(scratch, "tensorboard-%d.log" % port)), \
            chromium(1400, 1000, os.path.join(scratch, "tensorboard-profile-%d" % port)) as driver:
        with urllib.request.urlopen(url + "/data/plugins_listing", timeout=30) as response:
            active = {name for name, plugin in json.load(response).items() if plugin.get("enabled")}
        for tab, name in shots:
            if tab not in active:
                print("TensorBoard has no %s in %s: skipped %s" % (tab, logdir, name),
                      file=sys.stderr)
                continue
            path = os.path.join(out, name)
            tensorboard_screenshot(driver, url, tab, path, settle_s)
            print("wrote", path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True,
                        help="a trained model directory, served by serve.py")
    parser.add_argument("--logdir", help="TensorBoard's log directory (default: MODEL_DIR)")
    parser.add_argument("--graphs_logdir",
                        help="the log directory of the graph tab (default: LOGDIR)")
    parser.add_argument("--out", default=os.path.join(REPOSITORY, "docs", "img"),
                        help="where the PNGs go")
    parser.add_argument("--text", default="the sixty-third door",
                        help="the sentence whose search the page shows")
    parser.add_argument("--beam_width", type=int, default=4)
    parser.add_argument("--n_best", type=int, default=2)
    parser.add_argument("--lab_text", default="I paid three hundred and five euros on Monday",
                        help="the sentence of the lab's screenshot (exact search, beam widths)")
    parser.add_argument("--own_translation",
                        default="Eu paguei trezentos e cinco euros na segunda-feira.",
                        help="the translation typed into 'Try your own translation'")
    parser.add_argument("--settle_s", type=float, default=8.0,
                        help="seconds TensorBoard is given to draw a tab after it loads")
    parser.add_argument("--training_config", default=os.path.join("configs", "default.yaml"),
                        help="the config trained for the training panel's screenshot")
    parser.add_argument("--training_evaluations", type=int, default=3,
                        help="the evaluations the training panel shows in its screenshot")
    parser.add_argument("--skip", choices=("page", "lab", "training", "tensorboard"),
                        action="append",
                        default=[], help="leave out these screenshots")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="screenshots-") as scratch:
        if "page" not in args.skip or "lab" not in args.skip:
            port = free_port()
            url = "http://127.0.0.1:%d/" % port
            with started([python, "serve.py", "--model_dir", args.model_dir, "--host", "127.0.0.1",
                          "--port", str(port), "--warm_up_source_tokens", "0"],
                         url + "healthz", os.path.join(scratch, "serve.log")), \
                    chromium(1280, 900, os.path.join(scratch, "page-profile")) as driver:
                if "page" not in args.skip:
                    path = os.path.join(args.out, "page-search.png")
                    page_screenshot(driver, url, args.text, args.beam_width, args.n_best, path)
                    print("wrote", path)
                if "lab" not in args.skip:
                    path = os.path.join(args.out, "page-lab.png")
                    lab_screenshot(driver, url, args.lab_text, args.own_translation, path)
                    print("wrote", path)
        if "training" not in args.skip:
            path = os.path.join(args.out, "training-panel.png")
            training_screenshot(args.training_config, args.training_evaluations, path, scratch)
            print("wrote", path)
        if "tensorboard" not in args.skip:
            logdir = args.logdir or args.model_dir
            graphs_logdir = args.graphs_logdir or logdir
            tabs = [(graphs_logdir, TENSORBOARD_TABS[:1]), (logdir, TENSORBOARD_TABS[1:])]
            if graphs_logdir == logdir:
                tabs = [(logdir, TENSORBOARD_TABS)]
            for directory, shots in tabs:
                tensorboard_screenshots(directory, shots, args.out, args.settle_s, scratch)


if __name__ == "__main__":
    main()
