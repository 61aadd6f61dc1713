"""The explorer's page in a real headless Chromium (Selenium with Debian's chromium-driver).

Load the page, type a sentence, translate; the heatmaps have the sizes of the API's tensors,
the masked triangle is drawn masked, the beam table has the search's steps, a hovered cell
shows Eq. (1) with the trace's numbers, switching heads off changes the attention, the
history slider loads another checkpoint, and the console shows no error: in English and in
Chinese, where a CJK font must draw the labels (two different characters must not come out
as the same missing-glyph box). A full-page screenshot is saved in the test's tmp directory
(and in $AIAYN_SCREENSHOTS when set: that is how docs/img/explore-*.png were made).
Skipped with a reason when Chromium, its driver or Selenium is missing (`make test` installs
them through scripts/ensure-system-deps.sh and the `explore` extra).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.browser_support import ERRORS_PROBE, OVERFLOW_PROBE
from tests.explore_support import serve

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the explore extra)")
if not (CHROMIUM and DRIVER):
    pytest.skip("chromium and chromium-driver are not installed", allow_module_level=True)

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

LABELS = {
    "en": {"view-attention": "Attention, every layer and head", "view-beam": "Beam search"},
    "zh": {"view-attention": "注意力：每一层、每一个头", "view-beam": "束搜索"},
}
TEXT, REFERENCE = "the dog sees the car .", "der Hund sieht das Auto ."
HEAD = {"en": "head {}", "zh": "头 {}"}
TIP = {
    "en": {"weight": "softmax weight", "names": "layer 2 · head 3"},
    "zh": {"weight": "softmax 权重", "names": "第 2 层 · 头 3"},
}
# What the model card says of the toy run (150 steps, the average of 2 checkpoints, EN-DE).
CARD = {
    "en": ["150 steps", "the average of 2 checkpoints", "English → German", "trained with aiayn"],
    "zh": ["150 步", "2 个检查点的平均", "英语 → 德语", "用 aiayn 训练"],
}


@pytest.fixture(scope="module")
def server(explore_model):
    with serve(explore_model) as s:
        yield s


@pytest.fixture
def driver():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
        opts.add_argument(arg)
    opts.add_argument("--window-size=1280,1000")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(DRIVER), options=opts)
    d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": ERRORS_PROBE})
    yield d
    d.quit()


def wait(d, condition, timeout: float = 60):
    return WebDriverWait(d, timeout).until(lambda d: d.execute_script(condition))


def rendered(d) -> int:
    return int(d.execute_script("return Number(document.body.dataset.rendered || 0)"))


def canvas(d, name: str):
    return d.find_element(By.CSS_SELECTOR, f'canvas[data-map="{name}"]')


def pixel(d, name: str, row: int, col: int) -> list[int]:
    """The RGBA of the middle of cell (row, col) of a heatmap canvas."""
    return d.execute_script(
        """const c = document.querySelector(`canvas[data-map="${arguments[0]}"]`);
        const cw = c.width / Number(c.dataset.cols), ch = c.height / Number(c.dataset.rows);
        const x = Math.floor((arguments[2] + 0.5) * cw), y = Math.floor((arguments[1] + 0.5) * ch);
        return Array.from(c.getContext("2d").getImageData(x, y, 1, 1).data);""",
        name,
        row,
        col,
    )


def glyphs_differ(d) -> bool:
    """Two CJK characters drawn in the page's font: a missing font draws both as one box."""
    return d.execute_script(
        """const font = getComputedStyle(document.body).fontFamily;
        const draw = (ch) => { const c = document.createElement("canvas"); c.width = c.height = 40;
          const x = c.getContext("2d"); x.font = "32px " + font; x.fillText(ch, 2, 32);
          return c.toDataURL(); };
        return draw("注") !== draw("意") && draw("意") !== draw("力");"""
    )


def cjk_font() -> bool:
    import subprocess

    fc = shutil.which("fc-list")
    return bool(fc and subprocess.run([fc, ":lang=zh"], capture_output=True, text=True).stdout)


def full_screenshot(d, path: Path) -> None:
    height = d.execute_script("return document.documentElement.scrollHeight")
    d.set_window_size(1280, min(int(height) + 40, 9000))
    time.sleep(0.3)
    d.save_screenshot(str(path))
    d.set_window_size(1280, 1000)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_page_in_chromium(server, driver, lang, tmp_path) -> None:
    d = driver
    d.get(f"{server.url}/?lang={lang}")
    wait(d, "return document.body.dataset.ready === '1'")
    for section, label in LABELS[lang].items():
        assert label in d.find_element(By.CSS_SELECTOR, f"#{section} h2").text
    if lang == "zh":
        if not cjk_font():
            pytest.skip("no CJK font installed (scripts/ensure-system-deps.sh installs one)")
        assert glyphs_differ(d), "no CJK font draws the Chinese labels"
    # The page names the model it shows: its data, languages, training and kind.
    card = d.find_element(By.ID, "model-info").text
    for words in CARD[lang]:
        assert words in card, card
    assert "run/average.safetensors" in card
    examples = d.find_elements(By.CSS_SELECTOR, "#example option")
    assert len(examples) == 1 + len(server.get("/api/info")[1]["examples"])

    # The page opens on the run's first test sentence, translated.
    info = server.get("/api/info")[1]
    assert d.find_element(By.ID, "text").get_attribute("value") == info["examples"][0]["source"]
    _, first_api = server.post("/api/translate", {"text": info["examples"][0]["source"]})
    assert d.find_element(By.ID, "translation").text == first_api["output"]["text"]
    count = rendered(d)
    assert count >= 1

    d.find_element(By.ID, "text").clear()
    d.find_element(By.ID, "text").send_keys(TEXT)
    d.find_element(By.ID, "reference").clear()
    d.find_element(By.ID, "reference").send_keys(REFERENCE)
    d.find_element(By.ID, "translate").click()
    wait(d, f"return Number(document.body.dataset.rendered || 0) > {count}")
    _, api = server.post("/api/translate", {"text": TEXT, "reference": REFERENCE})
    assert d.find_element(By.ID, "translation").text == api["output"]["text"]
    S, T = len(api["source"]["ids"]), len(api["output"]["ids"])
    H, N = 4, 2
    sizes = {"encoder": (S, S), "decoder_self": (T, T), "decoder_cross": (T, S)}
    # Layers and heads are named from 1, as the note numbers them: map "decoder_cross-2-3" is
    # layer 2, head 3, the API's attention["decoder_cross"][1]["weights"][2].
    for stack, (rows, cols) in sizes.items():
        for layer in range(1, N + 1):
            for head in [*range(1, H + 1), "mean"]:
                c = canvas(d, f"{stack}-{layer}-{head}")
                assert (int(c.get_attribute("data-rows")), int(c.get_attribute("data-cols"))) == (
                    rows,
                    cols,
                )
                assert c.size["width"] > 0
    assert len(d.find_elements(By.CSS_SELECTOR, "canvas[data-map]")) == 3 * N * (H + 1)
    # Every small map carries its tokens: the queries beside head 1's rows, the keys under
    # each map's columns (in the order of the API's pieces).
    queries, keys = ["<s>", *api["output"]["pieces"][:-1]], api["source"]["pieces"]
    for name, rows in (("decoder_cross-2-1", queries), ("decoder_cross-2-4", None)):
        box = canvas(d, name).find_element(By.XPATH, "..")
        got = [
            e.get_attribute("textContent")
            for e in box.find_elements(By.CSS_SELECTOR, ".axis-rows div")
        ]
        assert got == (rows or [])
        got = [
            e.get_attribute("textContent")
            for e in box.find_elements(By.CSS_SELECTOR, ".axis-cols div")
        ]
        assert got == keys
    # At 1280 pixels, with a test sentence longer than the panel is wide in the list of the
    # run's sentences, nothing runs past its panel's edge.
    d.execute_script(
        """const o = document.createElement("option");
        o.textContent = "the dog sees the car and the man finds the ball . ".repeat(6);
        document.getElementById("example").append(o);"""
    )
    assert d.execute_script(OVERFLOW_PROBE) == []
    xe = d.find_element(By.ID, "map-xe")
    assert (int(xe.get_attribute("data-rows")), int(xe.get_attribute("data-cols"))) == (S, 32)
    # The decoder's masked upper triangle is drawn masked (grey), the diagonal is not.
    assert pixel(d, "decoder_self-1-1", 0, T - 1)[:3] == [238, 238, 238]
    assert pixel(d, "decoder_self-1-1", T - 1, 0)[:3] != [238, 238, 238]

    # The beam table: one block per step of the search, with its candidates.
    steps = d.find_elements(By.CSS_SELECTOR, "#beam-steps .step")
    assert [int(s.get_attribute("data-t")) for s in steps] == [s["t"] for s in api["beam"]]
    for block, step in zip(steps, api["beam"], strict=True):
        rows = block.find_elements(By.CSS_SELECTOR, "table.beam tr")
        assert len(rows) == 1 + len(step["candidates"])
    # The last step lists every finished hypothesis, the translation first.
    so_far = steps[-1].find_element(By.CSS_SELECTOR, ".finished-so-far").text
    assert re.split(r": |：", so_far, maxsplit=1)[1].startswith(
        " ".join(api["output"]["pieces"]) + " ("
    )
    n_finished = sum(c["status"] == "finished" for s in api["beam"] for c in s["candidates"])
    assert so_far.count(" | ") == n_finished - 1
    # The output distribution: one row per position, the reference's loss below.
    dist = d.find_elements(By.CSS_SELECTOR, "#dist-table tr")
    assert len(dist) == 1 + max(T, len(api["reference"]["ids"]))
    assert f"{api['reference']['loss_sum']:.4f}" in d.find_element(By.ID, "loss").text

    # Hovering a cross-attention cell shows Eq. (1) with the library's weight.
    c = canvas(d, "decoder_cross-2-3")
    d.execute_script(
        """const c = arguments[0], b = c.getBoundingClientRect();
        const x = b.left + 1.5 * b.width / Number(c.dataset.cols);
        const y = b.top + 0.5 * b.height / Number(c.dataset.rows);
        c.dispatchEvent(new MouseEvent("mousemove", {clientX: x, clientY: y, bubbles: true}));""",
        c,
    )
    tip = d.find_element(By.ID, "tooltip").get_attribute("textContent")
    weight = api["attention"]["decoder_cross"][1]["weights"][2][0][1]
    assert f"{TIP[lang]['weight']} = {weight:.5f}" in tip
    assert "q·k" in tip
    assert TIP[lang]["names"] in tip  # the map's layer and head, counted from 1

    # The training history: a slider over the run's checkpoints, loaded on demand.
    slider = d.find_element(By.ID, "history-slider")
    assert slider.get_attribute("max") == "2"
    _, first = server.post("/api/translate", {"text": TEXT, "checkpoint": "step_00000050"})
    d.execute_script(
        "arguments[0].value = 0; arguments[0].dispatchEvent(new Event('input'));", slider
    )
    wait(d, "return document.getElementById('history-name').textContent === 'step_00000050'")
    expected = first["output"]["text"]
    WebDriverWait(d, 60).until(
        lambda d: d.find_element(By.ID, "history-translation").text.endswith(expected)
    )

    full_screenshot(d, tmp_path / f"explore-{lang}.png")
    if os.environ.get("AIAYN_SCREENSHOTS"):
        out = Path(os.environ["AIAYN_SCREENSHOTS"])
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / f"explore-{lang}.png", out / f"explore-{lang}.png")

    # Experiments (off by default): switch off every head of the encoder's layer 1.
    assert not d.find_element(By.ID, "experiments").is_displayed()
    before = d.execute_script(
        "return document.querySelector('canvas[data-map=\"encoder-2-1\"]').toDataURL()"
    )
    d.find_element(By.ID, "exp-on").click()
    buttons = d.find_elements(By.CSS_SELECTOR, 'button[data-head^="encoder-1-"]')
    assert [b.text for b in buttons] == [HEAD[lang].format(h) for h in range(1, H + 1)]
    for head in range(1, H + 1):
        d.find_element(By.CSS_SELECTOR, f'button[data-head="encoder-1-{head}"]').click()
    count = rendered(d)
    d.find_element(By.ID, "exp-run").click()
    wait(d, f"return Number(document.body.dataset.rendered || 0) > {count}")
    after = d.execute_script(
        "return document.querySelector('canvas[data-map=\"encoder-2-1\"]').toDataURL()"
    )
    assert after != before, "switching heads off changed nothing on the page"
    assert d.find_element(By.ID, "exp-result").text
    # The erratum (sqrt(d_model) for sqrt(d_k)): the summary shows the entropy it changes.
    for head in range(1, H + 1):  # heads back on
        d.find_element(By.CSS_SELECTOR, f'button[data-head="encoder-1-{head}"]').click()
    d.find_element(By.ID, "erratum").click()
    count = rendered(d)
    d.find_element(By.ID, "exp-run").click()
    wait(d, f"return Number(document.body.dataset.rendered || 0) > {count}")
    result = d.find_element(By.ID, "exp-result")
    assert "→" in result.text
    before_h = float(result.get_attribute("data-entropy-before"))
    after_h = float(result.get_attribute("data-entropy-after"))
    assert after_h > before_h  # dividing by the larger sqrt(d_model) flattens the attention

    # No layer or head is numbered from 0 anywhere the learner reads (labels, buttons, tips).
    seen = d.execute_script("return document.body.innerText")
    assert not re.search(r"\b(layer|head) 0\b|头 0|第 0 层", seen)
    if lang == "zh":
        assert english_words(d) == []

    errors = d.execute_script("return window.__errors")
    severe = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    assert severe == []
    # Everything came from this server: no CDN, no web font.
    resources = d.execute_script(
        "return performance.getEntriesByType('resource').map((e) => e.name)"
    )
    assert all(r.startswith((server.url, "data:")) for r in resources), resources


# The ASCII words a Chinese page may show: formulas, identifiers, names. A word with a digit,
# an underscore or a caret (d_model, W^O, y_t, Multi30k) and a single letter (S, T, Q) are
# formula symbols and pass; data (sentences, BPE pieces, file names) is marked translate="no".
FORMULA_WORDS = {
    "aiayn", "Transformer", "BPE", "PE", "softmax", "log", "lp", "ids", "BLEU", "Lq", "Lk",
    "WMT", "Tatoeba", "LibreOffice", "Debian", "import", "hf",
}  # fmt: skip

ENGLISH_WORDS = """
const out = [];
const skip = "[translate=no], code, script, style, canvas, svg, select, textarea, #tooltip";
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const host = n.parentElement;
  if (!host || host.closest(skip) || !host.getClientRects().length) continue;
  if (getComputedStyle(host).visibility === "hidden") continue;
  for (const w of n.textContent.match(/[A-Za-z][A-Za-z0-9_^]*/g) || []) out.push(w);
}
return out;
"""


def english_words(d) -> list[str]:
    """The visible words of the page in Latin letters that are neither formula nor data."""
    words = d.execute_script(ENGLISH_WORDS)
    return sorted({w for w in words if len(w) > 1 and not re.search(r"[0-9_^]", w)} - FORMULA_WORDS)


@pytest.fixture(scope="module")
def mute_server(explore_model, tmp_path_factory):
    """A model stopped after 20 updates, before it learned to write: every translation empty."""
    from tests.explore_support import make_mute

    with serve(make_mute(explore_model, tmp_path_factory.mktemp("mute"))) as s:
        yield s


NEED_TEXT = {"en": "Type a sentence to translate first.", "zh": "请先输入要翻译的句子。"}
EMPTY = {
    "en": ["empty translation", "</s>", "After 20 training steps", "train longer"],
    "zh": ["译文是空的", "</s>", "只训练了 20 步", "再多训练"],
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_empty_translation_is_explained(mute_server, driver, lang, tmp_path) -> None:
    """The learner's case: a model trained a few minutes translates every sentence as an empty
    line; the page says so in words, and why, beside the model's training steps."""
    d = driver
    d.get(f"{mute_server.url}/?lang={lang}")
    wait(d, "return document.body.dataset.ready === '1'")
    assert not d.find_element(By.ID, "empty-note").is_displayed()
    card = d.find_element(By.ID, "model-steps").text
    assert card == {"en": "20 steps", "zh": "20 步"}[lang]
    d.find_element(By.ID, "translate").click()  # nothing typed yet: said in the page's language
    assert d.find_element(By.ID, "error").text == NEED_TEXT[lang]
    count = rendered(d)
    d.find_element(By.ID, "text").send_keys(TEXT)
    d.find_element(By.ID, "translate").click()
    wait(d, f"return Number(document.body.dataset.rendered || 0) > {count}")
    assert not d.find_element(By.ID, "error").is_displayed()
    assert d.find_element(By.ID, "translation").text == ""
    note = d.find_element(By.ID, "empty-note")
    assert note.is_displayed()
    for words in EMPTY[lang]:
        assert words in note.text, note.text
    if lang == "zh":
        assert english_words(d) == []
    full_screenshot(d, tmp_path / f"explore-empty-{lang}.png")
    if os.environ.get("AIAYN_SCREENSHOTS"):
        out = Path(os.environ["AIAYN_SCREENSHOTS"])
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / f"explore-empty-{lang}.png", out / f"explore-empty-{lang}.png")
    assert d.execute_script("return window.__errors") == []
