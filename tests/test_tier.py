"""Tier behaviour: paths, reasons, bad input, state safety, thread safety."""

import json
import threading

import numpy as np
import pytest

import toktier
from toktier import SessionTokenizerMismatchError, Tier, UnknownSessionError
from toktier.errors import InvalidTextError
from toktier.families import BYTE_LEVEL_FAMILIES
from toktier.tier import common_prefix, common_suffix

from .conftest import REPAIRABLE

PROSE = "The quick brown fox jumps over the lazy dog; it's 2026 and the pipeline runs. " * 40


def full_route(tier):
    """The route a full encode takes on this CI machine (no GPU)."""
    return "reference" if tier.engine.name == "reference" else "cpu"


def _check(tier, session, text, result):
    tok = tier.tokenizer
    assert result.ids.dtype == np.uint32
    assert result.ids.tolist() == tok.reference(text)
    _, starts, ends = tier.session_records(session)
    assert (
        list(zip(starts.tolist(), ends.tolist(), strict=True))
        == tok.reference_encoding(text).offsets
    )


@pytest.mark.parametrize("name", REPAIRABLE)
def test_append_and_encode_paths(name):
    tier = Tier(name)
    r = tier.encode(PROSE, session="s")
    assert r.path == full_route(tier) and "miss" in r.reason
    text = PROSE
    for delta in [
        "pipe",
        "line",
        " 12",
        "345",
        "\r\n",
        "don",
        "'t",
        " <|im_",
        "start|>",
        "é",
        "\u0301x",
    ]:
        text += delta
        r = tier.append("s", delta)
        assert r.path == "repair", r.reason
        _check(tier, "s", text, r)
    text += " and the front end resends everything"
    r = tier.encode(text, session="s")
    assert r.path == "repair" and r.reason == "first-window splice"
    _check(tier, "s", text, r)
    st = tier.stats()
    assert (
        st["hits"] == 12 and st["misses"] == 1 and st["first_window"] >= 1 and st["fallbacks"] == 0
    )


@pytest.mark.parametrize("name", ["llama3", "qwen3", "gpt-oss", "bert-uncased"])
def test_mid_context_edits(name):
    tier = Tier(name)
    text = PROSE
    tier.encode(text, session="e")
    for pos, cut, insert in [
        (1500, 10, "EDITED 123"),
        (40, 0, "x"),
        (len(text) - 5, 5, ""),
        (800, 300, ""),
    ]:
        text = text[:pos] + insert + text[pos + cut :]
        r = tier.encode(text, session="e")
        assert r.path == "repair", r.reason
        _check(tier, "e", text, r)
    assert tier.stats()["edits"] == 4


@pytest.mark.parametrize("name", toktier.known())
def test_default_engine_is_the_certified_one_where_it_applies(name):
    tier = Tier(name)
    family = tier.tokenizer.family
    own = {"sentencepiece": "numba-cpu-sentencepiece", "wordpiece": "numba-cpu-wordpiece"}
    expected = own.get(family, "numba-cpu" if family in BYTE_LEVEL_FAMILIES else "reference")
    assert tier.engine.name == expected
    assert tier.encode(PROSE).path == ("reference" if expected == "reference" else "cpu")


@pytest.mark.parametrize("name", ["mistral-sp-v1", "mistral-sp-v3"])
@pytest.mark.parametrize("impl", ["compiled", "python"])
def test_sentencepiece_tokenizers_are_repaired_exactly(name, impl):
    """SentencePiece BPE: engine windows, the vocabulary's word-start certificate.

    The appends include what makes SentencePiece different: "▁" typed by the user (the
    same as a space after normalization), runs of spaces ("▁▁" tokens), byte fallback
    (an emoji, a private-use character), and, in v3, a control literal followed by a
    space: the segment after it gets its own prepended "▁", whose record shares its start
    with the space's token (two records at one start, different ends).
    """
    tier = Tier(name, verify_rate=0, repair_impl=impl)
    tok = tier.tokenizer
    text = PROSE
    r = tier.encode(text, session="s")
    assert r.path == "cpu" and r.ids.tolist() == tok.reference(text)
    for delta in (" and more", "▁x ▁", "   spaces", " 😀\ue000 ok", " [INST] hi", "Привет мир ",
                  "[/INST]", " tail"):  # fmt: skip
        text += delta
        r = tier.append("s", delta)
        assert r.path == "repair", r.reason
        assert r.ids.tolist() == tok.reference(text), delta
    assert tier.stats()["fallbacks"] == 0
    # an edit in the middle: the full-text API finds the change and repairs around it
    edited = text[:500] + " inserted ▁words " + text[500:]
    r = tier.encode(edited, session="s")
    assert r.path == "repair" and r.ids.tolist() == tok.reference(edited)


def test_sentencepiece_vocabulary_without_the_certificate_is_not_repaired():
    """A vocabulary entry with "▁" after another character voids the word-start boundary."""
    from toktier.families import classify

    doc = json.loads(toktier.load("mistral-sp-v1").path.read_text(encoding="utf-8"))
    assert classify(doc) == ("sentencepiece", "")
    doc["model"]["vocab"]["ab\u2581c"] = len(doc["model"]["vocab"])
    family, why = classify(doc)
    assert family == "unsupported" and "ab\u2581c" in why
    doc["normalizer"]["normalizers"].reverse()  # Replace, then Prepend: not the shape we certify
    del doc["model"]["vocab"]["ab\u2581c"]
    assert classify(doc)[0] == "unsupported"


def test_sentencepiece_byte_fallback_characters_are_boundaries_only_when_bytes_never_merge():
    from toktier.families import stability

    doc = json.loads(toktier.load("mistral-sp-v1").path.read_text(encoding="utf-8"))
    fb = stability.byte_fallback_chars(doc)
    assert fb[ord("\n")] and fb[ord("\t")] and fb[0xE000]  # not entries: byte tokens
    assert not fb[ord("a")] and not fb[ord(" ")] and not fb[0x2581]
    names = stability.rules("sentencepiece").class_names
    cmap = stability.class_map_for(toktier.load("mistral-sp-v1"))
    assert [names[cmap[ord(c)]] for c in "a\n ▁"] == ["OTHER", "BYTES", "SPACE", "SPACE"]
    doc["model"]["merges"].append(["<0x0A>", "<0x0A>"])  # bytes that merge: no BYTES class
    assert not stability.byte_fallback_chars(doc).any()
    doc["model"]["merges"].pop()
    del doc["model"]["vocab"]["<0xFF>"]  # a missing byte is <unk>, and unknowns fuse
    assert not stability.byte_fallback_chars(doc).any()


def test_stateless_and_unsupported():
    tier = Tier("llama3")
    r = tier.encode("hello")
    assert r.path == full_route(tier) and r.reason.startswith("no session")
    # an unsupported tokenizer is always encoded in full, and says why
    import json

    doc = json.loads(toktier.load("llama3").path.read_text())
    doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\p{L}+|\s+|."
    path = tier.tokenizer.path.parent.parent / "custom-unsupported" / "tokenizer.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc))
    u = Tier(toktier.load(path))
    u.encode("abc def", session="u")
    r = u.append("u", " ghi")
    assert r.path == u.engine.name == full_route(u) == "reference" and "never repaired" in r.reason
    assert r.ids.tolist() == u.tokenizer.reference("abc def ghi")


def test_bad_input_leaves_state_unchanged():
    tier = Tier("cl100k")
    tier.encode(PROSE, session="s")
    before = [a.copy() for a in tier.session_records("s")]
    for call in (
        lambda: tier.append("s", b"bytes"),
        lambda: tier.append("s", "lone \ud800 surrogate"),
        lambda: tier.encode(PROSE + "\udfff", session="s"),
        lambda: tier.encode(PROSE[:100] + "\ud800" + PROSE[101:], session="s"),  # an edit
        lambda: tier.encode(PROSE[:100] + "é\ud800" + PROSE[100:], session="s"),
        lambda: tier.append(None, "x"),
        lambda: tier.append("", "x"),
    ):
        with pytest.raises((TypeError, InvalidTextError)):
            call()
    after = tier.session_records("s")
    assert all((a == b).all() for a, b in zip(before, after, strict=True))
    with pytest.raises(UnknownSessionError, match="no live state"):
        tier.append("never-seen", "x")
    # an edit checks only its changed middle (the rest equals the stored, checked text),
    # and reports the surrogate at its index in the whole text
    with pytest.raises(InvalidTextError, match="U\\+D800 at index 201"):
        tier.encode(PROSE[:200] + "é\ud800" + PROSE[200:], session="s")


@pytest.mark.parametrize("impl", ["compiled", "python"])
def test_engine_failure_leaves_state_unchanged(impl):
    tier = Tier("llama3", repair_impl=impl)
    tier.encode(PROSE, session="s")
    before = [a.copy() for a in tier.session_records("s")]

    class Boom:
        name = "boom"

        def encode(self, text):
            raise RuntimeError("engine died")

    def use(engine):
        tier.engine = engine
        if tier._planner is not None:  # the compiled path encodes windows outside then
            tier._planner.engine, tier._planner.ea = engine, None

    use(Boom())
    with pytest.raises(RuntimeError):
        tier.append("s", "more text")
    use(toktier.engine.ReferenceEngine(tier.tokenizer))
    assert all((a == b).all() for a, b in zip(before, tier.session_records("s"), strict=True))
    r = tier.append("s", "more text")
    assert r.ids.tolist() == tier.tokenizer.reference(PROSE + "more text")


def test_session_bound_to_its_tokenizer():
    store = toktier.SessionStore()
    a, b = Tier("llama3", store=store), Tier("cl100k", store=store)
    a.encode(PROSE, session="shared")
    with pytest.raises(
        SessionTokenizerMismatchError, match="never repaired with another tokenizer"
    ):
        b.append("shared", "x")
    with pytest.raises(SessionTokenizerMismatchError):
        b.encode(PROSE + "x", session="shared")


def test_close_and_eviction_are_misses_not_errors():
    tier = Tier("llama3", max_bytes=1)  # every new session evicts the previous one
    tier.encode(PROSE, session="a")
    tier.encode(PROSE, session="b")
    r = tier.encode(PROSE + "x", session="a")
    assert r.path == full_route(tier) and "miss" in r.reason
    assert r.ids.tolist() == tier.tokenizer.reference(PROSE + "x")
    assert tier.close("a") and not tier.close("a")
    assert tier.stats()["evicted"] >= 1


def test_unchanged_and_empty_append():
    tier = Tier("qwen3")
    tier.encode(PROSE, session="s")
    assert tier.encode(PROSE, session="s").reason == "unchanged text"
    assert tier.append("s", "").reason == "empty append"


def test_fallback_is_exact_and_reported():
    # 40 characters of one letter run: no stable pair to cut at, too few for a certified run
    tier = Tier("llama3", window=40, max_widenings=0)
    text = PROSE + "x" * 64
    tier.encode(text, session="s")
    r = tier.append("s", "1234567")
    assert r.path == full_route(tier) and r.reason.startswith("repair fallback")
    assert r.ids.tolist() == tier.tokenizer.reference(text + "1234567")
    assert tier.stats()["fallbacks"] == 1


def test_ids_are_read_only_snapshots():
    tier = Tier("llama3")
    tier.encode(PROSE, session="s")
    r1 = tier.append("s", " one")
    r2 = tier.append("s", " two")
    assert len(r1.ids) < len(r2.ids) and r1.ids.tolist() == tier.tokenizer.reference(PROSE + " one")
    assert not r1.ids.flags.writeable and not r2.new_ids.flags.writeable
    with pytest.raises(TypeError):
        Tier("llama3", copy_ids=False)  # the live-view footgun is gone


def test_concurrent_sessions_are_exact():
    tier = Tier("gpt-oss")
    texts = {f"s{i}": PROSE[: 500 + 37 * i] for i in range(6)}
    errors = []

    def worker(sid):
        text = texts[sid]
        tier.encode(text, session=sid)
        for k in range(15):
            delta = f" step {k} of {sid}\n"
            text += delta
            r = tier.append(sid, delta)
            if r.ids.tolist() != tier.tokenizer.reference(text):
                errors.append(sid)

    threads = [threading.Thread(target=worker, args=(s,)) for s in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and tier.stats()["hits"] == 6 * 15


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("", ""),
        ("abc", "abc"),
        ("abc", "abd"),
        ("x" * 70000 + "a", "x" * 70000 + "b"),
        ("ab", "abc"),
    ],
)
def test_common_prefix_and_suffix(a, b):
    p = common_prefix(a, b)
    assert a[:p] == b[:p] and (p == min(len(a), len(b)) or a[p] != b[p])
    s = common_suffix(a, b, min(len(a), len(b)) - p)
    assert a[len(a) - s :] == b[len(b) - s :]


@pytest.mark.parametrize("name", ["qwen3", "llama3"])
def test_construction_compiles_the_records_path_of_nfc_tokenizers(name, monkeypatch):
    """An NFC tokenizer's window that NFC changes is encoded outside the compiled call and
    matched by ``plan_records``: the Tier's warm-up takes that path, so no request pays
    its compile or cache load (24.6 ms measured in a first request before)."""
    from toktier.engine import splice

    called = []

    class Spy(splice._Bound):
        def __call__(self, *args):
            if self._dispatcher is splice.plan_records:
                called.append(args[0].size)
            return super().__call__(*args)

    monkeypatch.setattr(splice, "_Bound", Spy)
    tok = toktier.load(name)
    tier = Tier(tok, verify_rate=0)
    assert bool(called) is tok.engine.tables.nfc  # only NFC families have that path
    tier.shutdown()


@pytest.mark.parametrize("name", ["llama3", "qwen3", "mistral-sp-v3", "bert-uncased"])
def test_no_request_compiles_or_loads_code_after_construction(name, monkeypatch):
    """Compiling, or loading from the on-disk cache, happens when a Tier is built, never
    inside a request: a mix of requests on every engine kind (byte-level, NFC, SentencePiece,
    WordPiece) -- seeds, ASCII and non-ASCII appends, an NFC-changed window, a full-text
    continuation, an edit, appends that grow the arrays, long stateless texts on the
    parallel path and through the compiled UTF-8 pass -- types no compiled function anew
    (numba's ``_compile_for_args`` is where a call without a matching compiled version goes;
    two such loads were found inside requests: ~10 ms and 7.5 ms)."""
    from numba.core import dispatcher

    tier = Tier(name, verify_rate=0)
    typed = []
    real = dispatcher.Dispatcher._compile_for_args

    def spy(self, *args, **kws):
        typed.append(self.py_func.__qualname__)
        return real(self, *args, **kws)

    monkeypatch.setattr(dispatcher.Dispatcher, "_compile_for_args", spy)
    text = PROSE
    tier.encode(text, session="s")
    for delta in (" more text 123\n", " Ünïcödé wörds, Привет, мир! 日本語のテキスト。",
                  " cafe\u0301 ok", "x" * 5000, " café " * 3000):  # fmt: skip
        text += delta
        tier.append("s", delta)
    text += " and the front end resends it all"
    tier.encode(text, session="s")
    text = text[:500] + "EDITED" + text[520:]
    tier.encode(text, session="s")
    tier.encode("hello world " * 100)
    tier.encode("Привет, мир! " * 6000)  # > COMPILED_MIN_CHARS and MIN_PARALLEL_CHARS
    tier.encode("def f(x):\n    return x\n" * 4000, session="t")
    tier.append("t", " tail")
    assert typed == [], f"compiled or loaded inside a request: {typed}"
    assert tier.session_records("s")[0].tolist() == tier.tokenizer.reference(text)
    tier.shutdown()


@pytest.mark.parametrize("name", ["llama3", "mistral-sp-v3"])
def test_construction_types_the_growing_appends_compiled_write(name, monkeypatch):
    """An append that outgrows the session's arrays writes its splice in a compiled call of
    its own (``Planner._grow_and_apply``): the Tier's warm-up types it, so the first such
    request goes straight to the compiled code (its cache load cost ~10 ms inside a request
    before) -- every call finds the bound entry point and its types."""
    from toktier.engine import splice

    calls = []

    class Spy(splice._Bound):
        def __call__(self, *args):
            if self._dispatcher is splice.apply_if_free:
                calls.append(self._entry is not None and self.check(*args))
            return super().__call__(*args)

    monkeypatch.setattr(splice, "_Bound", Spy)
    tier = Tier(name, verify_rate=0, delta_aware=False)
    assert calls, "the warm-up did not call it"
    calls.clear()
    text = PROSE
    tier.encode(text, session="g")
    state = tier.store.get("g")
    n = state.n  # no headroom left: the next append's splice must grow the arrays
    state.ids, state.starts, state.ends = (a[:n].copy() for a in state.records())
    delta = " and a continuation that needs room.\n"
    assert tier.append("g", delta).ids.tolist() == tier.tokenizer.reference(text + delta)
    assert calls == [True]
    tier.shutdown()


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_non_ascii_deltas_reuse_their_bytes_and_stay_exact(name):
    """A non-ASCII delta's UTF-8 (from its check) is reused for the repair window, next to
    an ASCII or non-ASCII old part; appends and full-text continuations alike."""
    tier = Tier(name, verify_rate=0.0)
    tok = tier.tokenizer
    deltas = [" Ünïcödé wörds, ", "ascii after them ", " Привет, мир! ", "日本語のテキスト。",
              " done.\n", "Ελληνικά και हिन्दी ", "x"]  # fmt: skip
    for mode in ("append", "full"):
        text = PROSE
        tier.encode(text, session=mode)
        for d in deltas * 3:
            text += d
            r = tier.append(mode, d) if mode == "append" else tier.encode(text, session=mode)
            assert r.path == "repair"
            assert r.ids.tolist() == tok.reference(text)
    s = tier.stats()
    assert s["appends"] == s["hits"] == 2 * len(deltas) * 3
    assert s["requests"] == s["hits"] + s["misses"] and s["misses"] == 2
    assert s["first_window"] + s["widened"] + s["fallbacks"] + s["delta_full"] == s["appends"]
