"""Where a record belongs — what the writer and the organizer share.

:mod:`.classify` (which kind of statement: identity, preference, rule, project fact …, and so which
topic), :mod:`.similarity` (near-duplicates, the normalized text records are compared by) and
:mod:`.paths` (topic paths and slugs). The writer places a new record with them; the organizer
moves and merges existing ones with the same functions, so the two never disagree about where a
fact goes.
"""
