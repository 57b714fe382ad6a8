"""One colour and marker per method, shared by every figure (a method looks the same everywhere)."""

from __future__ import annotations

# Okabe-Ito colour-blind-safe colours.
_BLUE, _SKY, _GREEN, _ORANGE, _VERMILLION, _PINK, _YELLOW, _GREY = (
    "#0072B2", "#56B4E9", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#F0E442", "#555555",
)  # fmt: skip

COLORS = {
    # toktier's request path
    "tier append": _BLUE,
    "tier over the engine": _BLUE,
    "toktier repair": _BLUE,
    "tier full text": _SKY,
    "toktier, delta-aware": _SKY,
    "tier append, no cut": "#000000",
    "tier append, Python plan": _GREEN,
    "tier over reference windows": _GREEN,
    # toktier's stateless engine
    "engine full encode": _ORANGE,
    "toktier CPU, 1 thread": _ORANGE,
    "toktier CPU, all cores": _YELLOW,
    # toktier's GPU engine (one hue, three deliveries; graph replay vs eager launches)
    "toktier GPU, arrays": "#332288",
    "toktier GPU, export": "#6A51A3",
    "toktier GPU, list": "#9E9AC8",
    "toktier GPU, graph replay": "#332288",
    "toktier GPU, eager": "#9E9AC8",
    "GPU full re-encode + span export": "#6A51A3",
    "toktier GPU, arrays, with short map": "#999933",
    "toktier GPU, arrays, without short map": "#999933",
    "toktier GPU, arrays, 16-bit upload": "#44AA99",
    "toktier GPU, arrays, UTF-8 upload": "#44AA99",
    # peers
    "fastokens full re-encode": _VERMILLION,
    "fastokens": _VERMILLION,
    "Gigatoken prewarmed": _PINK,
    "Gigatoken, empty cache": _PINK,
    "HF full re-encode": _GREY,
    "HF serial": _GREY,
    "tiktoken": _GREEN,
    "LoPT repro.": "#882255",
    # experiment 09's worker pools
    "toktier, 1 repair worker": _SKY,
    "toktier, 2 repair workers": _BLUE,
    "stateless fastokens, 2 workers": _VERMILLION,
    "stateless fastokens, 1 worker": "#F4A582",
    "stateless reference, 1 worker": "#999999",
    "stateless reference, 2 workers": _GREY,
}
MARKERS = {
    "tier": "o",
    "engine": "s",
    "toktier": "s",
    "fastokens": "^",
    "Gigatoken": "D",
    "HF": "v",
    "tiktoken": "P",
    "LoPT": "X",
}


def palette(methods) -> dict[str, str]:
    """method -> colour for these methods (unknown ones get grey)."""
    return {m: COLORS.get(m, _GREY) for m in methods}


def markers(methods) -> dict[str, str]:
    return {m: next((v for k, v in MARKERS.items() if m.startswith(k)), "x") for m in methods}
