"""The numba CPU engine: split level and ID level equal to the reference, spans included."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toktier
from toktier.campaigns import corpus, engine_campaign
from toktier.engine import cpu, default_engine, jit
from toktier.engine.cpu import CpuEngine, engine_for
from toktier.engine.tables import EngineUnsupported, bytes_hash
from toktier.errors import InvalidTextError
from toktier.families.classes import NFC_UNSAFE

from .warmup_probe import compiled_after_warmup

BYTE_BPE = ["llama3", "deepseek-v4", "qwen3", "qwen3.6", "gpt-oss", "cl100k", "tekken"]


@pytest.fixture(scope="module", params=BYTE_BPE)
def engine(request):
    eng = engine_for(toktier.load(request.param))
    eng.warmup()
    return eng


def _assert_exact(eng, text, parallel=False):
    tok = eng.tokenizer
    ref = tok.hf.encode(text, add_special_tokens=False)
    ids, starts, ends = (
        eng.encode_parallel(text, threads=2, min_chars=0) if parallel else eng.encode(text)
    )
    assert ids.dtype == np.uint32 and starts.dtype == np.int64
    assert ids.tolist() == ref.ids
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == ref.offsets
    # the ids-only path (no span lifting) on the same text
    alone = eng.encode_ids(text, threads=2 if parallel else 1)
    assert alone.dtype == np.uint32 and alone.tolist() == ref.ids


def _assert_split(eng, text):
    ref = [b for _p, (_a, b) in eng.tokenizer.hf.pre_tokenizer.pre_tokenize_str(text)]
    assert eng.split(text)[1].tolist() == ref


def _fragments(tok):
    reps = engine_campaign.class_representatives(tok)
    lits = [t.content for t in tok.added_tokens[:8] if t.content]
    words = ["don't", "I'VE", "x'ſ", "CamelCase", "12345", "  ", "\r\n", "\n\n  ", "\t", "éé"]
    return st.sampled_from(reps + lits + words) | st.text(max_size=4)


@pytest.mark.parametrize("name", BYTE_BPE)
def test_adversarial_text_split_and_ids(name):
    tok = toktier.load(name)
    eng = engine_for(tok)

    @given(st.lists(_fragments(tok), max_size=24).map("".join))
    def prop(text):
        _assert_split(eng, text)
        _assert_exact(eng, text)

    prop()


def test_real_text_and_parallel_cuts(engine, trajectory_archive):
    docs = []
    for d in corpus.trajectory_documents(trajectory_archive):
        docs.append(d)
        if sum(map(len, docs)) > 150_000:
            break
    text = "".join(docs)
    _assert_split(engine, text[:20_000])
    _assert_exact(engine, text)
    _assert_exact(engine, text, parallel=True)
    # every cut the parallel encode may take is proven with the reference alone
    cuts = engine.certified_cuts(text[:3000])
    assert len(cuts) > 10
    enc = engine.tokenizer.hf.encode
    full = enc(text[:3000], add_special_tokens=False).ids
    for p in random.Random(0).sample(cuts.tolist(), 10):
        left = enc(text[:p], add_special_tokens=False).ids
        right = enc(text[p:3000], add_special_tokens=False).ids
        assert left + right == full


def test_a_text_beyond_the_workspace_budget_goes_in_parts(trajectory_archive):
    """``encode`` of a text larger than the workspace budget cuts it at certified cuts and
    encodes the parts one after another through the thread's workspace (as do the parts of
    ``encode_parallel``): the same IDs and spans as the reference, and parts were taken.
    NFC text (qwen3) included; a tiny budget makes many parts."""
    docs = []
    for d in corpus.trajectory_documents(trajectory_archive):
        docs.append(d)
        if sum(map(len, docs)) > 120_000:
            break
    text = "".join(docs) + "".join(corpus.pycountry_documents())[:40_000]
    for name in ("llama3", "qwen3", "gpt-oss"):
        eng = CpuEngine(toktier.load(name), workspace_bytes=1 << 14)
        calls = []
        inner = eng._encode_u8
        eng._encode_u8 = lambda u8, spans=True, text=None, inner=inner, calls=calls: (
            calls.append(u8.size) or inner(u8, spans, text)
        )
        _assert_exact(eng, text)
        assert len(calls) >= 8 and max(calls) <= 4 * (1 << 14), (name, len(calls), max(calls))
        calls.clear()
        _assert_exact(eng, text, parallel=True)
        assert len(calls) >= 8, name


def test_a_threads_workspace_is_made_once_at_the_budget():
    """The first request makes the thread's workspace at the full budget and larger requests
    within it reuse that same workspace (no re-allocation per new size); beyond the budget a
    one-call workspace serves and the thread's stays as it was.  IDs stay exact throughout."""
    budget = 1 << 14
    eng = CpuEngine(toktier.load("llama3"), workspace_bytes=budget)
    eng.encode("x = 1\n")
    wk = eng._local.workspace
    assert wk.cps.size == budget
    text = "".join(corpus.stdlib_documents())[:budget].encode()[: budget - 100].decode(
        "utf-8", "ignore"
    )
    _assert_exact(eng, text[:1000])
    _assert_exact(eng, text)
    assert eng._local.workspace is wk
    assert eng._workspace(budget + 1) is not wk and eng._local.workspace is wk


def test_parallel_parts_are_cut_where_both_sides_encode_alone(engine):
    """``encode_parallel`` finds its cuts from small windows (``_byte_cut_near``): dense added-
    token literals, literal prefixes, NFC-unsafe and multi-byte characters around every target
    still give the reference's IDs and spans, and each cut satisfies ref(left) + ref(right) ==
    ref(whole) by the reference alone."""
    tok = engine.tokenizer
    lits = [t.content for t in tok.added_tokens if t.content][:12]
    pieces = [*lits, *(x[: len(x) // 2] for x in lits), "x", " ", "  ", "\n", "1", "é", "e\u0301",
              "中文", "😀", "don't", "ab cd", "\t"]  # fmt: skip
    rng = random.Random(7)
    enc = tok.hf.encode
    for parts in (2, 3, 5):
        for _ in range(6):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(200, 1200)))
            ids, starts, ends = engine.encode_parallel(text, threads=parts, min_chars=0)
            ref = enc(text, add_special_tokens=False)
            assert ids.tolist() == ref.ids
            assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == ref.offsets
            u8 = np.frombuffer(text.encode(), np.uint8)
            byte_cuts = [len(u8[:c].tobytes().decode()) for c in engine._part_bounds(u8, parts)]
            char_cuts = cpu.char_part_bounds(text, parts, engine._cut_args())  # a str's parts
            for p in {*byte_cuts[1:-1], *char_cuts[1:-1]}:
                left = enc(text[:p], add_special_tokens=False).ids
                assert left + enc(text[p:], add_special_tokens=False).ids == ref.ids, (p, text)


def test_a_strs_cut_from_its_window_is_the_whole_texts_cut(engine):
    """``encode_parallel`` cuts a str that is not all ASCII by characters, each cut found
    from a window of the str encoded alone (``char_cut_near``), so no thread makes the whole
    text's UTF-8 first: at every target, that cut is the one ``_byte_cut_near`` finds on the
    whole text's bytes.  Targets at random and at both edges; code, multilingual prose and
    literal-dense text, with characters of 1-4 bytes around the windows' ends."""
    args = engine._cut_args()
    lits = [t.content for t in engine.tokenizer.added_tokens if t.content][:8]
    rng = random.Random(5)
    texts = [
        "".join(itertools.islice(corpus.stdlib_documents(), 20))[:30_000] + "é",
        "".join(itertools.islice(corpus.pycountry_documents(), 3))[:30_000],
        "".join(rng.choice([*lits, " x", "é", "e\u0301", "中文", "😀", "\n", "  "])
                for _ in range(5000)),
    ]  # fmt: skip
    found = 0
    for text in texts:
        u8 = np.frombuffer(text.encode(), np.uint8)
        starts = np.flatnonzero((u8 & 0xC0) != 0x80)  # the byte offset of every character
        targets = [1, 2, 3, len(text) - 1, *(rng.randrange(1, len(text)) for _ in range(120))]
        for c in targets:
            for search in (cpu.CUT_FIRST_SEARCH, 64):
                whole = cpu._byte_cut_near(u8, int(starts[c]), search, *args)
                got = cpu.char_cut_near(text, c, search, args)
                assert got == (-1 if whole < 0 else int(np.searchsorted(starts, whole))), (c, search)
                found += got >= 0
    assert found > 300


def test_a_lone_surrogate_in_a_later_part_is_refused_at_its_index(engine):
    """The parts of a str make their own UTF-8: a lone surrogate in any of them is refused
    with the whole text's first one, as the one-thread path refuses it."""
    unit = "naïve = f(x)  # café 中文\n"
    text = unit * (cpu.MIN_PARALLEL_CHARS // len(unit) + 10)
    mid = len(text) // 2 + 3  # inside the window two threads' cut is searched in
    for at in (50_000, mid):
        bad = text[:at] + "\udc80" + text[at : at + 900] + "\ud800" + text[at + 900 :]
        for threads in (2, 3):
            with pytest.raises(InvalidTextError, match=f"U\\+DC80 at index {at};"):
                engine.encode_parallel(bad, threads=threads)
    assert engine.encode_ids(text, threads=2).tolist() == engine.tokenizer.hf.encode(
        text, add_special_tokens=False).ids  # fmt: skip


def test_the_small_cut_window_finds_the_large_windows_first_cut(engine):
    """``part_bounds`` asks ``_byte_cut_near`` within CUT_FIRST_SEARCH bytes before CUT_SEARCH:
    whenever the small window has a cut, it is the large window's first cut (the rule reads
    only the characters around a position).  Targets at random on code, multilingual prose
    and literal-dense text; the windows' ends fall at every kind of position."""
    from toktier.engine import cpu

    args = engine._cut_args()
    lits = [t.content for t in engine.tokenizer.added_tokens if t.content][:8]
    rng = random.Random(11)
    texts = [
        "".join(itertools.islice(corpus.stdlib_documents(), 40))[:60_000],
        "".join(itertools.islice(corpus.pycountry_documents(), 3))[:60_000],
        "".join(rng.choice([*lits, " x", "é", "e\u0301", "中文", "\n", "  "]) for _ in range(8000)),
    ]
    found = 0
    for text in texts:
        u8 = np.frombuffer(text.encode(), np.uint8)
        for _ in range(150):
            b = rng.randrange(1, u8.size)
            small = cpu._byte_cut_near(u8, b, cpu.CUT_FIRST_SEARCH, *args, False)
            large = cpu._byte_cut_near(u8, b, cpu.CUT_SEARCH, *args, False)
            assert small in (-1, large), (b, small, large)
            found += small >= 0
    assert found > 300  # the small window nearly always has one (the point of asking it first)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        " " * 5000 + "x",  # one long piece: the heap BPE
        "a" * 3001,
        "\n" * 700 + "\t \t" * 300,
        "1234567890" * 50,
        "😀" * 400,
        "x\t 1",  # whitespace before a number: not a cut (the end-of-input lookahead)
        "it's 'S 'ſ'LL don'T",
    ],
)
def test_edge_shapes(engine, text):
    _assert_split(engine, text)
    _assert_exact(engine, text)
    _assert_exact(engine, text * 30, parallel=True)


def test_added_tokens_leftmost_longest(engine):
    tok = engine.tokenizer
    lits = [t.content for t in tok.added_tokens if t.content][:6]
    text = "".join(f"x{lit}{lit} y{lit[:-1]}z" for lit in lits) + lits[0]
    _assert_exact(engine, text)


def test_nfc_fallback_is_exact():
    tok = toktier.load("qwen3")
    eng = engine_for(tok)
    text = "Cafe\u0301 \u212b \u0958\t 𐄇 " * 20 + "plain ascii tail " * 50
    _assert_exact(eng, text)
    _assert_exact(eng, text * 20, parallel=True)


def test_deepseek_normalized_literals():
    tok = toktier.load("deepseek-v4")
    normed = [t.content for t in tok.added_tokens if t.normalized and t.content][:5]
    raw = [t.content for t in tok.added_tokens if not t.normalized and t.content][:5]
    assert normed and raw
    _assert_exact(engine_for(tok), " ".join(normed + raw + normed[::-1]) + normed[0] + raw[0])


def test_direct_priorities_order_as_ranks_or_refuse():
    from toktier.engine.tables import PRIO_GROUP_BITS, direct_priorities

    merged = np.array([5, 5, 7, 9, 9, 9, 12])
    prio = direct_priorities(merged)
    assert (np.diff(prio) > 0).all() and ((prio >> PRIO_GROUP_BITS) == merged).all()
    assert list(prio & ((1 << PRIO_GROUP_BITS) - 1)) == [0, 1, 0, 0, 1, 2, 0]
    assert direct_priorities(np.array([5, 4])) is None  # a merged id decreases with rank
    assert direct_priorities(np.full(1 << PRIO_GROUP_BITS, 3)) is not None  # 512 ways fit
    assert direct_priorities(np.full((1 << PRIO_GROUP_BITS) + 1, 3)) is None  # 513 do not
    assert direct_priorities(np.array([1 << 18])) is None  # id beyond the key's bits
    assert direct_priorities(np.array([], dtype=np.int64)) is None


def test_tables_reproduce_the_merges():
    tok = toktier.load("llama3")
    engine = engine_for(tok)
    t = engine.tables
    import json

    model = json.loads(tok.path.read_text())["model"]
    vocab = model["vocab"]
    from toktier.engine.cpu import RULES
    from toktier.engine.rules import NO_PAIR

    pairs = {}
    for r, m in enumerate(model["merges"]):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        pairs.setdefault((vocab[a], vocab[b]), (r, vocab[a + b]))
    # every merge is found (the pair filter has no false negatives), with its token, and
    # the codes order as the ranks do (direct priorities: tables.direct_priorities)
    assert engine.bpe.direct and t.direct_merged
    found = []
    for (a, b), (r, merged) in pairs.items():
        code = RULES.pair_code(engine.bpe, a, b)
        assert code < NO_PAIR and RULES.merged_token(engine.bpe, code) == merged
        assert engine.bpe.merged[r] == merged
        found.append((r, code))
    codes = np.array([c for _, c in sorted(found)])
    assert (np.diff(codes) > 0).all()
    # and pairs without a merge are not (some pass the filter and probe the table)
    rng = random.Random(1)
    ids = list(vocab.values())
    misses = [(rng.choice(ids), rng.choice(ids)) for _ in range(20000)]
    misses = [p for p in misses if p not in pairs]
    assert all(RULES.pair_code(engine.bpe, a, b) == NO_PAIR for a, b in misses)
    assert bytes_hash(b"abc") != bytes_hash(b"acb")


def test_unsupported_shapes_stay_on_the_reference(tmp_path):
    """WordPiece gets its own engine, not the byte-level one; a WordPiece file with an
    added token the engine does not implement (matched on the normalized text) stays on the
    reference."""
    import json

    bert = toktier.load("bert-uncased")
    assert default_engine(bert).name == "numba-cpu-wordpiece"
    with pytest.raises(EngineUnsupported):
        CpuEngine(bert)
    doc = bert.document()
    mask = next(t for t in doc["added_tokens"] if t["content"] == "[MASK]")
    mask["normalized"] = True
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc))
    odd = toktier.load(path)
    assert odd.family == "wordpiece"
    assert engine_for(odd) is None
    assert default_engine(odd).name == "reference"
    text = "Hello  [MASK] there"
    assert odd.encode(text).tolist() == odd.reference(text)


def test_tokenizer_encode_uses_the_engine():
    tok = toktier.load("gpt-oss")
    assert tok.engine is not None and tok.engine.name == "numba-cpu"
    text = "Tokenizers ship bugs; toktier ships certificates. " * 3000
    assert tok.encode(text).tolist() == tok.reference(text)


def test_bad_input(engine):
    for fn in (engine.encode, engine.encode_full, engine.encode_ids):
        with pytest.raises(InvalidTextError, match="lone surrogate"):
            fn("ok \ud800 no")
        with pytest.raises(TypeError):
            fn(b"bytes")


def test_compiled_code_cache_is_keyed_by_source(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    key = jit.source_key()
    assert jit.cache_dir() == tmp_path / f"engine-{key}"
    assert len(key) == 16


def _cache_text(seed: int) -> str:
    rng = random.Random(seed)
    words = ["the", " return", "    ", " " * 23, "=" * 37, " SlicedLowLevelWCS", "données",
             "漢字かな", "😀👍🏽", "12345", "\r\n", "é\u0301", "'ll", " Camel", "Case", "//"]  # fmt: skip
    return "".join(rng.choice(words) for _ in range(600))


@pytest.mark.parametrize("seed", [1, 2])
def test_piece_caches_never_change_output(engine, seed):
    """Fill the short and long piece caches, let collisions evict, corrupt rows: still exact.

    A cache hit needs the exact bytes of the piece and a valid check word over the row,
    so a row that was never written, was overwritten by another piece, or was corrupted
    is a miss and the merges run again.
    """
    text = _cache_text(seed)
    if engine.tables.nfc:
        text = engine.tokenizer.hf.normalizer.normalize_str(text)
    _assert_exact(engine, text)  # fills both caches
    cache, lcache = engine._cache()
    rng = np.random.default_rng(seed)
    for table in (cache, lcache):
        used = np.flatnonzero(table[:, 0])
        assert used.size, "the text should have filled some rows"
        hit = rng.choice(used, size=min(64, used.size), replace=False)
        cols = rng.integers(0, table.shape[1], size=hit.size)
        table[hit, cols] ^= rng.integers(1, 1 << 40, size=hit.size)  # flip bits anywhere
        table[hit[:8], 3:] = rng.integers(0, 1 << 17, size=(min(8, hit.size), table.shape[1] - 3))
    _assert_exact(engine, text)
    _assert_exact(engine, text[::-1])  # other pieces overwrite (evict) rows
    _assert_exact(engine, text)


def test_piece_cache_rows_are_seqlocks():
    """A row is used only when no write overlapped its read: a row a writer holds (odd
    count) is a miss and refuses a second writer; publishing moves the count by two, so a
    reader that read before it sees the change and discards what it read."""
    from toktier.engine import cpu
    from toktier.engine.rules import CACHE_COLS, SEQ_BIT, SEQ_SHIFT

    r = cpu.RULES
    cache = np.zeros((8, CACHE_COLS), np.int64)
    ids = np.array([1234, 56], np.int64)
    nbytes = np.ones(2000, np.int64)
    nbytes[1234], nbytes[56] = 3, 2
    lw, w0, w1 = 5, 0x6F6C6C6568, 0  # "hello"
    h = r.piece_hash(lw, w0, w1)
    r.cache_store(cache, h, lw, w0, w1, ids, 0, 2, nbytes)
    row, hdr = r.cache_find(cache, h, lw, w0, w1)
    assert row >= 0 and (hdr >> SEQ_SHIFT) == 2 and (hdr >> 24) & 0xF == 2
    assert r.row_unchanged(cache, row, hdr)
    taken = r.row_take(cache, row)  # a writer holds it now
    assert taken == hdr and cache[row, 0] & SEQ_BIT
    assert r.cache_find(cache, h, lw, w0, w1)[0] == -1  # held: a miss
    assert r.row_take(cache, row) == -1  # ... and no second writer
    assert not r.row_unchanged(cache, row, hdr)  # a read that overlapped it is discarded
    before = cache.copy()
    r.cache_store(cache, h, lw, w0, w1, ids, 0, 2, nbytes)  # its set is held: skipped
    assert np.array_equal(cache, before)
    r.row_publish(cache, row, taken, hdr & ((1 << SEQ_SHIFT) - 1))
    row2, hdr2 = r.cache_find(cache, h, lw, w0, w1)
    assert row2 == row and (hdr2 >> SEQ_SHIFT) == 4 and not r.row_unchanged(cache, row, hdr)


def test_long_piece_cache_sets_hold_two_pieces_most_recent_first():
    """Long pieces (17..128 bytes) go to 2-way sets: two pieces of one set are both found; a
    third moves the newer to way 1 and evicts the older; a held row skips the store and
    leaves the set exactly as it was; each hit's tokens are the ones stored."""
    from toktier.engine import cpu
    from toktier.engine.rules import CONTENT, LONG_COLS, LONG_LEN_WORDS, LONG_WORDS

    r = cpu.RULES
    lcache = np.zeros((2, LONG_COLS), np.int64)  # one set: every piece collides
    nbytes = np.full(4000, 9, np.int64)
    pieces = [f"piece number {k} of the long-piece cache".encode() for k in range(3)]
    words = {}
    for k, p in enumerate(pieces):
        u8 = np.frombuffer(p, np.uint8)
        w = np.zeros(LONG_WORDS, np.int64)
        words[k] = (u8.size, w, r.long_words(u8, 0, u8.size, w))

    def store(k):
        length, w, h = words[k]
        ids = np.array([1000 + k, 2000 + k, 3000 + k], np.int64)
        r.long_store(lcache, length, w, h, ids, 0, 3, nbytes)

    def found(k):
        length, w, h = words[k]
        row, hdr = r.long_lookup(lcache, length, w, h)
        if row < 0:
            return None
        assert r.row_unchanged(lcache, row, hdr) and (hdr >> 8) & 0xFF == 3
        return row, [int(lcache[row, 1 + LONG_WORDS + LONG_LEN_WORDS + q]) for q in range(3)]

    store(0)
    store(1)
    assert found(1) == (0, [1001, 2001, 3001]) and found(0) == (1, [1000, 2000, 3000])
    store(2)
    assert found(2) == (0, [1002, 2002, 3002]) and found(1) == (1, [1001, 2001, 3001])
    assert found(0) is None  # evicted: a miss, merged again next time
    taken = r.row_take(lcache, 1)  # another thread holds way 1
    before = lcache.copy()
    store(0)
    assert np.array_equal(lcache, before)  # skipped: a cache may forget, never mix
    r.row_publish(lcache, 1, taken, taken & CONTENT)
    assert found(1)[1] == [1001, 2001, 3001] and found(0) is None


def test_the_engine_finds_its_long_pieces_by_their_standalone_key(engine):
    """A long piece (17..128 bytes) the engine merged is stored under the key
    ``rules.long_words`` computes on its own from word loads, whether the engine read the
    piece by word loads (mid-text) or byte by byte (at the text's end, where a load would
    pass it), and the engine's lookup reads that row: a row rewritten with other ids and a
    valid check word is trusted (so never corrupt one that way), and clearing the caches
    brings the reference's ids back."""
    from toktier.engine import cpu
    from toktier.engine.rules import LONG_COLS, LONG_LEN_WORDS, LONG_WORDS

    r = cpu.RULES
    # one piece each for every pre-tokenizer: 30 ASCII bytes, and 46 bytes of two-byte
    # characters (high bytes: a word's top bits set)
    for word, text in itertools.product(
        (" antidisestablishmentarianisms", " достопримечательностями"), ("mid", "end")
    ):
        text = "x =" + word + (" + y" * 20 if text == "mid" else "")
        want = engine.encode_ids(text, threads=1).tolist()
        assert want == engine.tokenizer.hf.encode(text, add_special_tokens=False).ids
        data = word.encode()
        piece = np.frombuffer(data + bytes(16), np.uint8)  # padded: word loads
        w = np.zeros(LONG_WORDS, np.int64)
        h = r.long_words(piece, 0, len(data), w)
        _, lcache = engine._cache()
        row, hdr = r.long_lookup(lcache, len(data), w, h)
        assert row >= 0, f"the engine stored {word!r} under another key"
        count = (hdr >> 8) & 0xFF
        ids_at = 1 + LONG_WORDS + LONG_LEN_WORDS
        old = lcache[row, ids_at : ids_at + count].tolist()
        assert old == engine.tokenizer.hf.encode(word, add_special_tokens=False).ids
        lcache[row, ids_at : ids_at + count] = [7] * count
        lcache[row, LONG_COLS - 1] = r.check_at(lcache, row, LONG_COLS, lcache[row, 0])
        try:
            got = engine.encode_ids(text, threads=1).tolist()
            k = want.index(old[0])
            assert got == want[:k] + [7] * count + want[k + count :]
        finally:
            engine.clear_piece_caches()
        assert engine.encode_ids(text, threads=1).tolist() == want


def test_threads_share_one_cache_and_stay_exact():
    """Several Python threads encode (one and two threads per call) on one engine at once:
    every result equals the reference, and the caches stay one fixed budget."""
    import threading

    eng = engine_for(toktier.load("llama3"))
    eng.warmup()
    budget = eng.cache_bytes
    texts = [_cache_text(seed) for seed in range(3, 9)]
    refs = [eng.tokenizer.hf.encode(t, add_special_tokens=False).ids for t in texts]
    eng.clear_piece_caches()  # every thread meets new pieces: stores race lookups
    failures = []

    def client(k):
        for i in range(12):
            j = (k + i) % len(texts)
            if i % 3 == 2:
                ids = eng.encode_parallel(texts[j], threads=2, min_chars=0)[0]
            else:
                ids = eng.encode(texts[j])[0]
            if ids.tolist() != refs[j]:
                failures.append((k, i, j))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert eng.cache_bytes == budget


def test_run_chunks_keeps_order_spreads_work_and_raises_a_chunks_error():
    """Chunks come back in job order whichever thread took them; more than one thread takes
    them; an exception in any chunk reaches the caller after every thread has stopped."""
    import threading
    import time

    from toktier.engine import cpu

    pool = cpu.PartsPool("test-chunks")
    jobs = list(range(24))

    def slow(j):
        time.sleep(0.002)
        return j, threading.current_thread().name

    out = cpu.run_chunks(pool, jobs, 3, slow)
    assert [j for j, _ in out] == jobs
    assert len({name for _, name in out}) >= 2

    def bad(j):
        if j == 13:
            raise ValueError("chunk 13")
        return j

    with pytest.raises(ValueError, match="chunk 13"):
        cpu.run_chunks(pool, jobs, 3, bad)
    assert cpu.chunk_count(10_000, 2) == 2  # small: one chunk per thread
    assert cpu.chunk_count(1 << 22, 2) == 2 * cpu.CHUNKS_PER_THREAD


def test_big_tables_live_in_zeroed_aligned_memory_with_huge_page_advice():
    """Caches come zeroed and row-aligned; big copies (the short map, merge and vocabulary
    tables) keep their contents; where Linux offers transparent huge pages the memory
    is 2 MiB-aligned, elsewhere the helpers fall back to ordinary arrays."""
    from toktier.engine import cpu

    cache = cpu._aligned_zeros((cpu.CACHE_SLOTS, cpu.CACHE_COLS))
    assert cache.shape == (cpu.CACHE_SLOTS, cpu.CACHE_COLS) and not cache.any()
    assert cache.ctypes.data % 64 == 0
    table = np.arange(3 << 18, dtype=np.int64)
    copy = cpu._huge_copy(table)
    assert np.array_equal(copy, table) and copy.dtype == table.dtype
    assert cpu._huge_buffer(4096) is None  # below one huge page: ordinary memory
    buf = cpu._huge_buffer(3 << 20)
    if buf is not None:
        assert buf.size == 3 << 20 and buf.ctypes.data % (2 << 20) == 0 and not buf.any()


_ASCII_WORDS = ["don't", "I'VE", "we'll", "CamelCase", "12345", "0x1F", "__init__", "a.b(c)",
                "  ", "\r\n", "\n\n  ", "\t", " \n", "!!", "/", "\\", "'", "x"]


@pytest.mark.parametrize("name", BYTE_BPE)
def test_ascii_text_is_read_as_its_bytes_and_stays_exact(name):
    """An all-ASCII text skips the decode (``cpu._encode_text``'s ``ascii_direct``): every
    byte-level tokenizer here qualifies (an automaton that never hands ASCII to the matcher,
    or -- deepseek-v4 -- an ASCII pre-tokenizer that takes every range), and such texts --
    literals included -- still get the reference's IDs and spans."""
    tok = toktier.load(name)
    eng = engine_for(tok)
    assert eng._ascii_direct
    lits = [t.content for t in tok.added_tokens[:8] if t.content.isascii()]
    ascii_chars = st.text(st.characters(max_codepoint=127), max_size=6)

    @given(st.lists(st.sampled_from(_ASCII_WORDS + lits) | ascii_chars, max_size=24).map("".join))
    def prop(text):
        _assert_exact(eng, text)

    prop()


def test_ascii_offsets_are_written_once_and_survive_other_texts():
    """The ASCII path's character offsets (``Workspace.ident``) are written up to the
    longest ASCII text so far and by nothing else: texts of other scripts, shorter and
    longer ASCII texts in between all stay exact on one thread's workspace."""
    eng = engine_for(toktier.load("llama3"))
    wk = eng._workspace(1)
    texts = ["def f(x):\n    return x + 1\n" * 40, "héllo wörld, ça va? " * 30, "short",
             "日本語のテキスト and code: x = [1, 2]\n" * 20, "y = 'z'  # c\n" * 400, "ok"]  # fmt: skip
    seen = int(wk.ident_n[0])  # earlier tests may have used this engine's workspace
    for text in texts:
        _assert_exact(eng, text)
        if text.isascii():
            seen = max(seen, len(text) + 1)
        assert eng._workspace(1) is wk and wk.ident_n[0] == seen
    assert np.array_equal(wk.ident[:seen], np.arange(seen))


@given(st.lists(st.integers(0, 127), max_size=80),
       st.lists(st.tuples(st.integers(0, 79), st.integers(128, 255)), max_size=3),
       st.integers(0, 7), st.data())  # fmt: skip
def test_non_ascii_scans_equal_a_byte_by_byte_search(ascii_bytes, high_bytes, skip, data):
    """The word-at-a-time scans behind the ASCII path (``cpu._first_non_ascii``,
    ``_last_non_ascii``, ``_all_ascii``) find what a plain search finds, at any
    alignment of the bytes and of the range."""
    from toktier.engine import cpu

    raw = bytearray(ascii_bytes)
    for at, byte in high_bytes:
        if at < len(raw):
            raw[at] = byte
    u8 = np.frombuffer(bytes(skip) + bytes(raw), np.uint8)[skip:]
    w = cpu._words(u8)
    high = np.flatnonzero(u8 >= 0x80)
    s = data.draw(st.integers(0, u8.size))
    t = data.draw(st.integers(s, u8.size))
    after = high[high >= s]
    inside = high[(high >= s) & (high < t)]
    assert cpu._first_non_ascii(u8, w, s) == (after[0] if after.size else u8.size)
    assert cpu._last_non_ascii(u8, w, s, t) == (inside[-1] if inside.size else -1)
    assert cpu._all_ascii(u8) == (high.size == 0)


@pytest.mark.parametrize("name", ["llama3", "tekken", "deepseek-v4"])
def test_ascii_literal_words_walk_as_the_byte_scan(name):
    """``cpu._ascii_literal_scan`` (literals' first bytes found 8 at a time) takes the
    same literals as ``literal_scan`` on ASCII texts dense in first bytes, partial and
    whole literals, at every alignment of the text's start, over the whole text and over
    any range of it; and ``cpu.ascii_literals`` finds what ``_find_literals`` finds, its two
    passes for a tokenizer with normalized literals (deepseek-v4) included."""
    from toktier.engine import cpu

    tok = toktier.load(name)
    eng = engine_for(tok)
    lit = eng.tables.literals
    mode, b1, b2 = eng._ascii_literals
    assert mode == cpu.ASCII_LITERAL_WORDS and {chr(b1), chr(b2)} <= {"<", "["}
    assert eng._trie_args[-1] == (name == "deepseek-v4")  # normalized literals: two passes
    contents = [t.content for t in tok.added_tokens[:40] if t.content.isascii()]
    contents += [t.content for t in tok.added_tokens if not t.special and t.content.isascii()]
    pieces = contents + [c[: len(c) // 2] for c in contents] + ["<", "[", "<<", "[[", "|", "x", " "]

    @given(st.lists(st.sampled_from(pieces) | st.text(st.characters(max_codepoint=127),
                                                        max_size=9), max_size=30).map("".join),
           st.integers(0, 7), st.data())  # fmt: skip
    def prop(text, skip, data):
        u8 = np.frombuffer(bytes(skip) + text.encode(), np.uint8)[skip:]
        n = u8.size
        got = [np.zeros(n + 1, np.int64) for _ in range(3)]
        want = [np.zeros(n + 1, np.int64) for _ in range(3)]
        k = cpu.ascii_literals(u8, *eng._trie_args, *eng._ascii_literals, *got)
        m = cpu._find_literals(u8, n, *eng._trie_args, *want)
        assert k == m
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g[:k], w[:m])
        lo = data.draw(st.integers(0, n))
        hi = data.draw(st.integers(lo, n))
        k = cpu._ascii_literal_scan(u8, lo, hi, b1, b2, lit.first, lit.keys, lit.child, lit.term,
                                    *got, 0)  # fmt: skip
        m = cpu.literal_scan(u8, lo, hi, lit.first, lit.keys, lit.child, lit.term, *want, 0)
        assert k == m
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g[:k], w[:m])

    prop()


def test_ascii_literal_mode_by_the_literals_first_bytes():
    from toktier.engine import cpu

    first = np.zeros(0x110000, np.uint8)
    assert cpu.ascii_literal_mode(first) == (cpu.NO_ASCII_LITERAL, 0, 0)
    first[0x4E00] = 1  # a literal that begins with a CJK character: none in ASCII
    assert cpu.ascii_literal_mode(first) == (cpu.NO_ASCII_LITERAL, 0, 0)
    first[ord("<")] = 1
    assert cpu.ascii_literal_mode(first) == (cpu.ASCII_LITERAL_WORDS, ord("<"), ord("<"))
    first[ord("[")] = 1
    assert cpu.ascii_literal_mode(first) == (cpu.ASCII_LITERAL_WORDS, ord("<"), ord("["))
    first[ord("{")] = 1
    assert cpu.ascii_literal_mode(first)[0] == cpu.ASCII_LITERAL_SCAN


@pytest.mark.parametrize("mode", ["scan", "none"])
def test_ascii_path_with_other_literal_modes_stays_exact(mode):
    """The other two modes on a real engine: the byte scan finds what the word scan
    finds; "no ASCII literal" is exact on text that holds none."""
    from toktier.engine import cpu

    eng = CpuEngine(toktier.load("llama3"))
    text = "x = '<|begin_of_text|>' if a < b else [c]\n" * 50
    want = eng.encode(text)
    if mode == "scan":
        eng._ascii_literals = (cpu.ASCII_LITERAL_SCAN, 0, 0)
        got = eng.encode(text)
    else:
        eng._ascii_literals = (cpu.NO_ASCII_LITERAL, 0, 0)
        text = text.replace("<|", "<")
        want = eng.tokenizer.hf.encode(text, add_special_tokens=False).ids
        got = eng.encode(text)
        assert got[0].tolist() == want
        return
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)


_ISLANDS = ["é", "日本語", " — ", "\u0301", "👍🏽", "Ünïcödé wörds ", "\u200d", "<|x|>é"]


@pytest.mark.parametrize("name", ["llama3", "qwen3", "gpt-oss"])
def test_long_ascii_stretches_get_parts_of_their_own_and_stay_exact(name):
    """A text with long ASCII stretches between other characters is cut at certified
    cuts near the stretches' edges (``cpu._ascii_part_bounds``): each long stretch
    becomes all-ASCII parts, the islands between stay with the decoding path, and the
    IDs and spans equal the reference's (one thread and two)."""
    from toktier.engine import cpu

    eng = engine_for(toktier.load(name))
    code = "".join(corpus.stdlib_documents())
    code = "".join(ch for ch in code[:400_000] if ch.isascii())
    two = code[:30_000] + "é" + code[30_000:60_000]
    u8 = np.frombuffer(two.encode(), np.uint8)
    bounds = cpu._ascii_part_bounds(u8, cpu.ASCII_RUN_MIN, *eng._cut_args())
    assert len(bounds) == 4 and 29_000 < bounds[1] <= 30_000 < 30_002 <= bounds[2] < 31_000
    _assert_exact(eng, two)

    @given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 300_000),
                              st.sampled_from(_ISLANDS)), min_size=1, max_size=4))  # fmt: skip
    def prop(pieces):
        text = "".join(code[o : o + k * 9_000] + island for k, o, island in pieces)
        u8 = np.frombuffer(text.encode(), np.uint8)
        bounds = cpu._ascii_part_bounds(u8, cpu.ASCII_RUN_MIN, *eng._cut_args())
        assert bounds[0] == 0 and bounds[-1] == u8.size and (np.diff(bounds) > 0).all()
        ascii_parts = [u8[a:b] for a, b in itertools.pairwise(bounds.tolist()) if (u8[a:b] < 128).all()]
        longest = max((k * 9_000 for k, _o, _i in pieces), default=0)
        if longest >= cpu.ASCII_RUN_MIN + 2 * cpu.CUT_FIRST_SEARCH:
            assert max(map(len, ascii_parts)) >= longest - 2 * cpu.CUT_FIRST_SEARCH
        cuts = set(eng.certified_cuts(text).tolist())
        char_of = np.cumsum((u8 & 0xC0) != 0x80)  # byte offset -> characters before it, + 1
        for b in bounds[1:-1].tolist():
            assert int(char_of[b - 1]) in cuts
        _assert_exact(eng, text)
        _assert_exact(eng, text, parallel=True)

    prop()


def test_ascii_path_only_where_no_ascii_character_reaches_the_matcher():
    """``ascii_reads_bytes`` asks the automaton: a table in which some state defers an
    ASCII class to the family's matcher (which reads the class bits the ASCII path
    does not compute), or no automaton at all, keeps the decoding path."""
    from toktier.engine import cpu, pretok_dfa

    bt = engine_for(toktier.load("llama3")).bpe
    assert cpu.ascii_reads_bytes(bt)
    assert not cpu.ascii_reads_bytes(bt._replace(pre_table=np.zeros(1, np.int32)))
    table = bt.pre_table.copy()
    table[int(bt.pre_classes[ord("a")])] |= pretok_dfa.DEFER  # state 0's row, letter column
    assert not cpu.ascii_reads_bytes(bt._replace(pre_table=table))


def test_short_map_is_a_memo_of_the_merges(engine):
    """Every short-piece map entry is a vocabulary token whose own bytes encode to it alone."""
    sm = engine.short_map
    rows = sm[sm[:, 0] != 0]
    t = engine.tables
    sample = rows[np.random.default_rng(0).choice(len(rows), size=300, replace=False)]
    for tid in sample[:, 3].tolist():
        raw = t.pool[t.pool_off[tid] : t.pool_off[tid + 1]].tobytes()
        assert 2 <= len(raw) <= 16
        text = raw.decode("utf-8", errors="ignore")
        if text.encode() == raw and (
            not engine.tables.nfc or engine.tokenizer.hf.normalizer.normalize_str(text) == text
        ):
            starts, _ = engine.split(text)
            if len(starts) == 1:  # a whole piece of the pre-tokenizer: the reference emits it alone
                assert engine.tokenizer.reference(text) == [tid]


def test_parallel_encode_works_in_a_forked_child():
    """A child forked after the parent's parallel encode inherits its thread pool object but
    not the threads; the engine makes a new pool there instead of waiting forever."""
    import multiprocessing as mp

    eng = engine_for(toktier.load("llama3"))
    text = "def f(x):\n    return x + 1\n" * 4000
    expected = eng.encode_parallel(text, threads=2, min_chars=0)[0].tolist()
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(_encode_parallel_in_child, (text,)).get(timeout=120)
    assert got == expected


def _encode_parallel_in_child(text):
    eng = engine_for(toktier.load("llama3"))
    return eng.encode_parallel(text, threads=2, min_chars=0)[0].tolist()


# The NFC check of the segmented path: one reference call for all stretches must
# say exactly what one call per stretch says (combining marks, Hangul jamo,
# singletons, private-use characters in the text, and every one of them).
_NFC_ALPHABET = st.sampled_from(
    [*"aeoAO ", "\u0301", "\u0323", "\u0308", "\u1100", "\u1161", "\u11a8", "\u212b",
     "\u2126", "\u00e9", "\ue000", "\ue001", "\u0f73", "\u1e0a"]
)  # fmt: skip


@given(st.lists(st.text(_NFC_ALPHABET, max_size=8), min_size=0, max_size=12), st.booleans())
def test_nfc_changes_in_one_call_equals_one_call_per_stretch(stretches, every_pua):
    from toktier.engine.cpu import nfc_changes

    normalize = toktier.load("qwen3").hf.normalizer.normalize_str
    if every_pua:  # no separator left: the per-stretch fallback
        stretches = [*stretches, "".join(map(chr, range(0xE000, 0xF900)))]
    text, cps, ra, rb = _stretch_text(stretches)
    got = nfc_changes(normalize, cps, ra, rb)
    assert got.tolist() == [normalize(text[a:b]) != text[a:b]
                            for a, b in zip(ra.tolist(), rb.tolist(), strict=True)]  # fmt: skip


def _stretch_text(stretches):
    """(text, its code points, starts, ends): each stretch after an "x"."""
    text, ra, rb = "", [], []
    for s in stretches:
        text += "x"
        ra.append(len(text))
        text += s
        rb.append(len(text))
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    return text, cps, np.array(ra, dtype=np.int64), np.array(rb, dtype=np.int64)


@given(st.lists(st.text(_NFC_ALPHABET, max_size=4), max_size=30))
def test_distinct_stretches_name_each_content_once(stretches):
    """``nfc_changes`` normalizes each distinct stretch once: every stretch maps to a first
    occurrence with exactly its content, and the first occurrences' contents all differ."""
    from toktier.engine.cpu import _distinct_stretches

    _text, cps, ra, rb = _stretch_text(stretches)
    first, which = _distinct_stretches(cps, ra, rb)
    assert [stretches[first[w]] for w in which.tolist()] == stretches
    assert len({stretches[f] for f in first.tolist()}) == first.size == len(set(stretches))


def test_changed_stretches_walk_both_texts_and_refuse_a_different_count():
    """The compiled walk behind ``nfc_changes``: stretch k of the normalized join against
    stretch k of the original (equal length and code points, or changed); a normalized join
    with more or fewer stretches is refused (None), never misaligned."""
    from toktier.engine.cpu import _changed_stretches

    def u32(text):
        return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)

    sep = 0xE000
    joined = u32("ab\ue000c\ue000\ue000de")  # stretches "ab", "c", "", "de"
    assert _changed_stretches(joined, u32("ab\ue000c\ue000\ue000de"), sep, 4).tolist() == [
        False, False, False, False]  # fmt: skip
    assert _changed_stretches(joined, u32("ab\ue000x\ue000\ue000d"), sep, 4).tolist() == [
        False, True, False, True]  # fmt: skip
    assert _changed_stretches(joined, u32("ab\ue000c\ue000de"), sep, 4) is None
    assert _changed_stretches(joined, u32("ab\ue000c\ue000\ue000de\ue000"), sep, 4) is None


@given(st.text(_NFC_ALPHABET, max_size=40))
def test_nfc_stretches_cover_every_unsafe_character_and_normalize_on_their_own(text):
    """The segmented path's premise: NFC of the text is the join of NFC of the pieces the
    stretches cut it into, and the text between stretches is left alone (the reference
    decides; the stretches come from the engine's flags)."""
    from toktier.engine.cpu import _nfc_stretches

    tok = toktier.load("qwen3")
    normalize = tok.hf.normalizer.normalize_str
    eng = engine_for(tok)
    u8 = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    p = eng.prepare(u8)
    ra, rb = _nfc_stretches(p.n, p.fl)
    unsafe = [i for i in range(p.n) if p.fl[i] & NFC_UNSAFE]
    assert all(any(a <= i < b for a, b in zip(ra, rb, strict=True)) for i in unsafe)
    assert all(b <= a for b, a in zip(rb[:-1], ra[1:], strict=True))  # ordered, disjoint
    cuts = sorted({0, len(text), *ra.tolist(), *rb.tolist()})
    pieces = [text[a:b] for a, b in itertools.pairwise(cuts)]
    assert "".join(normalize(x) for x in pieces) == normalize(text)
    inside = set(zip(ra.tolist(), rb.tolist(), strict=True))
    for a, b in itertools.pairwise(cuts):
        if (a, b) not in inside:
            assert normalize(text[a:b]) == text[a:b]


@pytest.mark.parametrize("name", ["qwen3", "qwen3.6"])
def test_nfc_stable_text_with_combining_marks_skips_the_segmented_path(name, monkeypatch):
    """Text full of NFC-unsafe characters that NFC leaves alone (Indic vowel signs and
    viramas) is encoded by the engine after one normalizer call, on one thread and on
    two; text that NFC changes (a decomposed é) still takes the reference stretches."""
    tok = toktier.load(name)
    eng = CpuEngine(tok)
    stable = "हिन्दी में क्षमा, বাংলা ভাষা ও தமிழ் மொழி; def f(x): return x\n" * 400
    changing = stable[:5000] + "cafe\u0301 " + stable[5000:]
    segmented = []
    original = CpuEngine._encode_segmented

    def spy(self, text, u8, threads, **kw):
        segmented.append(len(text))
        return original(self, text, u8, threads, **kw)

    monkeypatch.setattr(CpuEngine, "_encode_segmented", spy)
    for text, takes_segmented in ((stable, False), (changing, True)):
        want = tok.reference(text)
        segmented.clear()
        assert eng.encode(text)[0].tolist() == want
        assert eng.encode_parallel(text, threads=2, min_chars=0)[0].tolist() == want
        assert bool(segmented) is takes_segmented


@pytest.mark.parametrize("name", ["qwen3", "qwen3.6"])
def test_only_the_chunk_nfc_changes_takes_the_segmented_path(name, monkeypatch):
    """A text NFC changes in one place: on two threads and through a small workspace's
    parts, only the chunk or part holding the change takes the segmented path (before,
    the whole text went there, serially), each with the stretches its own check computed;
    IDs and spans equal the reference's."""
    tok = toktier.load(name)
    code = "".join(corpus.stdlib_documents())[:60_000]
    text = code[:41_000] + " cafe\u0301 \u1100\u1161\u11a8 " + code[41_000:]
    assert tok.hf.normalizer.normalize_str(text) != text
    seen = []
    original = CpuEngine._encode_segmented

    def spy(self, text, u8, threads, stretches=None, **kw):
        seen.append((len(text), stretches is not None))
        return original(self, text, u8, threads, stretches=stretches, **kw)

    monkeypatch.setattr(CpuEngine, "_encode_segmented", spy)
    ref = tok.hf.encode(text, add_special_tokens=False)
    small = CpuEngine(tok, workspace_bytes=1 << 14)  # one thread, many parts
    for encode in (lambda: CpuEngine(tok).encode_parallel(text, threads=2, min_chars=0),
                   lambda: small.encode(text)):  # fmt: skip
        seen.clear()
        ids, starts, ends = encode()
        assert ids.tolist() == ref.ids
        assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == ref.offsets
        assert seen and all(with_stretches for _n, with_stretches in seen), seen
        assert max(n for n, _ in seen) < len(text) // 2, seen  # a chunk or part, never it all


_SPAN_ALPHABET = st.sampled_from(
    [*"aeoAO  \n", "\u0301", "\u0308", "\u00e9", "\u1100", "\u1161", "\u0995", "\u09cd",
     "\u09bf", "<|endoftext|>", "<|im_start|>", "'s", "123", "\U0001f600"]
)  # fmt: skip


def _span_text(min_size=0, max_size=4):
    return st.lists(_SPAN_ALPHABET, min_size=min_size, max_size=max_size).map("".join)


_SPAN_MEMO: dict = {}


@given(st.lists(_span_text(1, 10), min_size=0, max_size=10), st.data())
def test_reference_spans_in_one_call_equal_one_call_per_span(parts, data):
    """The segmented path sends all its reference spans in one call, joined by a special
    token: every span's (ids, starts, ends) must be what its own call gives, for any
    text between them (literals, NFC-changing marks, the separator's own text)."""
    from toktier.engine import cpu

    tok = toktier.load("qwen3")
    sep = cpu.span_separator(tok)
    assert sep == ("<|endoftext|>", 151643)
    text, spans = "", []
    for part in parts:
        text += data.draw(_span_text())
        spans.append((len(text), len(text) + len(part)))
        text += part
    text += data.draw(_span_text())
    ra = np.array([a for a, _ in spans], dtype=np.int64)
    rb = np.array([b for _, b in spans], dtype=np.int64)
    joined = cpu.reference_spans(tok.hf, text, ra, rb, sep)
    alone = cpu.reference_spans(tok.hf, text, ra, rb, None)
    assert [x.tolist() for x in joined] == [x.tolist() for x in alone]
    # through the memo, filled by every earlier example (spans recur across examples)
    remembered = cpu.reference_spans(tok.hf, text, ra, rb, sep, _SPAN_MEMO)
    assert [x.tolist() for x in remembered] == [x.tolist() for x in alone]
    ids, starts, ends, counts = alone
    assert counts.size == len(spans) and counts.sum() == ids.size == starts.size == ends.size
    at = np.concatenate(([0], np.cumsum(counts)))
    for k, (a, b) in enumerate(spans):
        enc = tok.hf.encode(text[a:b], add_special_tokens=False)
        assert ids[at[k] : at[k + 1]].tolist() == enc.ids
        assert [(s - a, e - a) for s, e in zip(starts[at[k] : at[k + 1]].tolist(),
                                               ends[at[k] : at[k + 1]].tolist(), strict=True)] \
            == enc.offsets  # fmt: skip


@given(st.lists(_span_text(0, 6), min_size=1, max_size=12), st.sampled_from([1, 2]))
def test_segmented_path_with_handed_stretches_is_exact(parts, threads):
    """The segmented path (gaps to the engine, NFC-changed stretches to the reference, one
    interleave) gives the reference's IDs and offsets, whether it finds the stretches itself
    or is handed a caller's ``nfc_stretch_changes`` of the same text, on one thread or two."""
    from toktier.engine import cpu
    from toktier.textcheck import utf8_array

    tok = toktier.load("qwen3")
    eng = tok.engine
    text = " ".join(parts)
    enc = tok.hf.encode(text, add_special_tokens=False)
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    handed = cpu.nfc_stretch_changes(tok.hf.normalizer.normalize_str, cps,
                                     eng.tables.bits[cps])  # fmt: skip
    for stretches in (None, handed):
        ids, starts, ends = eng._encode_segmented(text, utf8_array(text), threads,
                                                  stretches=stretches)  # fmt: skip
        assert ids.tolist() == enc.ids
        assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == enc.offsets
        # IDs alone (``encode_ids``): the ranges lift no spans, the interleave copies none
        ids, starts, ends = eng._encode_segmented(text, utf8_array(text), threads,
                                                  stretches=stretches, spans=False)  # fmt: skip
        assert ids.tolist() == enc.ids and starts.size == ends.size == 0


def test_reference_memo_asks_only_for_spans_it_lacks(monkeypatch):
    """The memo sends the reference only the span texts it has not seen, keeps no span
    longer than REF_MEMO_MAX_CHARS, is cleared when full, and its entries are read-only."""
    from toktier.engine import cpu

    tok = toktier.load("qwen3")
    sep = cpu.span_separator(tok)
    words = ["cafe\u0301", "x\u0308y", "cafe\u0301", "e\u0301" * 300]
    text, spans = "", []
    for w in words:
        text += "ab "
        spans.append((len(text), len(text) + len(w)))
        text += w
    ra, rb = np.array([a for a, _ in spans]), np.array([b for _, b in spans])
    alone = [x.tolist() for x in cpu.reference_spans(tok.hf, text, ra, rb, None)]
    asked, encode = [], tok.hf.encode

    class Spy:
        def encode(self, s, **kw):
            asked.append(s)
            return encode(s, **kw)

    memo: dict = {}
    got = cpu.reference_spans(Spy(), text, ra, rb, sep, memo)
    assert [x.tolist() for x in got] == alone and len(asked) == 1  # one joined call
    asked.clear()
    got = cpu.reference_spans(Spy(), text, ra, rb, sep, memo)
    assert [x.tolist() for x in got] == alone
    assert asked == [words[3]]  # the long span alone is asked again
    assert set(memo) == {"cafe\u0301", "x\u0308y"}
    assert all(not a.flags.writeable for e in memo.values() for a in e)
    monkeypatch.setattr(cpu, "REF_MEMO_ENTRIES", 2)
    cpu.reference_spans(tok.hf, "q\u0301 w\u0301", np.array([0, 3]), np.array([2, 5]), sep, memo)
    assert set(memo) == {"q\u0301", "w\u0301"}  # full: cleared, then the new ones


def test_reference_spans_check_the_joined_call_and_fall_back():
    """The joined result is used only where every separator came back alone at its place;
    a separator the reference merges with its neighbours (here a plain letter) sends every
    span to a call of its own, with the same results."""
    from toktier.engine import cpu

    tok = toktier.load("qwen3")
    text = "ab cafe\u0301 x\u0308y 12 b\u0301"
    ra, rb = np.array([3, 10, 18]), np.array([8, 14, 20])
    assert cpu._joined_spans(tok.hf, text, ra, rb, ("a", tok.hf.token_to_id("a"))) is None
    want = cpu.reference_spans(tok.hf, text, ra, rb, None)
    for sep in (None, ("a", tok.hf.token_to_id("a")), cpu.span_separator(tok)):
        got = cpu.reference_spans(tok.hf, text, ra, rb, sep)
        assert [x.tolist() for x in got] == [x.tolist() for x in want]
    assert cpu._joined_spans(tok.hf, text, ra, rb, cpu.span_separator(tok)) is not None
    assert cpu.span_separator(toktier.load("llama3")) is not None  # a family without NFC too


def test_byte_level_campaign_checks_parallel_and_budget_parts():
    r = engine_campaign.run_campaign(toktier.load("llama3"), 60_000, seed=4, codepoint_stride=4999,
                        triples=False, progress=False)  # fmt: skip
    assert r.id_inputs > 50 and r.parallel_inputs >= 1 and r.parts_inputs >= 1
    assert r.divergences == 0, r.examples
    assert r.to_dict()["divergences"] == 0 and "parts_divergences" in r.to_dict()


def test_nfc_changed_text_handed_over_with_its_stretches_on_all_threads():
    """The GPU engine's handoff: a text whose NFC changes, with the stretches the caller
    already computed, goes straight to the segmented path on every thread and still
    gets the reference's IDs and spans (gaps cut into chunks on both sides of each
    reference stretch)."""
    from toktier.engine.cpu import MIN_PARALLEL_CHARS, nfc_stretch_changes

    tok = toktier.load("qwen3")
    eng = engine_for(tok)
    unit = "Caf\u00e9 cafe\u0301 \u212b x = f(y)\n"
    text = unit * (MIN_PARALLEL_CHARS // len(unit) + 50)
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    stretches = nfc_stretch_changes(tok.hf.normalizer.normalize_str, cps, eng.tables.bits[cps])
    assert stretches[2].any()
    enc = tok.hf.encode(text, add_special_tokens=False)
    for threads in (1, 2):
        ids, s, e = eng.encode_nfc_changed(text, stretches, threads=threads)
        assert ids.tolist() == enc.ids
        assert list(zip(s.tolist(), e.tolist(), strict=True)) == [tuple(o) for o in enc.offsets]


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_warmup_leaves_no_compile_to_a_request(name):
    """After ``warmup()`` the paths of long requests are compiled: ASCII and non-ASCII text
    past the compiled UTF-8 pass's threshold, long ASCII stretches beside other
    characters, both kinds of parallel cuts, spans and IDs alone.  (Before, a fresh
    machine's first such request compiled for 0.5-2 s: the GPU bench's first CPU sample.)"""
    new = compiled_after_warmup(name)
    assert not new, f"compiled on a request after warmup ({name}): {new}"
