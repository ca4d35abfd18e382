"""Bounds shared by every layer (pure Python: the book-folder parser imports it too)."""

# Chapter and volume numbers are 1…NUMBER_MAX at every boundary (file names, front matter, book.yaml,
# import_txt headings, command arguments): far past any real novel, far below 64 bits, so no integer
# column overflows.
NUMBER_MAX = 10_000_000
