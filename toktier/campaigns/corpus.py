"""Real text for differential campaigns: code, prose and many scripts, deterministic.

Sources (all real, none synthesized):
- ``stdlib``: the CPython standard library sources of the running interpreter (code);
- ``trajectories``: message texts of the mini-swe-agent trajectories (English, code,
  shell output, CRLF from issue texts), when the archive is available;
- ``pycountry``: every translation in pycountry's gettext catalogs (166 locales,
  many scripts and combining marks), when pycountry is installed.
"""

from __future__ import annotations

import random
import struct
import sysconfig
from collections.abc import Iterator
from pathlib import Path


def stdlib_documents() -> Iterator[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(root.glob("*.py")):
        try:
            yield path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue


def read_mo(data: bytes) -> list[tuple[str, str]]:
    """(msgid, msgstr) pairs of a GNU gettext .mo catalog."""
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic == 0x950412DE else ">"
    _rev, n, orig_off, trans_off = struct.unpack(endian + "4I", data[4:20])
    pairs = []
    for i in range(n):
        olen, ooff = struct.unpack(endian + "2I", data[orig_off + 8 * i : orig_off + 8 * i + 8])
        tlen, toff = struct.unpack(endian + "2I", data[trans_off + 8 * i : trans_off + 8 * i + 8])
        msgid = data[ooff : ooff + olen].decode("utf-8", "replace")
        msgstr = data[toff : toff + tlen].decode("utf-8", "replace")
        if msgid:
            pairs.append((msgid, msgstr))
    return pairs


def pycountry_documents() -> Iterator[str]:
    """One document per catalog: its translations, one per line."""
    try:
        import pycountry
    except ImportError:
        return
    root = Path(pycountry.__file__).parent / "locales"
    for mo in sorted(root.glob("*/LC_MESSAGES/*.mo")):
        lines = [msgstr for _msgid, msgstr in read_mo(mo.read_bytes()) if msgstr]
        if lines:
            yield "\n".join(lines) + "\n"


def trajectory_documents(archive: Path | None = None) -> Iterator[str]:
    from ..workload import archives, trajectories

    path = archive or archives.find_archive("mini-swe-agent")
    if path is None:
        return
    for traj in trajectories.iter_trajectories(path):
        for m in traj.messages:
            if m.content:
                yield m.content


SOURCES = {
    "stdlib": stdlib_documents,
    "trajectories": trajectory_documents,
    "pycountry": pycountry_documents,
}


def mixed_documents(
    n_chars: int,
    *,
    seed: int = 0,
    max_doc_chars: int = 50_000,
    sources: tuple[str, ...] = tuple(SOURCES),
) -> tuple[list[str], dict[str, int]]:
    """Documents drawn round-robin from the sources until ``n_chars`` characters.

    Each source contributes about an equal share; within a source, documents
    are taken in a seeded shuffled order and cut to ``max_doc_chars``.
    Returns the documents and the characters taken from each source.
    """
    rng = random.Random(seed)
    pools: dict[str, list[str]] = {}
    for name in sources:
        docs = [d[:max_doc_chars] for d in SOURCES[name]() if d]
        if docs:
            rng.shuffle(docs)
            pools[name] = docs
    if not pools:
        raise RuntimeError("no real-text source is available")
    taken = dict.fromkeys(pools, 0)
    cursor = dict.fromkeys(pools, 0)
    out: list[str] = []
    total = 0
    while total < n_chars:
        live = [n for n in pools if cursor[n] < len(pools[n])]
        if not live:
            break  # every source exhausted
        name = min(live, key=taken.__getitem__)  # the source with the smallest share so far
        doc = pools[name][cursor[name]]
        cursor[name] += 1
        out.append(doc)
        taken[name] += len(doc)
        total += len(doc)
    return out, taken
