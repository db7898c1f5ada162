"""A scripted ``$EDITOR`` for ``memory edit``: adds one sentence to the first record."""

import sys

path = sys.argv[1]
with open(path, encoding="utf-8") as handle:
    text = handle.read()
text = text.replace("Dana runs a bike shop.", "Dana runs a bike shop in Utrecht.", 1)
with open(path, "w", encoding="utf-8") as handle:
    handle.write(text)
