"""Search over topic records: BM25 index with an on-disk cache, trust filter, recall fence."""

from .api import SearchHit, recall_block, search
from .fence import fence, is_fenced

__all__ = ["SearchHit", "fence", "is_fenced", "recall_block", "search"]
