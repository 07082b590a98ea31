"""The SQLite cache of the store (full-text tables, lexicon, labels), rebuilt from git."""
