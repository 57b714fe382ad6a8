"""Simple chat templates per tokenizer, with role markers made of that tokenizer's own added tokens.

Rendering a conversation gives one segment per message; the prompt of a call
is the concatenation of its first messages' segments.  Every segment of the
byte-level templates starts and ends with an added token, so added-token
extraction cuts the text at segment edges and token counts add up exactly
across messages (``tests/test_workload.py`` checks this).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .trajectories import Message

Template = Callable[[str, str], str]

TEMPLATES: dict[str, Template] = {
    "llama3": lambda role, content: (
        f"<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>"
    ),
    "qwen3": lambda role, content: f"<|im_start|>{role}\n{content}<|im_end|>\n",
    "qwen3.6": lambda role, content: f"<|im_start|>{role}\n{content}<|im_end|>\n",
    "gpt-oss": lambda role, content: f"<|start|>{role}<|message|>{content}<|end|>",
    "cl100k": lambda role, content: f"<|endofprompt|>{role}\n{content}<|endoftext|>",
    "deepseek-v4": lambda role, content: (
        {"user": "<｜User｜>", "assistant": "<｜Assistant｜>"}.get(role, "<｜begin▁of▁sentence｜>")
        + content
        + "<｜end▁of▁sentence｜>"
    ),
    "bert-uncased": lambda role, content: f"[CLS] {role}: {content} [SEP]",
}


def plain(role: str, content: str) -> str:
    """Fallback for tokenizers without a template here (user tokenizer.json files)."""
    return f"{role}: {content}\n\n"


def template_for(tokenizer_name: str) -> Template:
    return TEMPLATES.get(tokenizer_name, plain)


def render_segments(messages: Sequence[Message], tokenizer_name: str) -> list[str]:
    tpl = template_for(tokenizer_name)
    return [tpl(m.role, m.content) for m in messages]
