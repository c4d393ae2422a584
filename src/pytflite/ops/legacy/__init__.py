"""TFLite's first-release text and lookup ops, still registered by LiteRT's BuiltinOpResolver.

HASHTABLE_LOOKUP            value rows found by int32 key (C's bsearch, as TFLite searches), plus hits
EMBEDDING_LOOKUP_SPARSE     weighted sums of embedding rows per cell of a sparse id tensor
LSH_PROJECTION              locality-sensitive hash bits of the input rows (FarmHash Fingerprint64)
SKIP_GRAM                   the skip-grams of a sentence, as strings

Modules: one per op; farmhash.py is the vectorised Fingerprint64 LSH_PROJECTION hashes with.
"""

from . import (  # noqa: F401  (importing them registers their kernels)
    embedding_lookup_sparse,
    hashtable_lookup,
    lsh_projection,
    skip_gram,
)
