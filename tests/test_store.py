import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs

import toktier.store as store_module
from toktier.store import (
    _FROZEN_LEVEL,
    _MAX_OPEN_CHUNKS,
    TEXT_CHUNK_FROZEN,
    SessionState,
    SessionStore,
    _chunk_level,
    _mapped,
    seed_capacity,
)


def _state(name="s", n=10, text="abcdefghij"):
    st = SessionState(name, "sha")
    ids = np.arange(n, dtype=np.uint32)
    st.commit_full(ids, np.arange(n), np.arange(n) + 1, text)
    return st


def test_append_keeps_prefix_and_grows_amortized():
    st = _state()
    caps = set()
    text = "abcdefghij"
    for _ in range(2000):
        keep = st.n - 1  # replace the last record, like a splice
        st.commit_replace_tail(
            keep,
            np.array([7, 8], dtype=np.uint32),
            np.array([keep, keep + 1]),
            np.array([keep + 1, keep + 2]),
            "xy",
        )
        text += "xy"
        caps.add(len(st.ids))
    assert st.n == 10 + 2000
    assert st.ids[:9].tolist() == list(range(9))
    assert len(caps) <= 6  # doubling: few reallocations for thousands of appends
    assert st.text() == text and st.text_length == len(text)
    assert st.nbytes == st.ids.nbytes + st.starts.nbytes + st.ends.nbytes + st._text_nbytes


def test_text_chunks_stay_logarithmic_and_tail_is_exact():
    st = _state(text="")
    pieces = [f"<{i}>" * (i % 7 + 1) for i in range(3000)]
    for p in pieces:
        st.commit_replace_tail(st.n, np.zeros(0, np.uint32), np.zeros(0), np.zeros(0), p)
    full = "".join(pieces)
    assert len(st._chunks) <= 2 * np.log2(len(full)) + 2
    for n in (0, 1, 5, 100, 4000, len(full), len(full) + 10):
        assert st.tail(n) == full[-n:] if n else st.tail(n) == ""
    assert st.is_prefix_of(full + "more") and st.is_prefix_of(full)
    assert not st.is_prefix_of(full[:-1]) and not st.is_prefix_of("X" + full[1:])


def test_a_long_text_is_never_copied_whole_by_an_append():
    """Chunks of TEXT_CHUNK_FROZEN characters or more are never merged again: the seed's
    text stays the very same object through hundreds of appends (before the bound, one
    append in a while copied the whole context), the chunk count stays N / FROZEN plus a
    logarithmic tail, and the text, its tail and prefix checks stay exact."""
    seed = "x" * (3 * TEXT_CHUNK_FROZEN)
    st = _state(text=seed)
    full = seed
    for i in range(600):
        piece = f"<{i}>" * 300
        st.commit_replace_tail(st.n, np.zeros(0, np.uint32), np.zeros(0), np.zeros(0), piece)
        full += piece
        assert st._chunks[0] is seed
    assert len(st._chunks) <= len(full) // TEXT_CHUNK_FROZEN + _MAX_OPEN_CHUNKS
    assert all(len(a) >= TEXT_CHUNK_FROZEN for a in st._chunks[:-_MAX_OPEN_CHUNKS])
    for n in (1, 1000, TEXT_CHUNK_FROZEN + 5, len(full)):
        assert st.tail(n) == full[-n:]
    assert st.is_prefix_of(full + "z") and not st.is_prefix_of(full[:-1] + "?")
    assert st.text() == full


def _append_text(st, piece):
    st.commit_replace_tail(st.n, np.zeros(0, np.uint32), np.zeros(0), np.zeros(0), piece)


def _check_chunk_shape(chunks):
    """Chunks below TEXT_CHUNK_FROZEN only at the end, their levels non-increasing, fewer
    than four of a level (so at most _MAX_OPEN_CHUNKS of them)."""
    open_from = len(chunks)
    while open_from and len(chunks[open_from - 1]) < TEXT_CHUNK_FROZEN:
        open_from -= 1
    assert all(len(c) >= TEXT_CHUNK_FROZEN for c in chunks[:open_from])
    levels = [_chunk_level(len(c)) for c in chunks[open_from:]]
    assert levels == sorted(levels, reverse=True)
    assert all(levels.count(v) < 4 for v in levels)
    assert len(levels) <= _MAX_OPEN_CHUNKS


def test_chunk_levels_match_the_frozen_size():
    assert _chunk_level(TEXT_CHUNK_FROZEN) == _FROZEN_LEVEL
    assert _chunk_level(TEXT_CHUNK_FROZEN - 1) == _FROZEN_LEVEL - 1
    assert [_chunk_level(n) for n in (1, 3, 4, 15, 16, 1100)] == [0, 0, 1, 1, 2, 5]


@given(hs.lists(hs.one_of(hs.integers(1, 40), hs.integers(1, 5000),
                          hs.integers(TEXT_CHUNK_FROZEN - 10, TEXT_CHUNK_FROZEN + 10)),
                min_size=1, max_size=120),
       hs.integers(0, 3 * TEXT_CHUNK_FROZEN))  # fmt: skip
def test_chunks_hold_the_text_in_a_bounded_shape(sizes, seed_len):
    """Any sequence of append sizes (tiny, typical, around the frozen size) after any seed:
    the chunks join to the text, the tail and prefix checks are exact, and the shape holds."""
    seed = "s" * seed_len
    st = _state(text=seed)
    full = seed
    for i, n in enumerate(sizes):
        piece = chr(97 + i % 26) * n
        _append_text(st, piece)
        full += piece
        _check_chunk_shape(st._chunks)
    assert "".join(st._chunks) == full and st.text_length == len(full)
    assert st._text_nbytes == sum(__import__("sys").getsizeof(c) for c in st._chunks)
    assert st.nbytes == st.ids.nbytes + st.starts.nbytes + st.ends.nbytes + st._text_nbytes
    for n in (1, 400, 5000):
        assert st.tail(n) == full[-n:]
    assert st.is_prefix_of(full + "z") and not st.is_prefix_of(full[:-1] + "?")


def test_typical_appends_mostly_copy_no_text():
    """The workload's appends (1,100 characters after a 48K seed): three in four copy no
    text, and the rest copy about two characters per appended one (the old rule, merge
    two while the last is half the previous, copied on most appends, ~7 per character)."""
    st = _state(text="x" * 48_000)
    copied, quiet = 0, 0
    for i in range(400):
        piece = chr(97 + i % 26) * 1100
        before = {id(c) for c in st._chunks}
        _append_text(st, piece)
        fresh = sum(len(c) for c in st._chunks if id(c) not in before and c is not piece)
        copied += fresh
        quiet += fresh == 0
    assert quiet >= 0.7 * 400
    assert copied <= 3 * 400 * 1100


def test_edit_shifts_the_right_records():
    st = _state()
    st.commit_edit(3, np.array([99], np.uint32), np.array([3]), np.array([6]), 5, 1, "abcXYZfghij")
    assert st.ids[: st.n].tolist() == [0, 1, 2, 99, 5, 6, 7, 8, 9]
    assert st.starts[4 : st.n].tolist() == [6, 7, 8, 9, 10]
    assert st.text() == "abcXYZfghij"


def test_memory_accounting_is_about_twelve_bytes_per_token_plus_text():
    st = SessionState("s", "sha")
    n = 100_000
    st.commit_full(np.zeros(n, np.uint32), np.arange(n), np.arange(n) + 4, "x" * (4 * n))
    assert len(st.ids) == seed_capacity(n) and st.n == n
    per_token = st.nbytes / n
    # uint32 id + int32 start/end (12 B), the seed's room for appends (1/16 of it, plus
    # 256 records), ~4 ASCII chars of text
    room = 12 * (seed_capacity(n) - n) / n
    assert 12 + 4 + room <= per_token < 12 + 4 + room + 1
    assert room < 12 / 15
    assert st.used_nbytes / n < 12 + 4 + 1


def test_seeded_session_appends_in_place_until_its_room_is_used():
    st = SessionState("s", "sha")
    n = 10_000
    st.commit_full(np.arange(n, dtype=np.uint32), np.arange(n), np.arange(n) + 1, "y" * n)
    arrays = (st.ids, st.starts, st.ends)
    room = seed_capacity(n) - n
    for k in range(room // 2):  # two records per append
        st.commit_replace_tail(st.n, np.array([1, 2], np.uint32), np.array([0, 1]),
                               np.array([1, 2]), "ab")  # fmt: skip
        assert all(a is b for a, b in zip(arrays, (st.ids, st.starts, st.ends), strict=True)), k
    st.commit_replace_tail(st.n, np.array([3, 4, 5], np.uint32), np.zeros(3), np.ones(3), "c")
    assert st.ids is not arrays[0] and len(st.ids) >= 2 * seed_capacity(n)  # then doubling
    assert st.ids[:n].tolist() == list(range(n)) and st.n == n + 2 * (room // 2) + 3


def test_ttl_expiry_is_a_miss():
    store = SessionStore(ttl_s=10)
    now = [0.0]
    store._clock = lambda: now[0]
    st = _state()
    st.last_use = 0.0
    store.put(st)
    now[0] = 5
    assert store.get("s") is st
    st.last_use = 5
    now[0] = 16
    assert store.get("s") is None and store.expired == 1 and len(store) == 0


def test_byte_cap_evicts_least_recently_used():
    a, b, c = _state("a"), _state("b"), _state("c")
    cap = a.nbytes * 2 + 10
    store = SessionStore(ttl_s=None, max_bytes=cap)
    store.put(a)
    store.put(b)
    assert store.get("a") is a  # a is now most recent
    store.put(c)
    assert store.get("b") is None and store.get("a") is a and store.get("c") is c
    assert store.evicted == 1 and store.stats().bytes <= cap


def test_close_frees_at_once():
    store = SessionStore()
    store.put(_state("a"))
    assert store.close("a") and not store.close("a")
    assert store.stats().bytes == 0 and store.closed == 1


def test_invalid_store_settings():
    with pytest.raises(ValueError):
        SessionStore(ttl_s=0)
    with pytest.raises(ValueError):
        SessionStore(max_bytes=-1)


def test_refresh_settles_bytes_and_falls_back_to_put():
    """``refresh`` after an in-place change: the byte total follows the session, a session
    closed meanwhile comes back (as ``put``), and growth past the cap still evicts."""
    st = _state("a")
    store = SessionStore(ttl_s=None, max_bytes=None)
    store.put(st)
    before = store.stats().bytes
    st.commit_replace_tail(st.n, np.zeros(0, np.uint32), np.zeros(0), np.zeros(0), "x" * 5000)
    store.refresh(st)
    assert store.stats().bytes == st.nbytes > before
    store.close("a")
    store.refresh(st)  # dropped in between: re-inserted, counted once
    assert store.get("a") is st and store.stats().bytes == st.nbytes
    b = _state("b")
    capped = SessionStore(ttl_s=None, max_bytes=b.nbytes + st.nbytes + 100)
    capped.put(b)
    capped.put(st)
    assert len(capped) == 2
    st.commit_replace_tail(st.n, np.zeros(0, np.uint32), np.zeros(0), np.zeros(0), "y" * 5000)
    capped.refresh(st)  # grew past the cap: the least recently used other session goes
    assert capped.get("b") is None and capped.get("a") is st
    assert capped.stats().bytes == st.nbytes and capped.stats().evicted == 1


def _append_records(st, k, first=0):
    """``k`` one-character records appended (ids first, first + 1, ...)."""
    ids = np.arange(first, first + k, dtype=np.uint32)
    at = st.text_length
    st.commit_replace_tail(st.n, ids, np.arange(at, at + k), np.arange(at, at + k) + 1, "z" * k)


def _grow_past_capacity(st, first):
    """Appends until the arrays grow; the IDs they added."""
    cap, added = len(st.ids), 0
    while len(st.ids) == cap:
        _append_records(st, 500, first + added)
        added += 500
    return added


def test_large_record_arrays_grow_by_remapping_not_copying(monkeypatch):
    monkeypatch.setattr(store_module, "REMAP_MIN_BYTES", 4096)
    st = SessionState("s", "sha")
    n = 5000
    st.commit_full(np.arange(n, dtype=np.uint32), np.arange(n), np.arange(n) + 1, "y" * n)
    maps = [_mapped(a) for a in (st.ids, st.starts, st.ends)]
    assert all(m is not None for m in maps)
    for _ in range(3):
        added = _grow_past_capacity(st, st.n)
        # the same maps, remapped: nothing copied, nothing but this state held them
        assert [_mapped(a) for a in (st.ids, st.starts, st.ends)] == maps
        assert len(st.ids) == len(st.starts) == len(st.ends) >= st.n
        # every entry of the grown arrays is writable and reads back (a shared anonymous
        # map would fault past its first size)
        st.ids[-1] = 7
        assert st.ids[-1] == 7 and added > 0
    assert st.ids[: st.n].tolist() == list(range(st.n))
    assert st.ends[: st.n].tolist() == list(range(1, st.n + 1))
    assert st.nbytes == st.ids.nbytes + st.starts.nbytes + st.ends.nbytes + st._text_nbytes


def test_a_held_view_or_result_makes_growth_copy_and_stays_exact(monkeypatch):
    monkeypatch.setattr(store_module, "REMAP_MIN_BYTES", 4096)
    st = SessionState("s", "sha")
    n = 5000
    st.commit_full(np.arange(n, dtype=np.uint32), np.arange(n), np.arange(n) + 1, "y" * n)
    snap = st.snapshot()  # a result's IDs: its view of the ids array
    starts_view = st.starts[100:200]  # a caller's view of the starts
    ends_map = _mapped(st.ends)
    old_ids, old_starts = st.ids, st.starts
    del old_ids, old_starts  # (only the snapshot and the view hold them now)
    _grow_past_capacity(st, n)
    assert _mapped(st.ends) is ends_map  # nothing else held it: remapped
    assert snap.materialize().tolist() == list(range(n))  # the result never changed
    assert starts_view.tolist() == list(range(100, 200))
    assert st.ids[: st.n].tolist() == list(range(st.n))
    assert st.starts[: st.n].tolist() == list(range(st.n))
    # the copies are maps of their own, which the next growth remaps
    del snap, starts_view
    maps = [_mapped(a) for a in (st.ids, st.starts, st.ends)]
    _grow_past_capacity(st, st.n)
    assert [_mapped(a) for a in (st.ids, st.starts, st.ends)] == maps
    assert st.ids[: st.n].tolist() == list(range(st.n))


def test_small_record_arrays_stay_numpy_buffers():
    st = _state()
    assert _mapped(st.ids) is None and _mapped(st.starts) is None
    assert len(st.ids) * st.ids.itemsize < store_module.REMAP_MIN_BYTES
